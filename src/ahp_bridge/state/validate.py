"""Client-dispatch validation: may this client's action be applied to this state?

The host calls `reject_reason` before `Store.apply`; a reason becomes the
`rejectionReason` of the echo and state stays untouched. The rules are the AHP
chat/session channel validation table plus the recommendations in
notes/ahp-protocol.md §3 (no second concurrent turn, user messages only) and
the threat model's "authorize against the connection's identity" (a client
registers or removes only itself as an active client). With `limits`, an action over one of
the host's size or count limits (`state.limits`) is refused too, with a reason naming the limit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.actions import CLIENT_DISPATCHABLE
from ahp_bridge.protocol.actions_v1 import CLIENT_DISPATCHABLE_1_0

from .answers import answer_problem
from .limits import Limits, limit_problem
from .reducers.chat import known_turn, resumable
from .reducers.chat_input import find_open_request

__all__ = ["CLIENT_DISPATCHABLE", "DISPATCHABLE", "reject_reason"]

#: What a client of any wire version may dispatch, once lifted to the canonical shape (which
#: wire version allows which type is checked before, by the connection's wire).
DISPATCHABLE = CLIENT_DISPATCHABLE | CLIENT_DISPATCHABLE_1_0

JSON = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Who:
    """Who sends the action, and the chat's running turn as its turn lifecycle knows it (a
    provider-started turn runs before its `chat/turnStarted` is in the state)."""

    client_id: str
    running_turn: str | None = None


Rule = Callable[[JSON, JSON, Who], "str | None"]


def busy(turn_id: object) -> str:
    """The one wording of "a turn runs already" (a start, a resume)."""
    return f"turn {turn_id} is still running: cancel it or wait until it ends"


_PREFIX = {
    "root": "root/",
    "session": "session/",
    "chat": "chat/",
    "terminal": "terminal/",
    "changeset": "changeset/",
    "annotations": "annotations/",
    "resourceWatch": "resourceWatch/",
}


def reject_reason(
    kind: str,
    state: JSON,
    action: JSON,
    *,
    client_id: str,
    idempotent_turns: bool = True,
    limits: Limits | None = None,
    running_turn: str | None = None,
) -> str | None:
    """A human-readable reason to reject canonical `action` from `client_id`, or None to accept.

    `idempotent_turns` (AHP 1.0): a `chat/turnStarted` naming a turn the chat already knows is
    accepted as the no-op it is; 0.7 peers, whose reducers would restart the turn, are refused.
    `limits`: the host's size and count limits, checked first. `running_turn`: the chat's turn
    as its lifecycle knows it (the one answer to "is a turn running").
    """
    if not isinstance(action, dict) or not isinstance(action.get("type"), str):
        return "an action must be an object with a string type"
    action_type = action["type"]
    if action_type not in DISPATCHABLE:
        return f"{action_type} cannot be dispatched by clients"
    if not action_type.startswith(_PREFIX.get(kind, "\0")):
        return f"{action_type} does not apply to a {kind} channel"
    if limits is not None:  # before all else: even a no-op is logged and sent to every peer
        problem = limit_problem(kind, state, action, limits)
        if problem is not None:
            return problem
    if (
        action_type == ActionType.CHAT_TURN_STARTED
        and idempotent_turns
        and known_turn(state, action.get("turnId"))
    ):
        return None
    rule = _RULES.get(action_type)
    return rule(state, action, Who(client_id, running_turn)) if rule else None


def _running(state: JSON, who: Who) -> str | None:
    """The running turn's id (None: no turn runs)."""
    active = state.get("activeTurn")
    if isinstance(active, dict):
        return str(active.get("id"))
    return who.running_turn


# ── turns ─────────────────────────────────────────────────────────────────


def _turn_started(state: JSON, action: JSON, who: Who) -> str | None:
    running = _running(state, who)
    if running is not None:
        return busy(running)
    if known_turn(state, action.get("turnId")):  # idempotent in 1.0; 0.7 would restart it
        return f"turn {action.get('turnId')} already exists: start a turn with a new id"
    if not isinstance(action.get("turnId"), str) or not action["turnId"]:
        return "chat/turnStarted needs a turnId"
    message = action.get("message")
    origin = message.get("origin") if isinstance(message, dict) else None
    if not isinstance(origin, dict) or origin.get("kind") != "user":
        return "clients may only start turns with a user message"
    return None


