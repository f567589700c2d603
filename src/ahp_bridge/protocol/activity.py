"""Which chat actions are the chat's activity: the ones the host dates with its own time.

AHP 1.0 derives ``ChatState.modifiedAt`` from the actions and reads no clock. The host still
dates a chat's last activity (turns starting and ending, questions, answers, truncation) with
its own time, in two places that must agree: the session list's ``modifiedAt`` on every line
(the engine's activity clock), and 0.7's ``ChatState.modifiedAt``, whose 0.7.0 reducer stamps
its clock on exactly these actions when they apply (the 0.7 wire's own view, and
``reduce07``). Version-neutral: it reads a canonical or a 0.7.0 chat state and action alike
(the fields it looks at are the same in both).
"""

from __future__ import annotations

from typing import Any

__all__ = ["chat_activity"]


def chat_activity(state: dict[str, Any], action: dict[str, Any], *, changed: bool = True) -> bool:
    """Whether ``action``, applied to the chat ``state``, is activity (0.7.0's reducer branch
    for it applies, and so stamps its clock).

    ``changed``: whether the canonical reducer changed the state. A turnStarted or turnResume
    it ignores (1.0's no-ops) is no activity, and reaches no 0.7 peer (``wire07.down_actions``).
    """
    match action.get("type"):
        case "chat/turnStarted":
            return changed
        case "chat/turnResume":  # reaches a 0.7 peer as chat/truncated + chat/turnStarted
            return changed and not state.get("activeTurn")
        case "chat/turnComplete" | "chat/turnCancelled" | "chat/error":
            return _active_turn(state, action.get("turnId")) is not None
        case "chat/truncated":
            turn_id = action.get("turnId")
            return turn_id is None or any(t.get("id") == turn_id for t in state.get("turns", []))
        case "chat/inputRequested":
            return isinstance(state.get("activeTurn"), dict) and isinstance(
                action.get("request"), dict
            )
        case "chat/inputAnswerChanged" | "chat/inputCompleted":
            return _open_request(state, action.get("requestId"))
        case _:
            return False


def _active_turn(state: dict[str, Any], turn_id: object) -> dict[str, Any] | None:
    """The active turn if its id is ``turn_id`` (as the reducers' ``matching_turn``)."""
    turn = state.get("activeTurn")
    if isinstance(turn, dict) and turn.get("id") == turn_id:
        return turn
    return None


def _open_request(state: dict[str, Any], request_id: object) -> bool:
    """Whether the active turn holds the open input request ``request_id`` (as the reducers'
    ``find_open_request``)."""
    turn = state.get("activeTurn")
    if not isinstance(turn, dict):
        return False
    return any(
        part.get("kind") == "inputRequest"
        and part.get("response") is None
        and (part.get("request") or {}).get("id") == request_id
        for part in turn.get("responseParts", [])
    )
