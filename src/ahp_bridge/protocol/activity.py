"""Which chat actions are the chat's activity: the ones the host dates with its own time.

AHP 1.0 derives ``ChatState.modifiedAt`` from the actions and reads no clock. The host still
dates a chat's last activity (turns starting and ending, questions, answers, truncation) with
its own time, in two places that must agree: the session list's ``modifiedAt`` on every line
(the engine's activity clock), and the older lines' ``ChatState.modifiedAt``, whose 0.6.0,
0.7.0 and 0.8.0 reducers stamp their clock on exactly these actions when they apply (the 0.8
wire's own view, which 0.7 and 0.6 show too, and ``reduce_older``). Version-neutral: it reads a
canonical or an older chat state and action alike (the fields it looks at are the same in
all). :class:`ActivityTimes` is the memory both keep, fed by the envelopes; neither is
canonical state, so neither is in ``state/``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ActivityTimes", "chat_activity"]


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


class ActivityTimes:
    """The host's time of each chat's last activity, fed by the envelopes applied to it.

    A chat's time starts as the ``modifiedAt`` it was created with (read from the state before
    its first envelope: nothing else changes a channel's state) and becomes the host's time of
    each envelope that is activity (:func:`chat_activity`); an envelope the host gave no time
    leaves it as it is.
    """

    __slots__ = ("_at",)

    def __init__(self) -> None:
        #: Chats that had an envelope: their time (None: created without one, no activity yet).
        self._at: dict[str, str | None] = {}

    def observe(
        self,
        chat: str,
        before: dict[str, Any],
        action: dict[str, Any],
        changed: bool,
        at: str | None,
    ) -> None:
        """``action`` was applied to ``chat`` (in state ``before``) at the host's time ``at``;
        ``changed``: whether it changed the state."""
        if chat not in self._at:
            created = before.get("modifiedAt")
            self._at[chat] = created if isinstance(created, str) else None
        if at is not None and chat_activity(before, action, changed=changed):
            self._at[chat] = at

    def at(self, chat: str, state: dict[str, Any]) -> str | None:
        """When ``chat`` last had activity (None if never and it was created without a time);
        ``state`` is its current state, which before any envelope is the one it was created
        with."""
        if chat in self._at:
            return self._at[chat]
        created = state.get("modifiedAt")
        return created if isinstance(created, str) else None

    def forget(self, chat: str) -> None:
        """``chat`` is disposed (a chat made again under its URI starts afresh)."""
        self._at.pop(chat, None)
