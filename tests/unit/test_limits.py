"""The size and count limits on what clients make the host keep: at each limit, one over.

Each rule is driven through `reject_reason` (the one place the host validates a client action),
with the limits passed in as the host passes them; the store's replay log is bounded in bytes.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

import pytest

from ahp_bridge.config import LimitSettings
from ahp_bridge.state.limits import Limits, size_of
from ahp_bridge.state.store import Store
from ahp_bridge.state.validate import reject_reason

ME = "client-me"
SMALL = Limits(
    max_title_bytes=20,
    max_action_bytes=2048,
    max_queued_messages=2,
    max_annotations=3,
    max_working_directories=2,
)


def user(text: str = "hi") -> dict[str, Any]:
    return {"text": text, "origin": {"kind": "user"}}


def chat(**extra: Any) -> dict[str, Any]:
    return {
        "resource": "ahp-chat:/c",
        "title": "c",
        "status": 1,
        "modifiedAt": "2026-01-01T00:00:00.000Z",
        "turns": [],
        **extra,
    }


def session(**extra: Any) -> dict[str, Any]:
    return {
        "provider": "fake",
        "title": "",
        "status": 1,
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [],
        **extra,
    }


def check(kind: str, state: dict[str, Any], action: dict[str, Any]) -> str | None:
    return reject_reason(kind, state, action, client_id=ME, limits=SMALL)


def sized(make: Any, target: int) -> dict[str, Any]:
    """`make(text)` with the text padded so the action's canonical JSON is `target` bytes."""
    base = size_of(make(""))
    action: dict[str, Any] = make("x" * (target - base))
    assert size_of(action) == target
    return action  # type: ignore[no-any-return]


def test_the_config_defaults_are_the_limits_defaults() -> None:
    assert LimitSettings().limits() == Limits()
    assert {f.name for f in fields(Limits)} == set(LimitSettings.model_fields)


@pytest.mark.parametrize(
    ("kind", "state", "make"),
    [
        ("chat", chat(), lambda t: {"type": "chat/draftChanged", "draft": user(t)}),
        (
            "chat",
            chat(),
            lambda t: {"type": "chat/turnStarted", "turnId": "t1", "message": user(t)},
        ),
        (
            "chat",
            chat(),
            lambda t: {
                "type": "chat/pendingMessageSet",
                "kind": "queued",
                "id": "q",
                "message": user(t),
            },
        ),
        (
            "annotations",
            {"annotations": []},
            lambda t: {
                "type": "annotations/set",
                "annotation": {
                    "id": "a",
                    "origin": {"session": "ahp-session:/s"},
                    "resource": "file:///x",
                    "resolved": False,
                    "entries": [{"id": "e", "body": t}],
                },
            },
        ),
    ],
)
def test_a_client_action_may_be_max_action_bytes_and_not_one_more(
    kind: str, state: dict[str, Any], make: Any
) -> None:
    assert check(kind, state, sized(make, SMALL.max_action_bytes)) is None
    reason = check(kind, state, sized(make, SMALL.max_action_bytes + 1))
    assert reason is not None and "limits.max_action_bytes" in reason
    assert "2,049 bytes" in reason


def test_the_size_limit_also_covers_a_turn_the_chat_already_knows() -> None:
    # A 1.0 retry of a known turn is a no-op, but it is still logged and sent to every peer.
    known = chat(turns=[{"id": "t1", "message": user(), "responseParts": [], "state": "complete"}])
    retry = sized(lambda t: {"type": "chat/turnStarted", "turnId": "t1", "message": user(t)}, 4096)
    assert reject_reason("chat", known, retry, client_id=ME) is None  # no limits: the no-op
    assert "limits.max_action_bytes" in (check("chat", known, retry) or "")


def test_a_title_may_be_max_title_bytes_of_utf8_and_not_one_more() -> None:
    at = {"type": "session/titleChanged", "title": "é" * 10}  # 20 bytes, 10 characters
    over = {"type": "session/titleChanged", "title": "é" * 10 + "x"}
    assert check("session", session(), at) is None
    reason = check("session", session(), over)
    assert reason is not None and "limits.max_title_bytes" in reason and "21 bytes" in reason


def queued(i: int) -> dict[str, Any]:
    return {"id": f"q{i}", "message": user(f"m{i}")}


def test_queued_messages_stop_at_max_queued_messages() -> None:
    action = {"type": "chat/pendingMessageSet", "kind": "queued", "id": "new", "message": user()}
    assert check("chat", chat(queuedMessages=[queued(1)]), action) is None  # the 2nd of 2
    full = chat(queuedMessages=[queued(1), queued(2)])
    reason = check("chat", full, action)
    assert reason is not None and "limits.max_queued_messages" in reason
    # replacing one that is queued, or steering, still works on a full queue
    assert check("chat", full, {**action, "id": "q2"}) is None
    running = {**full, "activeTurn": {"id": "t", "responseParts": []}}
    assert check("chat", running, {**action, "kind": "steering"}) is None


