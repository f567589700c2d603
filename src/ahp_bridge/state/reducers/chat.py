"""Reducer for ChatState (AHP 1.0 semantics): turns, response parts, pending messages.

The canonical state of every chat. Three 1.0 rules shape it (ahp-versions.md §1.3, §1.4):

* No clock: ``modifiedAt`` is the action's ``startedAt`` when a turn starts and
  ``startedAt + duration`` when it ends, and nothing else touches it.
* A turn's error is its last response part (``chat/error`` carries ``part: {kind: "error"}``),
  never ``Turn.error``; ``chat/responsePart`` cannot add one, and ``chat/turnResume`` reopens the
  latest turn when that part is ``resumable``.
* ``chat/turnStarted`` is a no-op when its ``turnId`` is already active or completed.

0.7 peers see this through the down-translation in ``protocol.wire07``.
"""

from __future__ import annotations

from typing import Any

from .. import status as st
from ._time import add_milliseconds
from ._util import JSON, compact, find_index, put, removed, set_member, unset_member, upsert_by
from .chat_common import derive_status, matching_turn, update_part, with_parts
from .chat_input import answer_changed, completed, requested
from .tool_calls import CANCELLED, COMPLETED, STREAMING, TOOL_CALL_ACTIONS, base, reduce_tool_call


def known_turn(state: JSON, turn_id: object) -> bool:
    """`turn_id` is the active turn's or a completed turn's (so `chat/turnStarted` is a no-op)."""
    active = state.get("activeTurn")
    if isinstance(active, dict) and active.get("id") == turn_id:
        return True
    return any(isinstance(t, dict) and t.get("id") == turn_id for t in state.get("turns") or ())


def _turn_started(state: JSON, action: JSON) -> JSON:
    if known_turn(state, action.get("turnId")):
        return state
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
    nxt = put(nxt, "modifiedAt", action.get("startedAt"))
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


def _end_turn(state: JSON, action: JSON, turn_state: str) -> JSON:
    active = matching_turn(state, action.get("turnId"))
    if active is None:
        return state
    duration = action.get("duration")
    # Producer-supplied and opaque; a negative duration would be nonsense.
    clamped = max(0, duration) if isinstance(duration, int | float) else 0
    is_error = turn_state == "error"
    parts = [_force_cancel(p) for p in active.get("responseParts", [])]
    error_part = action.get("part") if is_error else None
    if isinstance(error_part, dict):
        parts.append(error_part)
    turn = compact(
        {
            "id": active.get("id"),
            "startedAt": active.get("startedAt"),
            "duration": clamped,
            "message": active.get("message"),
            "responseParts": parts,
            "usage": active.get("usage"),
            "state": turn_state,
        }
    )
    nxt = {**state, "turns": [*state.get("turns", []), turn]}
    nxt.pop("activeTurn", None)
    modified = add_milliseconds(active.get("startedAt"), clamped)
    if modified is not None:
        nxt["modifiedAt"] = modified
    nxt["status"] = derive_status(nxt, error=is_error)
    return nxt


def resumable(turn: object) -> bool:
    """A turn that ended in an error whose (last) error part says it can be resumed."""
    if not isinstance(turn, dict) or turn.get("state") != "error":
        return False
    parts = turn.get("responseParts") or []
    last = parts[-1] if parts else None
    return isinstance(last, dict) and last.get("kind") == "error" and last.get("resumable") is True


def _turn_resume(state: JSON, action: JSON) -> JSON:
    """Reopen the latest turn, parts (the error included) and all, when it is resumable."""
    if state.get("activeTurn"):
        return state
    turns = state.get("turns") or []
    last = turns[-1] if turns else None
    if not isinstance(last, dict) or last.get("id") != action.get("turnId") or not resumable(last):
        return state
    reopened = compact(
        {
            "id": last.get("id"),
            "startedAt": last.get("startedAt") or state.get("modifiedAt"),
            "message": last.get("message"),
            "responseParts": last.get("responseParts"),
            "usage": last.get("usage"),
        }
    )
    nxt = {**state, "turns": turns[:-1], "activeTurn": reopened}
    nxt["status"] = st.with_flag(derive_status(nxt), st.IS_READ, False)
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
    # An error part only ever arrives with the chat/error that ends the turn.
    if turn is None or part is None or (isinstance(part, dict) and part.get("kind") == "error"):
        return state
    return with_parts(state, turn, [*turn.get("responseParts", []), part])


def _usage(state: JSON, action: JSON) -> JSON:
    turn = matching_turn(state, action.get("turnId"))
    if turn is None:
        return state
    return {**state, "activeTurn": put(turn, "usage", action.get("usage"))}


def _truncated(state: JSON, action: JSON) -> JSON:
    turn_id = action.get("turnId")
    turns = state.get("turns", [])
    if turn_id is None:
        kept: list[Any] = []
    else:
        idx = find_index(turns, lambda t: t.get("id") == turn_id)
        if idx < 0:
            return state
        kept = turns[: idx + 1]
    nxt = {**state, "turns": kept}
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


def _background_set(state: JSON, action: JSON) -> JSON:
    work = action.get("work")
    if not isinstance(work, dict):
        return state
    return {**state, "backgroundWork": upsert_by(state.get("backgroundWork") or [], "id", work)}


def _background_removed(state: JSON, action: JSON) -> JSON:
    work = state.get("backgroundWork") or []
    idx = find_index(work, lambda w: isinstance(w, dict) and w.get("id") == action.get("id"))
    return state if idx < 0 else {**state, "backgroundWork": removed(work, idx)}


def _flag(state: JSON, flag: int, on: object) -> JSON:
    return {**state, "status": st.with_flag(state.get("status", 0), flag, bool(on))}


def reduce_chat(state: JSON, action: JSON) -> JSON:
    """Pure reducer for chat channels; wrong turn ids and unknown actions are no-ops."""
    kind = action.get("type")
    if kind in TOOL_CALL_ACTIONS:
        return reduce_tool_call(state, action)
    match kind:
        case "chat/turnStarted":
            return _turn_started(state, action)
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
            return _end_turn(state, action, "complete")
        case "chat/turnCancelled":
            return _end_turn(state, action, "cancelled")
        case "chat/error":
            return _end_turn(state, action, "error")
        case "chat/turnResume":
            return _turn_resume(state, action)
        case "chat/activityChanged":
            return put(state, "activity", action.get("activity"))
        case "chat/truncated":
            return _truncated(state, action)
        case "chat/turnsLoaded":
            return _turns_loaded(state, action)
        case "chat/inputRequested":
            return requested(state, action)
        case "chat/inputAnswerChanged":
            return answer_changed(state, action)
        case "chat/inputCompleted":
            return completed(state, action)
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
        case "chat/backgroundWorkSet":
            return _background_set(state, action)
        case "chat/backgroundWorkRemoved":
            return _background_removed(state, action)
        case "chat/changesetsChanged":
            return put(state, "changesets", action.get("changesets"))
        case "chat/movableChanged":
            return put(state, "movable", action.get("movable"))
        case "chat/isReadChanged":
            return _flag(state, st.IS_READ, action.get("isRead"))
        case "chat/isArchivedChanged":
            return _flag(state, st.IS_ARCHIVED, action.get("isArchived"))
        case _:
            return state
