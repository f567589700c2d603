"""Store: sequencing, rejection echoes, the bounded replay log, snapshots and turn paging."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ahp_bridge.state.reducers import reduce
from ahp_bridge.state.store import Envelope, Store

NOW = "2026-03-01T12:00:00.000Z"
SESSION = "ahp-session:/s1"
CHAT = "ahp-chat:/c1"


def user(text: str) -> dict[str, Any]:
    return {"text": text, "origin": {"kind": "user"}}


def turn(i: int) -> dict[str, Any]:
    return {"id": f"t{i}", "message": user(f"m{i}"), "responseParts": [], "state": "complete"}


def chat_state(n: int) -> dict[str, Any]:
    return {
        "resource": CHAT,
        "title": "chat",
        "status": 1,
        "modifiedAt": "2026-01-01T00:00:00.000Z",
        "turns": [turn(i) for i in range(n)],
    }


def session_state() -> dict[str, Any]:
    return {
        "provider": "fake",
        "title": "s",
        "status": 1,
        "lifecycle": "creating",
        "activeClients": [],
        "chats": [],
    }


def title(t: str) -> dict[str, Any]:
    return {"type": "session/titleChanged", "title": t}


def make(n_turns: int = 0, **kw: Any) -> Store:
    store = Store(**kw)
    store.create(SESSION, "session", session_state())
    store.create(CHAT, "chat", chat_state(n_turns))
    return store


def ids(state: dict[str, Any]) -> list[str]:
    return [t["id"] for t in state["turns"]]


# ── channels ──────────────────────────────────────────────────────────────


def test_channel_registry() -> None:
    store = make()
    assert store.server_seq == 0
    assert store.has(CHAT) and store.kind(CHAT) == "chat" and store.kind(SESSION) == "session"
    assert store.kind("ahp-chat:/nope") is None and not store.has("ahp-chat:/nope")
    with pytest.raises(ValueError, match="already exists"):
        store.create(CHAT, "chat", chat_state(0))
    with pytest.raises(ValueError, match="unknown state kind"):
        store.create("x:/y", "bogus", {})
    with pytest.raises(ValueError, match="turns"):
        store.create("ahp-chat:/bad", "chat", {"resource": "x"})
    store.dispose(CHAT)
    assert not store.has(CHAT)
    with pytest.raises(KeyError, match="unknown channel"):
        store.state(CHAT)
    with pytest.raises(KeyError):
        store.dispose(CHAT)


# ── apply / rejection ─────────────────────────────────────────────────────


def test_apply_reduces_sequences_and_logs() -> None:
    store = make()
    origin = {"clientId": "c", "clientSeq": 1}
    first = store.apply(SESSION, title("one"), origin)
    second = store.apply(
        CHAT, {"type": "chat/turnStarted", "turnId": "x", "startedAt": NOW, "message": user("hi")}
    )
    assert (first.server_seq, second.server_seq, store.server_seq) == (1, 2, 2)
    assert first.origin == origin and second.origin is None
    assert store.state(SESSION)["title"] == "one"
    assert store.state(CHAT)["modifiedAt"] == NOW  # the injected clock reaches the reducer
    assert store.replay(0, [SESSION, CHAT]) == [first, second]


def test_apply_bad_input_changes_nothing() -> None:
    store = make()
    before = store.state(SESSION)
    with pytest.raises(KeyError, match="unknown channel"):
        store.apply("ahp-session:/missing", title("x"))
    with pytest.raises(ValueError, match="type"):
        store.apply(SESSION, {"title": "no type"})
    with pytest.raises(ValueError, match="type"):
        store.apply(SESSION, "session/titleChanged")  # type: ignore[arg-type]
    assert store.server_seq == 0 and store.state(SESSION) is before
    assert store.replay(0, [SESSION]) == []


def test_malformed_fields_raise_value_error_and_change_nothing() -> None:
    store = make()
    store.apply(
        CHAT, {"type": "chat/turnStarted", "turnId": "x", "startedAt": NOW, "message": user("hi")}
    )
    store.apply(
        CHAT,
        {
            "type": "chat/responsePart",
            "turnId": "x",
            "part": {"kind": "markdown", "id": "p", "content": ""},
        },
    )
    store.apply(
        CHAT, {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q", "message": user("q")}
    )
    before, seq = store.state(CHAT), store.server_seq
    with pytest.raises(ValueError, match="malformed chat/queuedMessagesReordered"):
        store.apply(CHAT, {"type": "chat/queuedMessagesReordered", "order": 5})
    with pytest.raises(ValueError, match="malformed chat/delta"):
        store.apply(CHAT, {"type": "chat/delta", "turnId": "x", "partId": "p", "content": 5})
    assert store.state(CHAT) is before and store.server_seq == seq
    assert store.replay(seq, [CHAT]) == []


def test_unknown_action_type_is_sequenced_but_changes_nothing() -> None:
    store = make()
    before = store.state(SESSION)
    env = store.apply(SESSION, {"type": "session/fromTheFuture"})
    assert env.server_seq == 1 and store.state(SESSION) is before


def test_rejection_is_an_unlogged_echo() -> None:
    store = make()
    store.apply(SESSION, title("kept"))
    origin = {"clientId": "c", "clientSeq": 7}
    env = store.rejection(SESSION, title("nope"), origin, "not allowed")
    assert env.server_seq == 1 and store.server_seq == 1
    assert store.state(SESSION)["title"] == "kept"
    assert env not in store.replay(0, [SESSION])  # type: ignore[operator]
    assert env.wire() == {
        "channel": SESSION,
        "action": title("nope"),
        "serverSeq": 1,
        "origin": origin,
        "rejectionReason": "not allowed",
    }


# ── envelope ──────────────────────────────────────────────────────────────


def test_envelope_wire_omits_absent_fields_and_frame_is_cached() -> None:
    env = Envelope(CHAT, 5, {"type": "chat/delta", "content": "é\n"})
    assert env.wire() == {
        "channel": CHAT,
        "action": {"type": "chat/delta", "content": "é\n"},
        "serverSeq": 5,
    }
    frame = env.frame
    assert json.loads(frame) == {"jsonrpc": "2.0", "method": "action", "params": env.wire()}
    assert env.frame is frame  # serialised once


def test_envelope_is_immutable() -> None:
    env = Envelope(CHAT, 1, {"type": "x"})
    with pytest.raises(AttributeError):
        env.server_seq = 2  # type: ignore[misc]


# ── replay ────────────────────────────────────────────────────────────────


def test_replay_filters_channels_in_order() -> None:
    store = make()
    envs = [
        store.apply(
            SESSION if i % 2 else CHAT,
            title(str(i)) if i % 2 else {"type": "chat/draftChanged", "draft": user(str(i))},
        )
        for i in range(6)
    ]
    assert store.replay(2, [SESSION]) == [e for e in envs[2:] if e.channel == SESSION]
    assert store.replay(2, [SESSION, CHAT]) == envs[2:]
    assert store.replay(6, [SESSION]) == []
    assert store.replay(3, []) == []


def test_replay_reports_when_the_bounded_log_no_longer_covers() -> None:
    store = make(log_limit=3)
    envs = [store.apply(SESSION, title(str(i))) for i in range(5)]  # seqs 1..5; log keeps 3..5
    assert store.replay(2, [SESSION]) == envs[2:]
    assert store.replay(1, [SESSION]) is None
    assert store.replay(0, [SESSION]) is None
    assert store.replay(99, [SESSION]) is None  # a client ahead of us must resnapshot
    empty = make()
    assert empty.replay(0, [SESSION]) == []
    assert empty.replay(1, [SESSION]) is None


def test_log_limit_is_validated() -> None:
    with pytest.raises(ValueError):
        Store(log_limit=0)


# ── snapshots and the turn window ─────────────────────────────────────────


def test_snapshot_shapes() -> None:
    store = make(n_turns=5)
    store.apply(SESSION, title("x"))
    snap = store.snapshot(SESSION, last_turns=2)  # ignored for non-chats
    assert snap == {"resource": SESSION, "state": store.state(SESSION), "fromSeq": 1}
    full = store.snapshot(CHAT)
    assert (
        ids(full["state"]) == [f"t{i}" for i in range(5)] and "turnsNextCursor" not in full["state"]
    )
    assert "turnsNextCursor" not in store.snapshot(CHAT, last_turns=5)["state"]
    with pytest.raises(ValueError):
        store.snapshot(CHAT, last_turns=-1)


def test_windowed_snapshot_keeps_full_history_in_the_store() -> None:
    store = make(n_turns=10)
    snap = store.snapshot(CHAT, last_turns=3)["state"]
    assert ids(snap) == ["t7", "t8", "t9"] and snap["turnsNextCursor"]
    assert len(store.state(CHAT)["turns"]) == 10 and "turnsNextCursor" not in store.state(CHAT)
    assert len(store.snapshot(CHAT)["state"]["turns"]) == 10  # no view: all retained turns


def test_paging_older_turns_through_turns_loaded() -> None:
    store = make(n_turns=10, turns_page_size=4)
    cursor = store.snapshot(CHAT, last_turns=3)["state"]["turnsNextCursor"]
    page = store.load_older_turns(CHAT, cursor)
    assert page["type"] == "chat/turnsLoaded"
    assert [t["id"] for t in page["turns"]] == ["t3", "t4", "t5", "t6"]  # oldest first
    before = store.state(CHAT)
    store.apply(CHAT, page)
    assert store.state(CHAT) is before  # the store already had them; no cursor stored
    assert ids(store.snapshot(CHAT, last_turns=3)["state"]) == [f"t{i}" for i in range(3, 10)]
    page2 = store.load_older_turns(CHAT, page["turnsNextCursor"])
    assert [t["id"] for t in page2["turns"]] == [
        "t0",
        "t1",
        "t2",
    ] and "turnsNextCursor" not in page2
    store.apply(CHAT, page2)
    assert "turnsNextCursor" not in store.snapshot(CHAT, last_turns=1)["state"]
    assert store.load_older_turns(CHAT, None) == {"type": "chat/turnsLoaded", "turns": []}


def test_unrecognised_cursors_raise() -> None:
    store = make(n_turns=10)
    cursor = store.snapshot(CHAT, last_turns=2)["state"]["turnsNextCursor"]
    for bad in ["", "garbage", "0~999", "7~3", "0~0", "0~-1"]:
        with pytest.raises(ValueError, match="unrecognised"):
            store.load_older_turns(CHAT, bad)
    store.apply(CHAT, {"type": "chat/truncated"})  # clears every turn: old cursors are void
    with pytest.raises(ValueError, match="unrecognised"):
        store.load_older_turns(CHAT, cursor)
    with pytest.raises(ValueError, match="not a chat"):
        store.load_older_turns(SESSION, None)


def test_cursor_of_a_disposed_chat_is_void_for_its_successor() -> None:
    store = make(n_turns=10)
    cursor = store.snapshot(CHAT, last_turns=2)["state"]["turnsNextCursor"]
    store.dispose(CHAT)
    store.create(CHAT, "chat", chat_state(10))
    store.snapshot(CHAT, last_turns=2)
    with pytest.raises(ValueError, match="unrecognised"):
        store.load_older_turns(CHAT, cursor)


def test_new_turns_extend_the_window_without_moving_its_boundary() -> None:
    store = make(n_turns=4)
    store.snapshot(CHAT, last_turns=2)
    store.apply(
        CHAT, {"type": "chat/turnStarted", "turnId": "n", "startedAt": NOW, "message": user("n")}
    )
    store.apply(CHAT, {"type": "chat/turnComplete", "turnId": "n", "duration": 1})
    assert ids(store.snapshot(CHAT, last_turns=2)["state"]) == ["t2", "t3", "n"]


class Mirror:
    """A client: a snapshot plus every broadcast envelope reduced on top."""

    def __init__(self, store: Store, last_turns: int | None) -> None:
        snap = store.snapshot(CHAT, last_turns=last_turns)
        self.state, self.seq = snap["state"], snap["fromSeq"]

    def catch_up(self, store: Store) -> None:
        for env in store.replay(self.seq, [CHAT]) or []:
            self.state = reduce("chat", self.state, env.action)
            self.seq = env.server_seq


def test_windowed_and_full_subscribers_stay_consistent_through_truncation() -> None:
    store = make(n_turns=12, turns_page_size=3)
    windowed, full = Mirror(store, 2), Mirror(store, None)
    # The host truncates to a turn older than the window: it must preload first.
    action = {"type": "chat/truncated", "turnId": "t5"}
    preload = store.preload_for(CHAT, action)
    assert preload is not None and [t["id"] for t in preload["turns"]] == [
        f"t{i}" for i in range(5, 10)
    ]
    store.apply(CHAT, preload)
    store.apply(CHAT, action)
    windowed.catch_up(store)
    full.catch_up(store)
    server = ids(store.state(CHAT))
    assert server == [f"t{i}" for i in range(6)]
    assert ids(windowed.state) == ["t5"]  # the window now starts at t5
    assert ids(full.state) == server
    # Paging the windowed client the rest of the way reproduces the server's list.
    while cursor := windowed.state.get("turnsNextCursor"):
        store.apply(CHAT, store.load_older_turns(CHAT, cursor))
        windowed.catch_up(store)
        full.catch_up(store)
    assert ids(windowed.state) == server and ids(full.state) == server


def test_preload_not_needed_inside_the_window() -> None:
    store = make(n_turns=6)
    store.snapshot(CHAT, last_turns=3)
    assert store.preload_for(CHAT, {"type": "chat/truncated", "turnId": "t4"}) is None
    assert store.preload_for(CHAT, {"type": "chat/truncated"}) is None
    assert store.preload_for(CHAT, {"type": "chat/delta"}) is None
    assert store.preload_for(SESSION, {"type": "chat/truncated", "turnId": "t0"}) is None


def test_turns_loaded_with_turns_the_store_lacked_prepends_and_voids_cursors() -> None:
    store = Store()
    state = chat_state(10)
    store.create(CHAT, "chat", {**state, "turns": state["turns"][5:]})
    cursor = store.snapshot(CHAT, last_turns=2)["state"]["turnsNextCursor"]
    store.apply(CHAT, {"type": "chat/turnsLoaded", "turns": state["turns"][3:5]})
    assert ids(store.state(CHAT)) == [f"t{i}" for i in range(3, 10)]
    assert "turnsNextCursor" not in store.state(CHAT)
    with pytest.raises(ValueError, match="unrecognised"):
        store.load_older_turns(CHAT, cursor)
    assert ids(store.snapshot(CHAT, last_turns=2)["state"]) == [f"t{i}" for i in range(3, 10)]