def annotation(i: int, entries: int = 0) -> dict[str, Any]:
    return {
        "id": f"a{i}",
        "origin": {"session": "ahp-session:/s"},
        "resource": "file:///x",
        "resolved": False,
        "entries": [{"id": f"e{i}.{j}", "body": "b"} for j in range(entries)],
    }


def test_annotations_and_their_entries_stop_at_max_annotations() -> None:
    two = {"annotations": [annotation(1, entries=1)]}  # an annotation and an entry: 2 of 3
    assert (
        check("annotations", two, {"type": "annotations/set", "annotation": annotation(2)}) is None
    )
    too_many = {"type": "annotations/set", "annotation": annotation(2, entries=1)}
    reason = check("annotations", two, too_many)
    assert reason is not None and "limits.max_annotations" in reason
    entry = {
        "type": "annotations/entrySet",
        "annotationId": "a1",
        "entry": {"id": "n", "body": "b"},
    }
    assert check("annotations", two, entry) is None
    full = {"annotations": [annotation(1, entries=2)]}
    assert "limits.max_annotations" in (check("annotations", full, entry) or "")
    # changing what is there is always fine
    assert check("annotations", full, {**entry, "entry": {"id": "e1.0", "body": "new"}}) is None
    assert (
        check("annotations", full, {"type": "annotations/set", "annotation": annotation(1)}) is None
    )


def test_working_directories_stop_at_max_working_directories() -> None:
    action = {"type": "session/workingDirectorySet", "directory": "file:///b"}
    assert check("session", session(workingDirectories=["file:///a"]), action) is None
    full = session(workingDirectories=["file:///a", "file:///c"])
    reason = check("session", full, action)
    assert reason is not None and "limits.max_working_directories" in reason
    assert check("session", full, {**action, "directory": "file:///a"}) is None


# ── the replay log's byte budget ──────────────────────────────────────────


def draft(text: str) -> dict[str, Any]:
    return {"type": "chat/draftChanged", "draft": user(text)}


def make_store(**kw: Any) -> Store:
    store = Store(**kw)
    store.create("ahp-chat:/c", "chat", chat())
    return store


def test_the_replay_log_holds_at_most_its_byte_budget() -> None:
    probe = make_store().apply("ahp-chat:/c", draft("x" * 1000))
    size = len(probe.frame.encode())
    store = make_store(log_bytes=3 * size)
    envs = [store.apply("ahp-chat:/c", draft("x" * 1000)) for _ in range(5)]
    assert store.log_length() == 3 and store.log_bytes == 3 * size
    assert store.replay(2, ["ahp-chat:/c"]) == envs[2:]  # the newest 3 are there
    assert store.replay(1, ["ahp-chat:/c"]) is None  # older: snapshots, as past the count
    assert store.state("ahp-chat:/c")["draft"]["text"] == "x" * 1000  # state keeps everything


def test_an_envelope_larger_than_the_whole_budget_is_not_kept() -> None:
    store = make_store(log_bytes=500)
    store.apply("ahp-chat:/c", draft("small"))
    store.apply("ahp-chat:/c", draft("x" * 1000))
    assert store.log_length() == 0 and store.log_bytes == 0
    assert store.replay(1, ["ahp-chat:/c"]) is None
    assert store.replay(2, ["ahp-chat:/c"]) == []  # nothing missed: nothing to replay
    store.apply("ahp-chat:/c", draft("small again"))
    assert [e.server_seq for e in store.replay(2, ["ahp-chat:/c"]) or []] == [3]


def test_the_byte_budget_counts_utf8_bytes() -> None:
    env = make_store().apply("ahp-chat:/c", draft("é" * 100))
    store = make_store(log_bytes=len(env.frame.encode()) - 1)
    store.apply("ahp-chat:/c", draft("é" * 100))
    assert store.log_length() == 0  # measured in bytes, not characters


def test_log_bytes_is_validated() -> None:
    with pytest.raises(ValueError):
        Store(log_bytes=0)


def test_a_client_drafts_only_user_messages() -> None:
    # Found by tests/e2e/test_fuzz.py: a 1.0 draft with origin "automation" reached 0.7 peers,
    # whose version has no such kind.
    automation = {
        "type": "chat/draftChanged",
        "draft": {"text": "x", "origin": {"kind": "automation"}},
    }
    assert reject_reason("chat", chat(), automation, client_id=ME) == (
        "clients may only draft user messages"
    )
    assert reject_reason("chat", chat(), {"type": "chat/draftChanged"}, client_id=ME) is None
    assert reject_reason("chat", chat(), draft("x"), client_id=ME) is None
