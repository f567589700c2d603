"""Table tests for client-dispatch validation: every rule rejects and accepts."""

from __future__ import annotations

from typing import Any

import pytest

from ahp_bridge.state.validate import CLIENT_DISPATCHABLE, reject_reason

ME = "client-me"
T = "turn-1"


def user(text: str = "hi") -> dict[str, Any]:
    return {"text": text, "origin": {"kind": "user"}}


def tool(call_id: str, status: str, **extra: Any) -> dict[str, Any]:
    tc = {"toolCallId": call_id, "toolName": "t", "displayName": "T", "status": status}
    return {"kind": "toolCall", "toolCall": {**tc, **extra}}


QUESTIONS = [
    {"id": "name", "kind": "text", "message": "?", "min": 2, "max": 5, "required": True},
    {"id": "n", "kind": "number", "message": "?", "min": 0, "max": 10},
    {"id": "i", "kind": "integer", "message": "?"},
    {"id": "ok", "kind": "boolean", "message": "?", "required": True},
    {
        "id": "one",
        "kind": "single-select",
        "message": "?",
        "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
    },
    {
        "id": "free",
        "kind": "single-select",
        "message": "?",
        "allowFreeformInput": True,
        "options": [{"id": "a", "label": "A"}],
    },
    {
        "id": "many",
        "kind": "multi-select",
        "message": "?",
        "min": 1,
        "max": 2,
        "options": [
            {"id": "a", "label": "A"},
            {"id": "b", "label": "B"},
            {"id": "c", "label": "C"},
        ],
    },
]

CHAT: dict[str, Any] = {
    "resource": "ahp-chat:/c",
    "title": "c",
    "status": 24,
    "modifiedAt": "2026-01-01T00:00:00.000Z",
    "turns": [],
    "activeTurn": {
        "id": T,
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": user(),
        "responseParts": [
            tool(
                "pending",
                "pending-confirmation",
                options=[
                    {"id": "allow", "label": "Allow", "kind": "approve"},
                    {"id": "deny", "label": "Deny", "kind": "deny"},
                ],
            ),
            tool("mine", "running", contributor={"kind": "client", "clientId": ME}),
            tool("theirs", "running", contributor={"kind": "client", "clientId": "other"}),
            tool("server", "running"),
            tool("mcp", "running", contributor={"kind": "mcp", "customizationId": "m"}),
            tool(
                "mine-pending",
                "pending-confirmation",
                contributor={"kind": "client", "clientId": ME},
            ),
            tool("result", "pending-result-confirmation"),
            tool("done", "completed"),
            {
                "kind": "inputRequest",
                "request": {
                    "id": "req",
                    "questions": QUESTIONS,
                    "answers": {
                        "name": {"state": "submitted", "value": {"kind": "text", "value": "Al"}}
                    },
                },
            },
            {"kind": "inputRequest", "request": {"id": "answered"}, "response": "accept"},
        ],
    },
    "steeringMessage": {"id": "s1", "message": user()},
    "queuedMessages": [{"id": "q1", "message": user()}],
}
IDLE_CHAT = {k: v for k, v in CHAT.items() if k != "activeTurn"} | {"status": 1}
SESSION = {
    "provider": "p",
    "title": "s",
    "status": 1,
    "lifecycle": "ready",
    "activeClients": [],
    "chats": [{"resource": "ahp-chat:/c", "title": "c", "status": 1, "modifiedAt": "x"}],
}


def ans(kind: str, value: Any, state: str = "submitted", **extra: Any) -> dict[str, Any]:
    return {"state": state, "value": {"kind": kind, "value": value, **extra}}


def changed(qid: str, answer: Any) -> dict[str, Any]:
    return {
        "type": "chat/inputAnswerChanged",
        "requestId": "req",
        "questionId": qid,
        "answer": answer,
    }


def confirm(call_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "type": "chat/toolCallConfirmed",
        "turnId": T,
        "toolCallId": call_id,
        "approved": True,
        "confirmed": "user-action",
        **extra,
    }


def complete(call_id: str) -> dict[str, Any]:
    return {
        "type": "chat/toolCallComplete",
        "turnId": T,
        "toolCallId": call_id,
        "result": {"success": True, "pastTenseMessage": "ok"},
    }


def completed(response: str = "accept", **answers: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "chat/inputCompleted", "requestId": "req", "response": response}
    if answers:
        out["answers"] = answers
    return out


OK_BOOL = ans("boolean", True)
START = {"type": "chat/turnStarted", "turnId": "n", "startedAt": "x", "message": user()}

