"""The reducer paths of the lines before 0.9: an older reducer made of the canonical (1.0) one
and the line's lens.

``reduce_07(kind, state, action, now=..., canonical=reduce)`` (and ``reduce_08``, ``reduce_06``)
lifts a state and an action of its line to the canonical shapes (the line's ``up_state`` /
``up_action``), reduces them with ``canonical`` (the 1.0 reducer,
``ahp_bridge.state.reducers.reduce``: passed in, since ``state/`` is a layer above
``protocol/``), and shows the result in the line's shapes (its ``down_state``). What 0.9 and 1.0
changed in the semantics, not the shapes, is put back, as the lines' own views do on the host:

* the 0.6.0, 0.7.0 and 0.8.0 reducers stamp ``modifiedAt`` with their clock (``now``) on the
  actions that are a chat's activity (``activity.chat_activity``) when they apply; 0.9 reads
  no clock;
* 0.6.0 and 0.7.0 count every input-needed entry for a session's status
  (``wire07.session_status``); from 0.8.0 a client execution does not count.

This is what the host's older peers run, in effect: the 0.7.0 reducer fixtures pass through
it, and the test client of a 0.6, 0.7 or 0.8 connection reduces what it receives with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from ahp_bridge.protocol import wire06, wire07, wire08
from ahp_bridge.protocol.activity import chat_activity

__all__ = [
    "LINE_06",
    "LINE_07",
    "LINE_08",
    "CanonicalReducer",
    "OlderLine",
    "reduce_06",
    "reduce_07",
    "reduce_08",
    "reduce_older",
]

JSON = dict[str, Any]
#: ``reduce(kind, state, action)`` with 1.0 semantics.
CanonicalReducer = Callable[[str, JSON, JSON], JSON]


@dataclass(frozen=True, slots=True)
class OlderLine:
    """What the reducer path of a line before 0.9 needs of its lens."""

    #: ``(kind, state, channel)``: a state of the line in the canonical shapes.
    up_state: Callable[[str, JSON, str], JSON]
    #: ``(kind, action, channel)``: an action of the line in the canonical shapes.
    up_action: Callable[[str, JSON, str], JSON]
    #: ``(kind, state, session_status)``: a canonical state in the line's shapes.
    down_state: Callable[[str, JSON, int | None], JSON]
    #: Whether a client execution counts for InputNeeded (0.6, 0.7: ``wire07.session_status``).
    counts_client_execution: bool


LINE_08: Final = OlderLine(
    lambda kind, state, channel: wire08.up_state(kind, state, channel=channel),
    lambda kind, action, channel: wire08.up_action(kind, action, channel=channel),
    lambda kind, state, _status: wire08.down_state(kind, state),
    counts_client_execution=False,
)
LINE_07: Final = OlderLine(
    lambda kind, state, channel: wire07.up_state(kind, state, channel=channel),
    lambda kind, action, channel: wire07.up_action(kind, action, channel=channel),
    lambda kind, state, status: wire07.down_state(kind, state, session_status=status),
    counts_client_execution=True,
)
LINE_06: Final = OlderLine(
    lambda kind, state, channel: wire06.up_state(kind, state, channel=channel),
    lambda kind, action, channel: wire06.up_action(kind, action, channel=channel),
    lambda kind, state, status: wire06.down_state(kind, state, session_status=status),
    counts_client_execution=True,
)


def reduce_older(
    line: OlderLine,
    kind: str,
    state: JSON,
    action: JSON,
    *,
    now: str,
    canonical: CanonicalReducer,
    channel: str = "",
) -> JSON:
    """Apply one action of ``line`` to a state of ``line`` of a channel of ``kind``; ``now`` is
    ISO-8601."""
    lifted_state = line.up_state(kind, state, channel)
    lifted = line.up_action(kind, action, channel)
    reduced = canonical(kind, lifted_state, lifted)
    stamped = kind == "chat" and chat_activity(state, action)
    if reduced is lifted_state and not stamped:
        return state
    status = None
    if kind == "session" and line.counts_client_execution:
        status = wire07.session_status(state.get("status", 0), lifted, reduced)
    out = line.down_state(kind, reduced, status)
    if kind == "chat":
        # The older reducers' clock, not 1.0's derived time: stamped where they stamp, kept
        # elsewhere.
        out = {k: v for k, v in out.items() if k != "modifiedAt"}
        if stamped:
            out["modifiedAt"] = now
        elif "modifiedAt" in state:
            out["modifiedAt"] = state["modifiedAt"]
    return state if out == state else out


def reduce_08(
    kind: str,
    state: JSON,
    action: JSON,
    *,
    now: str,
    canonical: CanonicalReducer,
    channel: str = "",
) -> JSON:
    """Apply one 0.8.0 action to a 0.8.0 state (see :func:`reduce_older`)."""
    return reduce_older(LINE_08, kind, state, action, now=now, canonical=canonical, channel=channel)


def reduce_07(
    kind: str,
    state: JSON,
    action: JSON,
    *,
    now: str,
    canonical: CanonicalReducer,
    channel: str = "",
) -> JSON:
    """Apply one 0.7.0 action to a 0.7.0 state (see :func:`reduce_older`)."""
    return reduce_older(LINE_07, kind, state, action, now=now, canonical=canonical, channel=channel)


def reduce_06(
    kind: str,
    state: JSON,
    action: JSON,
    *,
    now: str,
    canonical: CanonicalReducer,
    channel: str = "",
) -> JSON:
    """Apply one 0.6.0 action to a 0.6.0 state (see :func:`reduce_older`)."""
    return reduce_older(LINE_06, kind, state, action, now=now, canonical=canonical, channel=channel)
