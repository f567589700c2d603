"""The suite's EventSink: records every event, wakes waiting checks, never blocks.

It also watches *how* the adapter calls it. ``emit`` is a plain synchronous call that
never blocks, so an adapter has no reason to wait for it; one that reaches ``emit``
through ``trio.from_thread.run``/``run_sync`` blocks its own thread until the host's
trio loop is free, and one that runs ``emit`` through ``trio.to_thread.run_sync``
suspends its task until a worker thread is free. Either way the adapter's progress
then depends on the host, which is what "emit never blocks the adapter" forbids. Both
are recognised structurally from the call stack (trio's thread hand-off frames), never
from timings. Direct calls from any thread and fire-and-forget hand-offs such as
``TrioToken.run_sync_soon`` are fine.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import TypeVar

import trio

from ahp_bridge.agentapi import Event

T = TypeVar("T")

_TRIO_THREADS = os.path.join("trio", "_threads.py")
# trio's wrappers that run a function on the trio thread for trio.from_thread.run(_sync).
_FROM_THREAD_FRAMES = frozenset({"unprotected_fn", "unprotected_afn"})
_MAX_STACK = 64


@dataclass(frozen=True)
class Emission:
    """One recorded emit call."""

    event: Event
    # The sink was closed (Close returned) before this call.
    late: bool
    # The call ran on the trio thread the sink was created on.
    on_trio_thread: bool
    # Why the call made the adapter wait for the host, or "" when it did not.
    blocking: str


def _blocking_call(on_trio_thread: bool) -> str:
    """How the adapter waited on this emit call, judged from trio frames on the stack."""
    frame: FrameType | None = sys._getframe(2)
    first = True
    depth = 0
    while frame is not None and depth < _MAX_STACK:
        code = frame.f_code
        if code.co_filename.endswith(_TRIO_THREADS):
            if on_trio_thread and code.co_name in _FROM_THREAD_FRAMES:
                return "emit was reached through trio.from_thread (the calling thread blocked)"
            if first and not on_trio_thread and code.co_name == "worker_fn":
                return "emit was run through trio.to_thread.run_sync (the caller awaited it)"
        first = False
        depth += 1
        frame = frame.f_back
    return ""


class RecordingSink:
    """A non-blocking, thread-safe EventSink that records for later inspection.

    Create it inside a trio run; ``emit`` may then be called from any thread. Checks
    wait for conditions on the recorded events with :meth:`wait_for`.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._emissions: list[Emission] = []
        self._closed = False
        self._thread = threading.get_ident()
        self._token = trio.lowlevel.current_trio_token()
        self._changed = trio.Event()

    def emit(self, event: Event) -> None:
        """Record ``event``; returns at once from any thread."""
        on_trio_thread = threading.get_ident() == self._thread
        blocking = _blocking_call(on_trio_thread)
        with self._lock:
            self._emissions.append(Emission(event, self._closed, on_trio_thread, blocking))
        if on_trio_thread:
            self._wake()
        else:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._wake)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def close(self) -> None:
        """Mark the conversation closed: every later event is recorded as late."""
        with self._lock:
            self._closed = True

    @property
    def emissions(self) -> list[Emission]:
        """A snapshot of every emit call so far, in order."""
        with self._lock:
            return list(self._emissions)

    @property
    def events(self) -> list[Event]:
        """A snapshot of every event so far, in order."""
        return [e.event for e in self.emissions]

    def __len__(self) -> int:
        with self._lock:
            return len(self._emissions)

    async def wait_for(self, found: Callable[[list[Event]], T | None]) -> T:
        """Wait until ``found(events)`` returns something other than None, and return it.

        There is no timeout here: the runner bounds each whole check.
        """
        while True:
            changed = self._changed
            result = found(self.events)
            if result is not None:
                return result
            await changed.wait()