# (id, kind, state, action, None to accept or a substring of the rejection reason)
CASES: list[tuple[str, str, dict[str, Any], Any, str | None]] = [
    # generic
    ("not-an-object", "chat", CHAT, ["chat/turnStarted"], "string type"),
    ("missing-type", "chat", CHAT, {"turnId": T}, "string type"),
    ("host-only", "chat", CHAT, {"type": "chat/delta", "turnId": T}, "cannot be dispatched"),
    ("unknown-type", "chat", CHAT, {"type": "chat/fromTheFuture"}, "cannot be dispatched"),
    ("wrong-channel", "session", SESSION, START, "does not apply to a session"),
    ("unvalidated-ok", "chat", CHAT, {"type": "chat/draftChanged", "draft": user()}, None),
    ("terminal-ok", "terminal", {}, {"type": "terminal/input", "data": "ls"}, None),
    # turnStarted
    ("start-while-active", "chat", CHAT, START, "turn turn-1 is still running"),
    ("start-idle", "chat", IDLE_CHAT, START, None),
    (
        "start-agent-message",
        "chat",
        IDLE_CHAT,
        {**START, "message": {"text": "x", "origin": {"kind": "agent"}}},
        "user message",
    ),
    ("start-no-origin", "chat", IDLE_CHAT, {**START, "message": {"text": "x"}}, "user message"),
    ("start-no-turn-id", "chat", IDLE_CHAT, {**START, "turnId": ""}, "turnId"),
    # turnCancelled
    (
        "cancel-idle",
        "chat",
        IDLE_CHAT,
        {"type": "chat/turnCancelled", "turnId": T, "duration": 1},
        "no turn is active",
    ),
    (
        "cancel-wrong-turn",
        "chat",
        CHAT,
        {"type": "chat/turnCancelled", "turnId": "x", "duration": 1},
        "not the active turn",
    ),
    ("cancel-ok", "chat", CHAT, {"type": "chat/turnCancelled", "turnId": T, "duration": 1}, None),
    # toolCallConfirmed
    ("confirm-pending", "chat", CHAT, confirm("pending", selectedOptionId="allow"), None),
    ("confirm-running", "chat", CHAT, confirm("server"), "not awaiting confirmation"),
    ("confirm-twice", "chat", CHAT, confirm("done"), "not awaiting confirmation"),
    ("confirm-unknown-call", "chat", CHAT, confirm("nope"), "no tool call nope"),
    (
        "confirm-unknown-option",
        "chat",
        CHAT,
        confirm("pending", selectedOptionId="x"),
        "not one of the tool call's options",
    ),
    (
        "confirm-wrong-turn",
        "chat",
        CHAT,
        {**confirm("pending"), "turnId": "old"},
        "not the active turn",
    ),
    # toolCallResultConfirmed
    (
        "result-confirm-ok",
        "chat",
        CHAT,
        {
            "type": "chat/toolCallResultConfirmed",
            "turnId": T,
            "toolCallId": "result",
            "approved": True,
        },
        None,
    ),
    (
        "result-confirm-not-pending",
        "chat",
        CHAT,
        {
            "type": "chat/toolCallResultConfirmed",
            "turnId": T,
            "toolCallId": "done",
            "approved": True,
        },
        "no result awaiting",
    ),
    # toolCallComplete / toolCallContentChanged
    ("complete-own-tool", "chat", CHAT, complete("mine"), None),
    ("complete-other-client", "chat", CHAT, complete("theirs"), "belongs to another client"),
    ("complete-server-tool", "chat", CHAT, complete("server"), "executed by the host"),
    ("complete-mcp-tool", "chat", CHAT, complete("mcp"), "executed by the host"),
    ("complete-not-running", "chat", CHAT, complete("mine-pending"), "not running"),
    (
        "content-own",
        "chat",
        CHAT,
        {"type": "chat/toolCallContentChanged", "turnId": T, "toolCallId": "mine", "content": []},
        None,
    ),
    (
        "content-other",
        "chat",
        CHAT,
        {"type": "chat/toolCallContentChanged", "turnId": T, "toolCallId": "theirs", "content": []},
        "another client",
    ),
    # inputAnswerChanged
    (
        "answer-unknown-request",
        "chat",
        CHAT,
        {**changed("name", None), "requestId": "x"},
        "no open input request",
    ),
    (
        "answer-closed-request",
        "chat",
        CHAT,
        {**changed("name", None), "requestId": "answered"},
        "no open input request",
    ),
    ("answer-unknown-question", "chat", CHAT, changed("zzz", OK_BOOL), "no question zzz"),
    ("answer-clear", "chat", CHAT, changed("name", None), None),
    ("answer-bad-state", "chat", CHAT, changed("ok", {"state": "maybe"}), "state"),
    ("answer-not-object", "chat", CHAT, changed("ok", True), "state"),
    (
        "answer-skipped",
        "chat",
        CHAT,
        changed("ok", {"state": "skipped", "freeformValues": ["x"]}),
        None,
    ),
    (
        "answer-skipped-bad-free",
        "chat",
        CHAT,
        changed("ok", {"state": "skipped", "freeformValues": [1]}),
        "strings",
    ),
    ("text-ok", "chat", CHAT, changed("name", ans("text", "Bob")), None),
    ("text-wrong-kind", "chat", CHAT, changed("name", ans("number", 3)), "takes a 'text'"),
    ("text-not-string", "chat", CHAT, changed("name", ans("text", 3)), "string value"),
    ("text-too-short", "chat", CHAT, changed("name", ans("text", "B")), "below the minimum"),
    ("text-too-long", "chat", CHAT, changed("name", ans("text", "Bobbyyy")), "above the maximum"),
    ("text-draft-unbounded", "chat", CHAT, changed("name", ans("text", "B", "draft")), None),
    ("number-ok", "chat", CHAT, changed("n", ans("number", 2.5)), None),
    ("number-bool", "chat", CHAT, changed("n", ans("number", True)), "numeric"),
    ("number-nan", "chat", CHAT, changed("n", ans("number", float("nan"))), "numeric"),
    ("number-high", "chat", CHAT, changed("n", ans("number", 11)), "above the maximum"),
    ("number-low", "chat", CHAT, changed("n", ans("number", -1)), "below the minimum"),
    ("integer-ok", "chat", CHAT, changed("i", ans("number", 4.0)), None),
    ("integer-fraction", "chat", CHAT, changed("i", ans("number", 1.5)), "not an integer"),
    ("boolean-ok", "chat", CHAT, changed("ok", ans("boolean", False)), None),
    ("boolean-string", "chat", CHAT, changed("ok", ans("boolean", "yes")), "true or false"),
    ("single-ok", "chat", CHAT, changed("one", ans("selected", "b")), None),
    (
        "single-unknown",
        "chat",
        CHAT,
        changed("one", ans("selected", "z")),
        "not one of the options",
    ),
    (
        "single-free-denied",
        "chat",
        CHAT,
        changed("one", ans("selected", "a", freeformValues=["x"])),
        "free-form",
    ),
    (
        "single-free-ok",
        "chat",
        CHAT,
        changed("free", ans("selected", "typed", freeformValues=["typed"])),
        None,
    ),
    # what clients send when the user typed their own answer: the free-form answer
    ("single-free-text-ok", "chat", CHAT, changed("free", ans("text", "my own")), None),
    (
        "single-text-without-freeform",
        "chat",
        CHAT,
        changed("one", ans("text", "my own")),
        "takes a 'selected' value",
    ),
    ("multi-ok", "chat", CHAT, changed("many", ans("selected-many", ["a", "c"])), None),
    (
        "multi-unknown",
        "chat",
        CHAT,
        changed("many", ans("selected-many", ["a", "z"])),
        "not one of the options",
    ),
    (
        "multi-duplicate",
        "chat",
        CHAT,
        changed("many", ans("selected-many", ["a", "a"])),
        "more than once",
    ),
    (
        "multi-too-many",
        "chat",
        CHAT,
        changed("many", ans("selected-many", ["a", "b", "c"])),
        "above the maximum",
    ),
    ("multi-too-few", "chat", CHAT, changed("many", ans("selected-many", [])), "below the minimum"),
    ("multi-not-list", "chat", CHAT, changed("many", ans("selected-many", "a")), "list"),
    # inputCompleted
    ("complete-accept-ok", "chat", CHAT, completed(ok=OK_BOOL), None),
    ("complete-accept-missing-required", "chat", CHAT, completed(), "question ok is required"),
    (
        "complete-accept-draft-required",
        "chat",
        CHAT,
        completed(ok=ans("boolean", True, "draft")),
        "question ok is required",
    ),
    ("complete-decline-without-answers", "chat", CHAT, completed("decline"), None),
    ("complete-cancel", "chat", CHAT, completed("cancel"), None),
    ("complete-bad-response", "chat", CHAT, completed("maybe"), "accept, decline or cancel"),
    (
        "complete-bad-answer",
        "chat",
        CHAT,
        completed("decline", n=ans("number", "x")),
        "answer to n",
    ),
    ("complete-unknown-question", "chat", CHAT, completed(zzz=OK_BOOL), "no question zzz"),
    ("complete-answers-not-object", "chat", CHAT, {**completed(), "answers": [1]}, "object"),
    (
        "complete-unknown-request",
        "chat",
        CHAT,
        {**completed(), "requestId": "x"},
        "no open input request",
    ),
    ("complete-idle", "chat", IDLE_CHAT, completed(), "no open input request"),
    # pending messages
    (
        "remove-queued-ok",
        "chat",
        CHAT,
        {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "q1"},
        None,
    ),
    (
        "remove-queued-unknown",
        "chat",
        CHAT,
        {"type": "chat/pendingMessageRemoved", "kind": "queued", "id": "s1"},
        "no queued message",
    ),
    (
        "remove-steering-ok",
        "chat",
        CHAT,
        {"type": "chat/pendingMessageRemoved", "kind": "steering", "id": "s1"},
        None,
    ),
    (
        "remove-steering-unknown",
        "chat",
        IDLE_CHAT | {"steeringMessage": None},
        {"type": "chat/pendingMessageRemoved", "kind": "steering", "id": "s1"},
        "no steering",
    ),
    (
        "remove-bad-kind",
        "chat",
        CHAT,
        {"type": "chat/pendingMessageRemoved", "kind": "other", "id": "q1"},
        "kind must be",
    ),
    (
        "set-queued-ok",
        "chat",
        CHAT,
        {"type": "chat/pendingMessageSet", "kind": "queued", "id": "q2", "message": user()},
        None,
    ),
    (
        "set-agent-message",
        "chat",
        CHAT,
        {
            "type": "chat/pendingMessageSet",
            "kind": "steering",
            "id": "s",
            "message": {"text": "x", "origin": {"kind": "tool"}},
        },
        "user messages",
    ),
    # session
    (
        "default-chat-known",
        "session",
        SESSION,
        {"type": "session/defaultChatChanged", "defaultChat": "ahp-chat:/c"},
        None,
    ),
    (
        "default-chat-unknown",
        "session",
        SESSION,
        {"type": "session/defaultChatChanged", "defaultChat": "ahp-chat:/zzz"},
        "not a chat",
    ),
    ("default-chat-unset", "session", SESSION, {"type": "session/defaultChatChanged"}, None),
    (
        "active-client-self",
        "session",
        SESSION,
        {"type": "session/activeClientSet", "activeClient": {"clientId": ME, "tools": []}},
        None,
    ),
    (
        "active-client-impersonation",
        "session",
        SESSION,
        {"type": "session/activeClientSet", "activeClient": {"clientId": "other", "tools": []}},
        "only register itself",
    ),
    (
        "active-client-remove-self",
        "session",
        SESSION,
        {"type": "session/activeClientRemoved", "clientId": ME},
        None,
    ),
    (
        "active-client-remove-other",
        "session",
        SESSION,
        {"type": "session/activeClientRemoved", "clientId": "other"},
        "only remove itself",
    ),
    (
        "session-host-only",
        "session",
        SESSION,
        {"type": "session/chatAdded", "summary": {}},
        "cannot be dispatched",
    ),
]


