"""The EventSink the bridge hands to providers: non-blocking, thread-safe, closed at Close.

`emit` may be called from any thread (the Copilot SDK's asyncio thread, gRPC pump threads) or
from the trio thread itself. It never waits: it appends to a queue and, unless a drain is
already scheduled, schedules one on the trio thread through the run's token. A drain delivers
everything queued since, in emit order, as one batch, which lets the chat merge a burst of
deltas into one action. After `close`, late events are dropped, which is how "events flow only
until Close returns" holds for the bridge.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable

import structlog
import trio

from ahp_bridge.agentapi import Event

log = structlog.get_logger(__name__)


class ChatSink:
    """Delivers one conversation's events to `deliver` on the trio thread, in order, in batches."""

    def __init__(
        self, deliver: Callable[[list[Event]], None], token: trio.lowlevel.TrioToken
    ) -> None:
        self._deliver = deliver
        self._token = token
        self._queue: deque[Event] = deque()
        self._lock = threading.Lock()  # held for an append or a swap, never across a wait
        self._scheduled = False
        self.closed = False
        self.emitted = 0

    def emit(self, event: Event) -> None:
        if self.closed:
            return
        with self._lock:
            self.emitted += 1
            self._queue.append(event)
            if self._scheduled:
                return
            self._scheduled = True
        try:
            self._token.run_sync_soon(self._drain)
        except trio.RunFinishedError:
            self.closed = True

    def _drain(self) -> None:
        with self._lock:
            events = list(self._queue)
            self._queue.clear()
            self._scheduled = False
        if self.closed or not events:
            return
        try:
            self._deliver(events)
        except Exception:
            # A bug in translation must not take the host down (this runs as a trio callback).
            log.exception("event delivery failed", kinds=sorted({str(e.kind) for e in events}))

    def flush(self) -> None:
        """Deliver what is queued now (on the trio thread), ahead of the scheduled drain.

        A host tool call reaches the host as a direct call, which may overtake the events the
        provider emitted just before it (the tool's own item, the turn's start).
        """
        self._drain()

    def close(self) -> None:
        self.closed = True
