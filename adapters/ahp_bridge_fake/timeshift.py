"""Move the timestamps inside Go JSON events, so recordings keep only relative time.

Only values under the contract's time.Time keys are moved (never text that happens to look
like a time), and Go's zero time stays zero.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from ahp_bridge.agentapi import GO_ZERO_TIME, format_time

TIME_BASE = datetime(2000, 1, 1, tzinfo=UTC)
"""Recorded event times are written as TIME_BASE plus their distance from the start."""

TIME_KEYS = frozenset(
    {
        "time",
        "Time",
        "at",
        "At",
        "ended_at",
        "started_at",
        "changed_at",
        "calls_since",
        "tool_since",
        "next_run_at",
        "reset_at",
        "cache_expires_at",
    }
)


def shift_times(value: Any, offset: timedelta) -> Any:
    """A copy of a JSON value with every time under a TIME_KEYS key moved by offset."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in TIME_KEYS and isinstance(item, str) and item != GO_ZERO_TIME:
                out[key] = format_time(datetime.fromisoformat(item) + offset)
            else:
                out[key] = shift_times(item, offset)
        return out
    if isinstance(value, list):
        return [shift_times(item, offset) for item in value]
    return value