@pytest.mark.parametrize(
    ("kind", "state", "action", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_reject_reason(kind: str, state: dict[str, Any], action: Any, expected: str | None) -> None:
    reason = reject_reason(kind, state, action, client_id=ME)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


def test_client_dispatchable_set_is_the_protocol_one() -> None:
    assert (
        "chat/turnStarted" in CLIENT_DISPATCHABLE
        and "session/defaultChatChanged" in CLIENT_DISPATCHABLE
    )
    assert not {"chat/delta", "chat/turnsLoaded", "session/inputNeededSet"} & CLIENT_DISPATCHABLE


def test_the_turn_lifecycles_running_turn_is_the_one_answer_to_is_a_turn_running() -> None:
    """A provider-started turn runs before its `chat/turnStarted` is in the state: the chat's
    turn lifecycle says so (`running_turn`), and every rule that asks reads it, in one wording."""
    start = {**START, "turnId": "mine"}
    assert reject_reason("chat", IDLE_CHAT, start, client_id=ME) is None
    busy = reject_reason("chat", IDLE_CHAT, start, client_id=ME, running_turn="theirs")
    assert busy == "turn theirs is still running: cancel it or wait until it ends"
    steer = {
        "type": "chat/pendingMessageSet",
        "kind": "steering",
        "id": "p1",
        "message": user(),
    }
    assert reject_reason("chat", IDLE_CHAT, steer, client_id=ME) == "no turn is running to steer"
    assert reject_reason("chat", IDLE_CHAT, steer, client_id=ME, running_turn="theirs") is None
    running = {**IDLE_CHAT, "activeTurn": CHAT["activeTurn"]}
    assert reject_reason("chat", running, steer, client_id=ME) is None
    queued = {**steer, "kind": "queued"}
    assert reject_reason("chat", IDLE_CHAT, queued, client_id=ME) is None