def _turn_resume(state: JSON, action: JSON, who: Who) -> str | None:
    running = _running(state, who)
    if running is not None:
        return busy(running)
    turns = state.get("turns") or []
    last = turns[-1] if turns else None
    if not isinstance(last, dict) or last.get("id") != action.get("turnId"):
        return f"turn {action.get('turnId')} is not the latest turn"
    if not resumable(last):
        return f"turn {action.get('turnId')} did not end in a resumable error"
    return None


def _active_turn(state: JSON, action: JSON) -> tuple[JSON | None, str | None]:
    active = state.get("activeTurn")
    if not isinstance(active, dict):
        return None, "no turn is active"
    if active.get("id") != action.get("turnId"):
        return None, f"turn {action.get('turnId')} is not the active turn"
    return active, None


def _turn_cancelled(state: JSON, action: JSON, who: Who) -> str | None:
    return _active_turn(state, action)[1]


# ── tool calls ────────────────────────────────────────────────────────────


def _tool_call(state: JSON, action: JSON) -> tuple[JSON | None, str | None]:
    active, problem = _active_turn(state, action)
    if active is None:
        return None, problem
    call_id = action.get("toolCallId")
    for part in active.get("responseParts", []):
        tc = part.get("toolCall") if part.get("kind") == "toolCall" else None
        if isinstance(tc, dict) and tc.get("toolCallId") == call_id:
            return tc, None
    return None, f"no tool call {call_id} in the active turn"


def _tool_confirmed(state: JSON, action: JSON, who: Who) -> str | None:
    tc, problem = _tool_call(state, action)
    if tc is None:
        return problem
    if tc.get("status") != "pending-confirmation":
        return f"tool call {tc.get('toolCallId')} is {tc.get('status')}, not awaiting confirmation"
    wanted = action.get("selectedOptionId")
    options = {o.get("id") for o in tc.get("options") or [] if isinstance(o, dict)}
    if wanted is not None and wanted not in options:
        return f"{wanted!r} is not one of the tool call's options"
    return None


def _tool_result_confirmed(state: JSON, action: JSON, who: Who) -> str | None:
    tc, problem = _tool_call(state, action)
    if tc is None:
        return problem
    if tc.get("status") != "pending-result-confirmation":
        return f"tool call {tc.get('toolCallId')} has no result awaiting confirmation"
    return None


def _client_tool(state: JSON, action: JSON, who: Who) -> str | None:
    """Only the contributing client completes or updates a client tool, while it runs."""
    tc, problem = _tool_call(state, action)
    if tc is None:
        return problem
    contributor = tc.get("contributor")
    if not isinstance(contributor, dict) or contributor.get("kind") != "client":
        return f"tool call {tc.get('toolCallId')} is executed by the host, not a client"
    if contributor.get("clientId") != who.client_id:
        return f"tool call {tc.get('toolCallId')} belongs to another client"
    if tc.get("status") != "running":
        return f"tool call {tc.get('toolCallId')} is {tc.get('status')}, not running"
    return None


# ── input requests ────────────────────────────────────────────────────────


def _open_request(state: JSON, action: JSON) -> tuple[JSON | None, str | None]:
    found = find_open_request(state, action.get("requestId"))
    if found is None:
        return None, f"no open input request {action.get('requestId')}"
    return found[1].get("request") or {}, None


def _questions(request: JSON) -> dict[Any, JSON]:
    return {q.get("id"): q for q in request.get("questions") or [] if isinstance(q, dict)}


def _input_answer_changed(state: JSON, action: JSON, who: Who) -> str | None:
    request, problem = _open_request(state, action)
    if request is None:
        return problem
    question = _questions(request).get(action.get("questionId"))
    if question is None:
        return f"input request {request.get('id')} has no question {action.get('questionId')}"
    if action.get("answer") is None:  # clearing a draft
        return None
    problem = answer_problem(question, action["answer"])
    return f"answer to {question.get('id')}: {problem}" if problem else None


