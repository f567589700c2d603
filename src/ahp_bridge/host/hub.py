"""The hub: the one writer of AHP state and the fan-out of every envelope.

Everything that changes state goes through `Hub.apply` on the trio thread, in serverSeq order:
the store reduces and sequences, each subscriber gets the envelope's frames for its wire line
(translated and serialised once per line in use, cached on the envelope), and nothing ever
blocks the writer (a connection that cannot keep up disconnects itself; see `Connection.send`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from ahp_bridge.protocol.jsonrpc import notification_frame
from ahp_bridge.protocol.lens import Wire
from ahp_bridge.state.store import Envelope, Store


class Subscriber(Protocol):
    """What the hub needs of a connection: its wire line and a non-blocking send of a frame."""

    wire: Wire

    def send(self, frame: str) -> None: ...


class Hub:
    def __init__(self, store: Store, clock: Callable[[], str] | None = None) -> None:
        """`clock` is the host's time (ISO-8601) handed to the store with every action."""
        self.store = store
        self._clock = clock
        self._subs: dict[str, set[Subscriber]] = {}
        #: Observers of applied envelopes, called after fan-out (the session manager's status sync).
        self.observers: list[Callable[[Envelope], None]] = []
        #: Called with a channel when its last subscriber leaves (a resource watch ends then).
        self.unsubscribed: list[Callable[[str], None]] = []

    # -- subscriptions -------------------------------------------------------------------------

    def subscribe(self, sub: Subscriber, channel: str) -> None:
        self._subs.setdefault(channel, set()).add(sub)

    def unsubscribe(self, sub: Subscriber, channel: str) -> None:
        subs = self._subs.get(channel)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[channel]
                for callback in self.unsubscribed:
                    callback(channel)

    def drop(self, sub: Subscriber, channels: Iterable[str]) -> None:
        for channel in list(channels):
            self.unsubscribe(sub, channel)

    def forget_channel(self, channel: str) -> None:
        """A disposed channel has no subscribers any more (their connections stop hearing of it)."""
        self._subs.pop(channel, None)

    def subscribers(self, channel: str) -> frozenset[Subscriber]:
        return frozenset(self._subs.get(channel, ()))

    # -- writing -------------------------------------------------------------------------------

    def apply(
        self, channel: str, action: dict[str, Any], origin: dict[str, Any] | None = None
    ) -> Envelope:
        """Reduce, sequence, log and broadcast one action; returns its envelope.

        An action that names a turn older than a chat's loaded window gets the
        `chat/turnsLoaded` the spec requires first, so windowed clients reduce it alike.
        """
        preload = self.store.preload_for(channel, action)
        if preload is not None:
            self.apply(channel, preload)
        envelope = self.store.apply(channel, action, origin, at=self._clock)
        subs = self._subs.get(channel)
        if subs:
            for sub in tuple(subs):
                for frame in envelope.frames(sub.wire):
                    sub.send(frame)
        for observer in self.observers:
            observer(envelope)
        return envelope

    def reject(
        self,
        sub: Subscriber,
        channel: str,
        action: dict[str, Any],
        origin: dict[str, Any],
        reason: str,
    ) -> None:
        """Echo a refused client action to its sender only; state and serverSeq do not move."""
        sub.send(self.store.rejection(channel, action, origin, reason).frame)

    def notify(self, channel: str, method: str, params: dict[str, Any]) -> None:
        """Send an ephemeral protocol notification (never replayed) to a channel's subscribers,
        shaped and serialised once per wire line in use."""
        notify_each(tuple(self._subs.get(channel, ())), method, params)


def notify_each(subs: Iterable[Subscriber], method: str, params: dict[str, Any]) -> None:
    """Send one protocol notification to each of `subs` in its wire line (a line without it is
    skipped), shaped and serialised once per line in use."""
    frames: dict[str, str | None] = {}
    for sub in subs:
        line = sub.wire.line
        if line not in frames:
            shaped = sub.wire.notification(method, params)
            frames[line] = None if shaped is None else notification_frame(method, shaped)
        frame = frames[line]
        if frame is not None:
            sub.send(frame)
