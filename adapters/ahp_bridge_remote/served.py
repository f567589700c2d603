"""One served conversation's event queue: the EventSink given at Open, drained by its stream.

Events never touch trio on the server: ``emit`` queues them on a StreamQueue (safe from any
thread, never waiting on the client), and the Events stream's worker thread takes whatever is
queued as one batch. A bound on the queue turns a consumer that stopped reading into an
explicit end (``overflowed``) instead of unbounded memory or silently dropped events.
"""

from __future__ import annotations

import trio

from ahp_bridge import agentapi

from .host_calls import ServedHostCalls
from .stream_queue import StreamQueue


class Served(StreamQueue[agentapi.Event]):
    """One open conversation: the EventSink given at Open and the queue its stream drains."""

    def __init__(self, handle: str, limit: int) -> None:
        super().__init__(limit)
        self.handle = handle
        self.conversation: agentapi.Conversation | None = None
        self.overflowed = False
        self.attached_event = trio.Event()
        self.dropped = False  # scheduled for (or done with) closing on the server side
        self.host_calls: ServedHostCalls | None = None
        """The conversation's host tool calls, when it was opened with host tools."""

    def emit(self, event: agentapi.Event) -> None:
        """EventSink.emit: never blocks (a short lock), safe from any thread."""
        with self._cond:  # held throughout, so a full queue ends before anything else is queued
            if self.push(event) or self._ended:
                return
            self.overflowed = True
            self._queue.clear()
            self.end()
