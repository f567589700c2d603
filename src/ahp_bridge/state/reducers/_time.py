"""ISO-8601 timestamps as the reference reducers compute them, without reading a clock.

Since AHP 0.9 no reducer reads the clock: a chat's ``modifiedAt`` is the action's ``startedAt``
when a turn starts and ``startedAt + duration`` when it ends (``addMillisecondsToTimestamp``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta


def add_milliseconds(timestamp: object, ms: object) -> str | None:
    """``timestamp + ms`` in JavaScript's ``toISOString`` form, or None when either is unusable."""
    if not isinstance(timestamp, str) or isinstance(ms, bool) or not isinstance(ms, int | float):
        return None
    try:
        moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        moment = (moment + timedelta(milliseconds=ms)).astimezone(UTC)
    except (OverflowError, ValueError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
