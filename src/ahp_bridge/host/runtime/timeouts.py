"""How a timeout of a provider call is reported (the bounds themselves: `engine.timeouts`)."""

from __future__ import annotations

import trio

from ahp_bridge.engine.timeouts import Timeouts, timeout_phrase

__all__ = ["Timeouts", "gave_up"]


def gave_up(exc: BaseException, timeouts: Timeouts, key: str) -> str:
    """What a log line says about a failed call: the timeout and its key, or the error's kind."""
    if isinstance(exc, trio.TooSlowError):
        return timeout_phrase(timeouts, key)
    return type(exc).__name__
