"""Merge adjacent streamed text actions, so a burst of provider deltas costs one envelope.

When a provider emits faster than the host drains (many deltas queued between two trio ticks),
the host translates the whole burst and merges each run of `chat/delta` (or `chat/reasoning`)
actions that append to the same part of the same turn on the same channel. The reducers only
append `content`, so the merged action reduces to exactly the same state; at low rates nothing
is queued and nothing changes. This is the "coalesce updates" latitude the spec gives hosts.
"""

from __future__ import annotations

from ._wire import Emitted

_STREAMED = frozenset({"chat/delta", "chat/reasoning"})


def coalesce(emitted: list[Emitted]) -> list[Emitted]:
    """The same actions, in order, with adjacent same-part text appends merged."""
    if len(emitted) < 2:
        return emitted
    out: list[Emitted] = []
    for channel, action in emitted:
        if out and action.get("type") in _STREAMED and "_meta" not in action:
            last_channel, last = out[-1]
            if (
                last_channel == channel
                and last.get("type") == action["type"]
                and "_meta" not in last
                and last.get("turnId") == action.get("turnId")
                and last.get("partId") == action.get("partId")
            ):
                out[-1] = (channel, {**last, "content": last["content"] + action["content"]})
                continue
        out.append((channel, action))
    return out
