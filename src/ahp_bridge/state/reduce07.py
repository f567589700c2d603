"""The 0.7 path of the canonical reducers: a 0.7.0 reducer made of the 1.0 one and the lens.

``reduce_07(kind, state, action, now)`` lifts a 0.7.0 state and action to the canonical shapes
(``wire07.up_state`` / ``up_action``), reduces at 1.0, and shows the result as 0.7.0
(``wire07.down_state``). What 1.0 changed in the semantics, not the shapes, is put back:

* the 0.7.0 reducer stamps ``modifiedAt`` with its clock (``now``) on the actions in
  ``wire07.CLOCK_STAMPED`` when they apply; 1.0 reads no clock;
* a session's status counts every input-needed entry (``wire07.session_status``).

This is what the host's 0.7 peers run, in effect: the 0.7.0 reducer fixtures pass through it,
and the test client of a 0.7 connection reduces what it receives with it.
"""

from __future__ import annotations

from typing import Any

from ahp_bridge.protocol import wire07

from .reducers import reduce
from .reducers.chat_common import matching_turn
from .reducers.chat_input import find_open_request

__all__ = ["reduce_07", "stamps_07"]


def stamps_07(state: dict[str, Any], action: dict[str, Any], *, changed: bool = True) -> bool:
    """Whether the 0.7.0 chat reducer's branch for ``action`` applies (and so stamps the clock).

    ``changed``: whether the canonical reducer changed the state. A turnStarted or turnResume
    it ignores (1.0's no-ops) reaches no 0.7 peer (``wire07.down_actions``), so stamps nothing.
    """
    match action.get("type"):
        case "chat/turnStarted":
            return changed
        case "chat/turnResume":  # reaches a 0.7 peer as chat/truncated + chat/turnStarted
            return changed and not state.get("activeTurn")
        case "chat/turnComplete" | "chat/turnCancelled" | "chat/error":
            return matching_turn(state, action.get("turnId")) is not None
        case "chat/truncated":
            turn_id = action.get("turnId")
            return turn_id is None or any(t.get("id") == turn_id for t in state.get("turns", []))
        case "chat/inputRequested":
            return isinstance(state.get("activeTurn"), dict) and isinstance(
                action.get("request"), dict
            )
        case "chat/inputAnswerChanged" | "chat/inputCompleted":
            return find_open_request(state, action.get("requestId")) is not None
        case _:
            return False


def reduce_07(
    kind: str, state: dict[str, Any], action: dict[str, Any], *, now: str, channel: str = ""
) -> dict[str, Any]:
    """Apply one 0.7.0 action to a 0.7.0 state of a channel of ``kind``; ``now`` is ISO-8601."""
    canonical = wire07.up_state(kind, state, channel=channel)
    lifted = wire07.up_action(kind, action, channel=channel)
    reduced = reduce(kind, canonical, lifted)
    stamped = kind == "chat" and stamps_07(state, action)
    if reduced is canonical and not stamped:
        return state
    status07 = None
    if kind == "session":
        status07 = wire07.session_status(state.get("status", 0), lifted, reduced)
    out = wire07.down_state(kind, reduced, session_status=status07)
    if kind == "chat":
        # 0.7.0's clock, not 1.0's derived time: stamped where 0.7.0 stamps, kept elsewhere.
        out = {k: v for k, v in out.items() if k != "modifiedAt"}
        if stamped:
            out["modifiedAt"] = now
        elif "modifiedAt" in state:
            out["modifiedAt"] = state["modifiedAt"]
    return state if out == state else out
