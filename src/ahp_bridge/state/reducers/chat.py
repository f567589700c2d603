"""Reducer for ChatState (`ahp-chat:/…`): turns, response parts, pending messages.

`now` is the ISO-8601 time the reference reducer stamps into `modifiedAt` when a
turn starts or ends, on truncation and on input requests/answers/completion.
"""

from __future__ import annotations

from typing import Any

from .. import status as st
from ._util import JSON, compact, find_index, put, removed, set_member, unset_member, upsert_by
from .chat_common import derive_status, matching_turn, update_part, with_parts
from .chat_input import answer_changed, completed, requested
from .tool_calls import CANCELLED, COMPLETED, STREAMING, TOOL_CALL_ACTIONS, base, reduce_tool_call


def _turn_started(state: JSON, action: JSON, now: str) -> JSON:
    active = compact(
        {
            "id": action.get("turnId"),
            "startedAt": action.get("startedAt"),
            "message": action.get("message"),
            "responseParts": [],
        }
    )
    nxt = {**state, "activeTurn": active}
    nxt["status"] = st.with_flag(derive_status(nxt), st.IS_READ, False)
    nxt["modifiedAt"] = now
    queued_id = action.get("queuedMessageId")
    if queued_id:
        steering = nxt.get("steeringMessage")
        if isinstance(steering, dict) and steering.get("id") == queued_id:
            nxt.pop("steeringMessage")
        queue = nxt.get("queuedMessages")
        if isinstance(queue, list):
            nxt = put(nxt, "queuedMessages", [m for m in queue if m.get("id") != queued_id] or None)
    return nxt


def _force_cancel(part: Any) -> Any:
    """Tool calls still in flight when a turn ends are cancelled as skipped."""
    if not isinstance(part, dict) or part.get("kind") != "toolCall":
        return part
    tc = part.get("toolCall") or {}
    if tc.get("status") in (COMPLETED, CANCELLED):
        return part
    streaming = tc.get("status") == STREAMING
    cancelled = compact(
        {
            "status": CANCELLED,
            **base(tc),
            "invocationMessage": tc.get("invocationMessage", "")
            if streaming
            else tc.get("invocationMessage"),
            "toolInput": None if streaming else tc.get("toolInput"),
            "reason": "skipped",
        }
    )
    return {"kind": "toolCall", "toolCall": cancelled}


def _end_turn(state: JSON, action: JSON, turn_state: str, now: str) -> JSON:
    active = matching_turn(state, action.get("turnId"))
    if active is None:
        return state
    duration = action.get("duration")
    is_error = turn_state == "error"
    turn = compact(
        {
            "id": active.get("id"),
            "startedAt": active.get("startedAt"),
            # Producer-supplied and opaque; a negative duration would be nonsense.
            "duration": max(0, duration) if isinstance(duration, int | float) else 0,
            "message": active.get("message"),
            "responseParts": [_force_cancel(p) for p in active.get("responseParts", [])],
            "usage": active.get("usage"),
            "state": turn_state,
            "error": action.get("error") if is_error else None,
        }
    )
    nxt = {**state, "turns": [*state.get("turns", []), turn], "modifiedAt": now}
    nxt.pop("activeTurn", None)
    nxt["status"] = derive_status(nxt, error=is_error)
    return nxt


def _append_text(kind: str, action: JSON) -> Any:
    def fn(part: JSON) -> JSON:
        if part.get("kind") != kind:
            return part
        return {**part, "content": part.get("content", "") + (action.get("content") or "")}

    return fn


def _response_part(state: JSON, action: JSON) -> JSON:
    turn = matching_turn(state, action.get("turnId"))
    part = action.get("part")
    if turn is None or part is None:
        return state
    return with_parts(state, turn, [*turn.get("responseParts", []), part])


def _usage(state: JSON, action: JSON) -> JSON:
    turn = matching_turn(state, action.get("turnId"))
    if turn is None:
        return state
    return {**state, "activeTurn": put(turn, "usage", action.get("usage"))}


def _truncated(state: JSON, action: JSON, now: str) -> JSON:
    turn_id = action.get("turnId")
    turns = state.get("turns", [])
    if turn_id is None:
        kept: list[Any] = []
    else:
        idx = find_index(turns, lambda t: t.get("id") == turn_id)
        if idx < 0:
            return state
        kept = turns[: idx + 1]
    nxt = {**state, "turns": kept, "modifiedAt": now}
    nxt.pop("activeTurn", None)
    if turn_id is None:
        nxt.pop("turnsNextCursor", None)
    nxt["status"] = derive_status(nxt)
    return nxt


