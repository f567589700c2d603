"""The queue a server stream drains: filled from trio (or any thread), taken by its worker.

Nothing here touches trio: ``push`` appends under a threading.Condition (a short lock, never
waiting on the client), and the stream's gRPC worker thread takes whatever is queued as one
batch. One stream attaches to a queue; ``end`` lets it finish after draining.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class StreamQueue(Generic[T]):
    """Items for one stream, bounded by ``limit``; ended once, attached once."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._cond = threading.Condition()  # an RLock: subclasses may call in while holding it
        self._queue: collections.deque[T] = collections.deque()
        self._ended = False  # nothing more is queued; the stream ends after draining
        self.attached = False

    def push(self, item: T) -> bool:
        """Queue item; False (and nothing queued) when ended or full."""
        with self._cond:
            if self._ended or len(self._queue) >= self._limit:
                return False
            self._queue.append(item)
            self._cond.notify_all()
            return True

    def end(self) -> None:
        with self._cond:
            self._ended = True
            self._cond.notify_all()

    # -- stream worker side --------------------------------------------------------------

    def attach(self) -> bool:
        """Claim the queue for one stream; False when a stream already has it."""
        with self._cond:
            if self.attached:
                return False
            self.attached = True
            return True

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def take(self, active: Callable[[], bool]) -> tuple[list[T], bool]:
        """Wait for items; return (batch, ended). Returns empty when the RPC went away."""
        with self._cond:
            while not self._queue and not self._ended and active():
                self._cond.wait(timeout=5.0)
            batch = list(self._queue)
            self._queue.clear()
            return batch, self._ended
