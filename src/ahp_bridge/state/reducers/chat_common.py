"""Shared pieces of the chat reducer: derived status and active-turn part updates."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import status as st
from ._util import JSON

BLOCKING_TOOL_STATUSES = frozenset(
    {"pending-confirmation", "pending-result-confirmation", "auth-required"}
)

PartUpdater = Callable[[JSON], JSON]


def active_parts(state: JSON) -> list[Any]:
    turn = state.get("activeTurn")
    return turn.get("responseParts", []) if isinstance(turn, dict) else []


def has_open_input(state: JSON) -> bool:
    return any(
        p.get("kind") == "inputRequest" and p.get("response") is None for p in active_parts(state)
    )


def has_blocking_tool(state: JSON) -> bool:
    return any(
        p.get("kind") == "toolCall"
        and (p.get("toolCall") or {}).get("status") in BLOCKING_TOOL_STATUSES
        for p in active_parts(state)
    )


def derive_status(state: JSON, *, error: bool = False) -> int:
    """Chat status: Error after chat/error, else InputNeeded, InProgress or Idle; flags kept."""
    if error:
        activity = st.ERROR
    elif has_open_input(state) or has_blocking_tool(state):
        activity = st.INPUT_NEEDED
    elif state.get("activeTurn"):
        activity = st.IN_PROGRESS
    else:
        activity = st.IDLE
    return st.with_activity(state.get("status", 0), activity)


def refresh_status(state: JSON) -> JSON:
    """Recompute `status`; returns `state` itself when it is already right."""
    status = derive_status(state)
    return state if status == state.get("status") else {**state, "status": status}


def matching_turn(state: JSON, turn_id: object) -> JSON | None:
    """The active turn if its id is `turn_id` (anything else makes an action a no-op)."""
    turn = state.get("activeTurn")
    if isinstance(turn, dict) and turn.get("id") == turn_id:
        return turn
    return None


def with_parts(state: JSON, turn: JSON, parts: list[Any]) -> JSON:
    return {**state, "activeTurn": {**turn, "responseParts": parts}}


def part_id(part: JSON) -> Any:
    """Identity used by chat/delta and chat/reasoning: tool calls match on toolCallId."""
    if part.get("kind") == "toolCall":
        return (part.get("toolCall") or {}).get("toolCallId")
    return part.get("id")


def update_part(state: JSON, turn_id: object, pid: object, fn: PartUpdater) -> JSON:
    """Apply `fn` to the first active-turn part whose id is `pid`."""
    turn = matching_turn(state, turn_id)
    if turn is None:
        return state
    parts = turn.get("responseParts", [])
    for i, part in enumerate(parts):
        if isinstance(part, dict) and part_id(part) == pid:
            updated = fn(part)
            if updated is part:
                return state
            return with_parts(state, turn, [*parts[:i], updated, *parts[i + 1 :]])
    return state


def update_tool_calls(state: JSON, turn_id: object, call_id: object, fn: PartUpdater) -> JSON:
    """Apply `fn` to every tool call `call_id` in the active turn `turn_id`."""
    turn = matching_turn(state, turn_id)
    if turn is None:
        return state
    changed = False
    parts = []
    for part in turn.get("responseParts", []):
        tc = part.get("toolCall") if part.get("kind") == "toolCall" else None
        if isinstance(tc, dict) and tc.get("toolCallId") == call_id:
            updated = fn(tc)
            if updated is not tc:
                part = {**part, "toolCall": updated}
                changed = True
        parts.append(part)
    return with_parts(state, turn, parts) if changed else state
