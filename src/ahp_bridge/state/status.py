"""SessionStatus bit flags shared by the session and chat reducers.

`SessionStatus` is a bitset on the wire: bits 0-4 hold the (mutually exclusive)
activity, higher bits are orthogonal flags that reducers must carry through.
"""

from __future__ import annotations

IDLE = 1
ERROR = 2
IN_PROGRESS = 8
INPUT_NEEDED = 24  # implies IN_PROGRESS (16 | 8)
IS_READ = 32
IS_ARCHIVED = 64

ACTIVITY_MASK = (1 << 5) - 1


def with_flag(status: int, flag: int, on: bool) -> int:
    """Set or clear `flag` in `status`."""
    return status | flag if on else status & ~flag


def with_activity(status: int, activity: int) -> int:
    """Replace the activity bits of `status`, keeping orthogonal flags."""
    return (status & ~ACTIVITY_MASK) | activity