def _turns_loaded(state: JSON, action: JSON) -> JSON:
    """Prepend older turns (skipping ones already loaded) and take the new cursor."""
    turns = state.get("turns", [])
    have = {t.get("id") for t in turns}
    older = [t for t in action.get("turns") or [] if t.get("id") not in have]
    cursor = action.get("turnsNextCursor")
    if not older and cursor == state.get("turnsNextCursor"):
        return state
    return put({**state, "turns": [*older, *turns]}, "turnsNextCursor", cursor)


def _pending_set(state: JSON, action: JSON) -> JSON:
    entry = compact({"id": action.get("id"), "message": action.get("message")})
    if action.get("kind") == "steering":
        return {**state, "steeringMessage": entry}
    return {**state, "queuedMessages": upsert_by(state.get("queuedMessages") or [], "id", entry)}


def _pending_removed(state: JSON, action: JSON) -> JSON:
    if action.get("kind") == "steering":
        steering = state.get("steeringMessage")
        if not isinstance(steering, dict) or steering.get("id") != action.get("id"):
            return state
        return put(state, "steeringMessage", None)
    queue = state.get("queuedMessages")
    if not queue:
        return state
    idx = find_index(queue, lambda m: m.get("id") == action.get("id"))
    if idx < 0:
        return state
    return put(state, "queuedMessages", removed(queue, idx) or None)


def _reordered(state: JSON, action: JSON) -> JSON:
    """Listed ids first in the given order, then the rest in their original order."""
    queue = state.get("queuedMessages")
    if not queue:
        return state
    by_id = {m.get("id"): m for m in queue}
    seen: set[Any] = set()
    ordered = []
    for ident in action.get("order") or []:
        if ident in by_id and ident not in seen:
            seen.add(ident)
            ordered.append(by_id[ident])
    ordered.extend(m for m in queue if m.get("id") not in seen)
    return state if ordered == queue else {**state, "queuedMessages": ordered}


def _dirs(state: JSON, new: list[Any] | None) -> JSON:
    return state if new is None else {**state, "workingDirectories": new}


def reduce_chat(state: JSON, action: JSON, *, now: str) -> JSON:
    """Pure reducer for chat channels; wrong turn ids and unknown actions are no-ops."""
    kind = action.get("type")
    if kind in TOOL_CALL_ACTIONS:
        return reduce_tool_call(state, action)
    match kind:
        case "chat/turnStarted":
            return _turn_started(state, action, now)
        case "chat/responsePart":
            return _response_part(state, action)
        case "chat/delta":
            fn = _append_text("markdown", action)
            return update_part(state, action.get("turnId"), action.get("partId"), fn)
        case "chat/reasoning":
            fn = _append_text("reasoning", action)
            return update_part(state, action.get("turnId"), action.get("partId"), fn)
        case "chat/usage":
            return _usage(state, action)
        case "chat/turnComplete":
            return _end_turn(state, action, "complete", now)
        case "chat/turnCancelled":
            return _end_turn(state, action, "cancelled", now)
        case "chat/error":
            return _end_turn(state, action, "error", now)
        case "chat/activityChanged":
            return put(state, "activity", action.get("activity"))
        case "chat/truncated":
            return _truncated(state, action, now)
        case "chat/turnsLoaded":
            return _turns_loaded(state, action)
        case "chat/inputRequested":
            return requested(state, action, now)
        case "chat/inputAnswerChanged":
            return answer_changed(state, action, now)
        case "chat/inputCompleted":
            return completed(state, action, now)
        case "chat/pendingMessageSet":
            return _pending_set(state, action)
        case "chat/pendingMessageRemoved":
            return _pending_removed(state, action)
        case "chat/queuedMessagesReordered":
            return _reordered(state, action)
        case "chat/draftChanged":
            return put(state, "draft", action.get("draft"))
        case "chat/workingDirectorySet":
            return _dirs(
                state, set_member(state.get("workingDirectories"), action.get("directory"))
            )
        case "chat/workingDirectoryRemoved":
            dirs = unset_member(state.get("workingDirectories"), action.get("directory"))
            return _dirs(state, dirs)
        case _:
            return state