def _input_completed(state: JSON, action: JSON, who: Who) -> str | None:
    request, problem = _open_request(state, action)
    if request is None:
        return problem
    response = action.get("response")
    if response not in ("accept", "decline", "cancel"):
        return "response must be accept, decline or cancel"
    answers = action.get("answers")
    if answers is not None and not isinstance(answers, dict):
        return "answers must be an object keyed by question id"
    questions = _questions(request)
    for qid, answer in (answers or {}).items():
        if qid not in questions:
            return f"input request {request.get('id')} has no question {qid}"
        problem = answer_problem(questions[qid], answer)
        if problem:
            return f"answer to {qid}: {problem}"
    if response == "accept":
        merged = {**(request.get("answers") or {}), **(answers or {})}
        for qid, q in questions.items():
            if q.get("required") and (merged.get(qid) or {}).get("state") != "submitted":
                return f"question {qid} is required and has no submitted answer"
    return None


# ── pending messages, session ─────────────────────────────────────────────


def _pending_removed(state: JSON, action: JSON, who: Who) -> str | None:
    kind, ident = action.get("kind"), action.get("id")
    if kind == "steering":
        steering = state.get("steeringMessage")
        if isinstance(steering, dict) and steering.get("id") == ident:
            return None
        return f"no steering message {ident}"
    if kind == "queued":
        if any(m.get("id") == ident for m in state.get("queuedMessages") or []):
            return None
        return f"no queued message {ident}"
    return "kind must be steering or queued"


def _pending_set(state: JSON, action: JSON, who: Who) -> str | None:
    if action.get("kind") not in ("steering", "queued"):
        return "kind must be steering or queued"
    message = action.get("message")
    origin = message.get("origin") if isinstance(message, dict) else None
    if not isinstance(origin, dict) or origin.get("kind") != "user":
        return "clients may only queue user messages"
    if action.get("kind") == "steering" and _running(state, who) is None:
        return "no turn is running to steer"
    return None


def _draft(state: JSON, action: JSON, who: Who) -> str | None:
    draft = action.get("draft")
    if draft is None:  # clearing the draft
        return None
    origin = draft.get("origin") if isinstance(draft, dict) else None
    if not isinstance(origin, dict) or origin.get("kind") != "user":
        return "clients may only draft user messages"
    return None


def _default_chat(state: JSON, action: JSON, who: Who) -> str | None:
    chat = action.get("defaultChat")
    if chat is None:  # unsetting the hint is always fine
        return None
    if any(c.get("resource") == chat for c in state.get("chats", [])):
        return None
    return f"{chat} is not a chat of this session"


def _active_client_set(state: JSON, action: JSON, who: Who) -> str | None:
    client = action.get("activeClient")
    if not isinstance(client, dict) or client.get("clientId") != who.client_id:
        return "a client may only register itself as an active client"
    return None


def _active_client_removed(state: JSON, action: JSON, who: Who) -> str | None:
    if action.get("clientId") != who.client_id:
        return "a client may only remove itself; the host removes clients that leave"
    return None


_RULES: dict[str, Rule] = {
    ActionType.CHAT_TURN_STARTED: _turn_started,
    ActionType.CHAT_TURN_CANCELLED: _turn_cancelled,
    ActionType.CHAT_TURN_RESUME: _turn_resume,
    ActionType.CHAT_TOOL_CALL_CONFIRMED: _tool_confirmed,
    ActionType.CHAT_TOOL_CALL_RESULT_CONFIRMED: _tool_result_confirmed,
    ActionType.CHAT_TOOL_CALL_COMPLETE: _client_tool,
    ActionType.CHAT_TOOL_CALL_CONTENT_CHANGED: _client_tool,
    ActionType.CHAT_INPUT_ANSWER_CHANGED: _input_answer_changed,
    ActionType.CHAT_INPUT_COMPLETED: _input_completed,
    ActionType.CHAT_PENDING_MESSAGE_SET: _pending_set,
    ActionType.CHAT_DRAFT_CHANGED: _draft,
    ActionType.CHAT_PENDING_MESSAGE_REMOVED: _pending_removed,
    ActionType.SESSION_DEFAULT_CHAT_CHANGED: _default_chat,
    ActionType.SESSION_ACTIVE_CLIENT_SET: _active_client_set,
    ActionType.SESSION_ACTIVE_CLIENT_REMOVED: _active_client_removed,
}
