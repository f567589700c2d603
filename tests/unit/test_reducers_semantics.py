"""Reducer properties the fixtures do not pin down: sharing, identity on no-op, clock use."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ahp_bridge.state.reducers import KINDS, reduce

NOW = "2026-01-01T00:00:00.000Z"
T0 = "2025-01-01T00:00:00.000Z"


def user(text: str) -> dict[str, Any]:
    return {"text": text, "origin": {"kind": "user"}}


def turn(i: int) -> dict[str, Any]:
    return {"id": f"t{i}", "message": user(f"m{i}"), "responseParts": [], "state": "complete"}


def chat(**extra: Any) -> dict[str, Any]:
    base = {
        "resource": "ahp-chat:/c",
        "title": "c",
        "status": 1,
        "modifiedAt": T0,
        "turns": [turn(i) for i in range(100)],
    }
    return {**base, **extra}


def active(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"id": "a", "startedAt": T0, "message": user("go"), "responseParts": list(parts)}


def test_delta_copies_only_the_changed_path() -> None:
    md = {"kind": "markdown", "id": "p", "content": "he"}
    other = {"kind": "reasoning", "id": "r", "content": "x"}
    state = chat(activeTurn=active(other, md), queuedMessages=[{"id": "q", "message": user("q")}])
    snapshot = copy.deepcopy(state)
    new = reduce(
        "chat", state, {"type": "chat/delta", "turnId": "a", "partId": "p", "content": "y"}
    )
    assert new["activeTurn"]["responseParts"][1]["content"] == "hey"
    assert state == snapshot  # input untouched
    assert new["turns"] is state["turns"]  # unchanged branches shared
    assert new["queuedMessages"] is state["queuedMessages"]
    assert new["activeTurn"]["responseParts"][0] is other
    assert new["modifiedAt"] == T0  # deltas do not stamp the clock


@pytest.mark.parametrize(
    "action",
    [
        {"type": "chat/delta", "turnId": "other", "partId": "p", "content": "x"},
        {"type": "chat/delta", "turnId": "a", "partId": "missing", "content": "x"},
        {"type": "chat/reasoning", "turnId": "a", "partId": "p", "content": "x"},
        {"type": "chat/turnComplete", "turnId": "other", "duration": 1},
        {"type": "chat/toolCallConfirmed", "turnId": "a", "toolCallId": "nope", "approved": True},
        {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "nope"},
        {"type": "chat/truncated", "turnId": "nope"},
        {"type": "chat/inputCompleted", "requestId": "nope", "response": "accept"},
        {"type": "chat/queuedMessagesReordered", "order": []},
        {"type": "chat/somethingFromTheFuture", "x": 1},
    ],
    ids=lambda a: a["type"],
)
def test_noop_returns_the_same_object(action: dict[str, Any]) -> None:
    state = chat(status=8, activeTurn=active({"kind": "markdown", "id": "p", "content": ""}))
    assert reduce("chat", state, action) is state


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_unknown_action_is_noop_for_every_kind(kind: str) -> None:
    state: dict[str, Any] = {"turns": [], "agents": [], "content": [], "files": []}
    assert reduce(kind, state, {"type": f"{kind}/fromTheFuture"}) is state


def test_turn_start_and_end_take_their_time_from_the_actions() -> None:
    state = chat(status=1 | 32)  # idle + read
    started = reduce(
        "chat",
        state,
        {"type": "chat/turnStarted", "turnId": "n", "startedAt": NOW, "message": user("hi")},
    )
    assert started["modifiedAt"] == NOW  # 1.0: the action's startedAt, no clock
    assert started["status"] == 8  # in progress, IsRead cleared
    part = {"kind": "error", "error": {"errorType": "x", "message": "m"}}
    ended = reduce(
        "chat", started, {"type": "chat/error", "turnId": "n", "duration": -5, "part": part}
    )
    assert ended["modifiedAt"] == NOW  # startedAt + the clamped duration (0)
    assert ended["status"] == 2
    last = ended["turns"][-1]
    assert last["state"] == "error" and last["duration"] == 0 and "error" not in last
    assert last["responseParts"][-1] == part
    assert "activeTurn" not in ended and len(ended["turns"]) == 101
    done = reduce(
        "chat",
        reduce("chat", state, {**_start("m"), "startedAt": "2026-01-01T00:00:00.500Z"}),
        {"type": "chat/turnComplete", "turnId": "m", "duration": 1750},
    )
    assert done["modifiedAt"] == "2026-01-01T00:00:02.250Z"


def _start(turn_id: str) -> dict[str, Any]:
    return {"type": "chat/turnStarted", "turnId": turn_id, "startedAt": NOW, "message": user("x")}


def test_explicit_null_in_action_means_absent() -> None:
    state = {"provider": "p", "title": "t", "status": 1, "activity": "busy", "chats": []}
    cleared = reduce("session", state, {"type": "session/activityChanged", "activity": None})
    assert "activity" not in cleared
    result = {"success": True, "pastTenseMessage": "ok", "content": None}
    tc = {
        "status": "running",
        "toolCallId": "x",
        "toolName": "t",
        "displayName": "T",
        "invocationMessage": "m",
        "confirmed": "not-needed",
        "content": [{"type": "text", "text": "a"}],
    }
    st = chat(activeTurn=active({"kind": "toolCall", "toolCall": tc}))
    done = reduce(
        "chat",
        st,
        {"type": "chat/toolCallComplete", "turnId": "a", "toolCallId": "x", "result": result},
    )
    out = done["activeTurn"]["responseParts"][0]["toolCall"]
    assert out["status"] == "completed" and "content" not in out and None not in out.values()


def test_turns_loaded_noop_on_full_list_and_prepend_on_window() -> None:
    state = chat()
    page = {"type": "chat/turnsLoaded", "turns": [turn(1), turn(2)]}
    assert reduce("chat", state, page) is state
    window = chat(turns=[turn(3)], turnsNextCursor="c")
    out = reduce("chat", window, {**page, "turnsNextCursor": "d"})
    assert [t["id"] for t in out["turns"]] == ["t1", "t2", "t3"] and out["turnsNextCursor"] == "d"


def test_bad_inputs_raise_clear_errors() -> None:
    with pytest.raises(ValueError, match="unknown state kind"):
        reduce("nope", {}, {"type": "x"})
    with pytest.raises(ValueError, match="JSON object"):
        reduce("chat", chat(), ["chat/turnStarted"])  # type: ignore[arg-type]


def test_terminal_data_extends_open_command_only() -> None:
    state = {"title": "t", "claim": {"kind": "client", "clientId": "c"}, "content": []}
    assert reduce("terminal", state, {"type": "terminal/data", "data": ""}) is state
    run = reduce(
        "terminal",
        state,
        {"type": "terminal/commandExecuted", "commandId": "1", "commandLine": "ls", "timestamp": 1},
    )
    run = reduce("terminal", run, {"type": "terminal/data", "data": "a"})
    assert run["content"][-1]["output"] == "a"
    assert reduce("terminal", run, {"type": "terminal/input", "data": "x"}) is run


@pytest.mark.parametrize(
    ("kind", "state", "action"),
    [
        (
            "session",
            {"title": "same", "status": 1, "lifecycle": "ready", "chats": []},
            {"type": "session/titleChanged", "title": "same"},
        ),
        (
            "session",
            {"title": "s", "status": 1, "lifecycle": "ready", "chats": []},
            {"type": "session/ready"},
        ),
        (
            "session",
            {"title": "s", "status": 33, "chats": []},
            {"type": "session/isReadChanged", "isRead": True},
        ),
        (
            "root",
            {"agents": [{"provider": "p"}]},
            {"type": "root/agentsChanged", "agents": [{"provider": "p"}]},
        ),
        (
            "terminal",
            {"title": "t", "content": [], "cols": 80, "rows": 24},
            {"type": "terminal/resized", "cols": 80, "rows": 24},
        ),
        (
            "chat",
            {"turns": [], "draft": {"text": "d"}, "status": 1},
            {"type": "chat/draftChanged", "draft": {"text": "d"}},
        ),
    ],
)
def test_setting_an_existing_value_returns_the_same_object(
    kind: str, state: dict[str, Any], action: dict[str, Any]
) -> None:
    assert reduce(kind, state, action) is state
