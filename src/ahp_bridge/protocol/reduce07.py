"""The 0.7 reducer path: a 0.7.0 reducer made of the canonical (1.0) one and the 0.7 lens.

``reduce_07(kind, state, action, now=..., canonical=reduce)`` lifts a 0.7.0 state and action to
the canonical shapes (``wire07.up_state`` / ``up_action``), reduces them with ``canonical`` (the
1.0 reducer, ``ahp_bridge.state.reducers.reduce``: passed in, since ``state/`` is a layer above
``protocol/``), and shows the result as 0.7.0 (``wire07.down_state``). What 1.0 changed in the
semantics, not the shapes, is put back, as the 0.7 wire's own views do on the host:

* the 0.7.0 reducer stamps ``modifiedAt`` with its clock (``now``) on the actions that are a
  chat's activity (``activity.chat_activity``) when they apply; 1.0 reads no clock;
* a session's status counts every input-needed entry (``wire07.session_status``).

This is what the host's 0.7 peers run, in effect: the 0.7.0 reducer fixtures pass through it,
and the test client of a 0.7 connection reduces what it receives with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ahp_bridge.protocol import wire07
from ahp_bridge.protocol.activity import chat_activity

__all__ = ["CanonicalReducer", "reduce_07"]

JSON = dict[str, Any]
#: ``reduce(kind, state, action)`` with 1.0 semantics.
CanonicalReducer = Callable[[str, JSON, JSON], JSON]


def reduce_07(
    kind: str,
    state: JSON,
    action: JSON,
    *,
    now: str,
    canonical: CanonicalReducer,
    channel: str = "",
) -> JSON:
    """Apply one 0.7.0 action to a 0.7.0 state of a channel of ``kind``; ``now`` is ISO-8601."""
    lifted_state = wire07.up_state(kind, state, channel=channel)
    lifted = wire07.up_action(kind, action, channel=channel)
    reduced = canonical(kind, lifted_state, lifted)
    stamped = kind == "chat" and chat_activity(state, action)
    if reduced is lifted_state and not stamped:
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
