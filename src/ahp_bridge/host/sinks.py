"""The EventSink the bridge hands to providers: non-blocking, thread-safe, closed at Close.

`emit` may be called from any thread (the Copilot SDK's asyncio thread, gRPC pump threads) or
from the trio thread itself. It never blocks: it schedules delivery on the trio thread through
the run's token, where the event is translated and applied in emit order. After `close`, late
events are dropped, which is how "events flow only until Close returns" holds for the bridge.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog
import trio

from ahp_bridge.agentapi import Event

log = structlog.get_logger(__name__)


class ChatSink:
    """Delivers one conversation's events to `deliver` on the trio thread, in order."""

    def __init__(self, deliver: Callable[[Event], None], token: trio.lowlevel.TrioToken) -> None:
        self._deliver = deliver
        self._token = token
        self.closed = False
        self.emitted = 0

    def emit(self, event: Event) -> None:
        if self.closed:
            return
        self.emitted += 1
        try:
            self._token.run_sync_soon(self._run, event)
        except trio.RunFinishedError:
            self.closed = True

    def _run(self, event: Event) -> None:
        if self.closed:
            return
        try:
            self._deliver(event)
        except Exception:
            # A bug in translation must not take the host down (this runs as a trio callback).
            log.exception("event delivery failed", kind=str(event.kind))

    def close(self) -> None:
        self.closed = True
