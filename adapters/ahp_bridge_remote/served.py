"""One served conversation's event queue: the EventSink given at Open, drained by its stream.

Events never touch trio on the server: ``emit`` appends to a deque under a
threading.Condition (safe from any thread, never waiting on the client), and the Events
stream's worker thread takes whatever is queued as one batch. A bound on the queue turns a
consumer that stopped reading into an explicit end (``overflowed``) instead of unbounded
memory or silently dropped events.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable

import trio

from ahp_bridge import agentapi

from .host_calls import ServedHostCalls


class Served:
    """One open conversation: the EventSink given at Open and the queue its stream drains."""

    def __init__(self, handle: str, limit: int) -> None:
        self.handle = handle
        self.conversation: agentapi.Conversation | None = None
        self._limit = limit
        self._cond = threading.Condition()
        self._queue: collections.deque[agentapi.Event] = collections.deque()
        self._ended = False  # no more events will be queued; the stream ends after draining
        self.overflowed = False
        self.attached = False
        self.attached_event = trio.Event()
        self.dropped = False  # scheduled for (or done with) closing on the server side
        self.host_calls: ServedHostCalls | None = None
        """The conversation's host tool calls, when it was opened with host tools."""

    def emit(self, event: agentapi.Event) -> None:
        """EventSink.emit: never blocks (a short lock), safe from any thread."""
        with self._cond:
            if self._ended:
                return
            if len(self._queue) >= self._limit:
                self.overflowed = True
                self._ended = True
                self._queue.clear()
            else:
                self._queue.append(event)
            self._cond.notify()

    def end(self) -> None:
        with self._cond:
            self._ended = True
            self._cond.notify()

    def wake(self) -> None:
        with self._cond:
            self._cond.notify()

    def attach(self) -> bool:
        with self._cond:
            if self.attached:
                return False
            self.attached = True
            return True

    def take(self, active: Callable[[], bool]) -> tuple[list[agentapi.Event], bool]:
        """Wait for events; return (batch, ended). Returns empty when the RPC went away."""
        with self._cond:
            while not self._queue and not self._ended and active():
                self._cond.wait(timeout=5.0)
            batch = list(self._queue)
            self._queue.clear()
            return batch, self._ended
