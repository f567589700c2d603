"""Helpers for tests that drive a provider: an EventSink that records and can be awaited."""

from __future__ import annotations

import threading
from collections.abc import Callable

import trio

from ahp_bridge.agentapi import Event, EventKind, Interaction, InteractionState, TurnState


class EventLog:
    """An EventSink that keeps every event; ``wait_for`` blocks until one matches.

    ``emit`` is safe from any thread (a lock guards the list); waiting is trio-only and
    wakes on each new event from the trio thread.
    """

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._changed = trio.Event()

    def emit(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)
        try:
            trio.lowlevel.current_task()
        except RuntimeError:  # emitted from a foreign thread: waiters poll each second
            return
        self._changed.set()
        self._changed = trio.Event()

    def kinds(self) -> list[EventKind]:
        return [e.kind for e in self.events]

    async def wait_for(
        self, match: Callable[[Event], bool], *, after: int = 0, timeout: float = 3600
    ) -> Event:
        """The first event at index >= after that matches, waiting (trio time) if needed."""
        with trio.fail_after(timeout):
            seen = after
            while True:
                with self._lock:
                    snapshot = self.events[seen:]
                for event in snapshot:
                    if match(event):
                        return event
                seen += len(snapshot)
                changed = self._changed
                with trio.move_on_after(1):
                    await changed.wait()

    async def turn_end(self, *, after: int = 0) -> Event:
        """The next terminal turn event."""
        return await self.wait_for(
            lambda e: (
                e.kind is EventKind.TURN
                and e.turn is not None
                and e.turn.state is not TurnState.WORKING
            ),
            after=after,
        )

    async def pending(self, *, after: int = 0) -> Interaction:
        """The next interaction that is pending."""
        event = await self.wait_for(
            lambda e: (
                e.kind is EventKind.INTERACTION
                and e.interaction is not None
                and e.interaction.state is InteractionState.PENDING
            ),
            after=after,
        )
        assert event.interaction is not None
        return event.interaction
