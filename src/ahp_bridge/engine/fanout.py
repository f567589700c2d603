"""The one writer of AHP state and the fan-out of every envelope, sans-IO.

Every state change goes through `Fanout.apply`, in serverSeq order: the store reduces and
sequences, the host's derived views take the envelope in (the chats' activity clock, and every
wire line's own views: `Wire.observe`, the same call on every line), and each subscribed peer
gets the envelope's frames for its wire line (shaped and serialised once per line in use,
cached on the envelope) in its outbox. Nothing blocks: a peer whose outbox is full is cut off
(`server.outbound_queue`) and recovers with `reconnect`.

Observers react to applied envelopes. Each registers for the action types it cares about and
*returns* what follows (`Reaction`s: further host actions, and effects for the shell); the
fan-out applies them in order after every observer of that envelope has spoken, so no observer
ever runs inside another's fan-out, and the order is the same on every run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ahp_bridge.engine.effects import ClosePeer, Effect, Flush, Run
from ahp_bridge.engine.jobs import ArchiveTurns
from ahp_bridge.engine.peers import Peer
from ahp_bridge.protocol.activity import ActivityTimes
from ahp_bridge.protocol.jsonrpc import notification_frame
from ahp_bridge.protocol.lens import Wire, wires
from ahp_bridge.protocol.versions import Line
from ahp_bridge.state.envelope import Envelope
from ahp_bridge.state.store import Store

__all__ = ["CLOSE_TOO_SLOW", "Fanout", "HostAction", "Later", "Observer", "Reaction"]

#: RFC 6455 1008, policy violation: the client fell behind.
CLOSE_TOO_SLOW = 1008
TOO_SLOW = "outbound queue full (server.outbound_queue): client too slow; reconnect to resume"


@dataclass(frozen=True, slots=True)
class HostAction:
    """An action the host applies itself (no origin)."""

    channel: str
    action: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Later:
    """Work an observer leaves for after every observer of the envelope has spoken (a chat
    told its session's active clients changed, a channel disposed once it was cleared)."""

    work: Callable[[], None]


Reaction = HostAction | Later | Effect
Observer = Callable[[Envelope], Iterable[Reaction]]


class Fanout:
    """Subscriptions, the store's single writer, and the frames each peer is owed."""

    def __init__(
        self, store: Store, *, outbound_queue: int = 4096, clock: Callable[[], str] | None = None
    ) -> None:
        """`clock` is the host's time (ISO-8601), read once per applied envelope (`Envelope.at`):
        what a chat's activity is dated with."""
        self.store = store
        self._limit = outbound_queue
        self._clock = clock
        #: This host's wire lines (a peer's `wire` is one of them), fed every envelope.
        self.wires: dict[Line, Wire] = wires()
        self._lines = tuple(self.wires.values())
        #: The action types whose envelope keeps the state it produced, for some line's sake.
        self._keep_post = frozenset().union(*(wire.post_state for wire in self._lines))
        #: When each chat last had activity, in the host's time: the session list's
        #: `modifiedAt` on every line (host-level, derived: not canonical, so not in the store).
        self._activity = ActivityTimes()
        self._subs: dict[str, dict[Peer, None]] = {}
        self._by_type: dict[str, list[Observer]] = {}
        self._any: list[Observer] = []
        #: Called with a channel when its last subscriber leaves (a resource watch ends then).
        self.unsubscribed: list[Callable[[str], Iterable[Reaction]]] = []
        self.effects: list[Effect] = []
        self._dirty: dict[Peer, None] = {}

    # -- observers -----------------------------------------------------------------------------

    def observe(self, observer: Observer, types: Iterable[str] | None = None) -> None:
        """Call `observer` after each envelope of one of `types` (every envelope: None)."""
        if types is None:
            self._any.append(observer)
            return
        for action_type in types:
            self._by_type.setdefault(action_type, []).append(observer)

    # -- subscriptions -------------------------------------------------------------------------

    def subscribe(self, peer: Peer, channel: str) -> None:
        peer.subscriptions.add(channel)
        self._subs.setdefault(channel, {})[peer] = None

    def unsubscribe(self, peer: Peer, channel: str) -> None:
        peer.subscriptions.discard(channel)
        subs = self._subs.get(channel)
        if subs is None or peer not in subs:
            return
        del subs[peer]
        if not subs:
            del self._subs[channel]
            for callback in self.unsubscribed:
                self._react(callback(channel))

    def drop(self, peer: Peer) -> None:
        """The peer is gone: it leaves every channel it was subscribed to."""
        for channel in list(peer.subscriptions):
            self.unsubscribe(peer, channel)

    def dispose(self, channel: str) -> None:
        """The channel is gone: the store forgets it (if it still holds it), so do the activity
        clock and every line's views, and its subscribers stop hearing of it."""
        if self.store.has(channel):
            self.store.dispose(channel)
        self._activity.forget(channel)
        for wire in self._lines:
            wire.forget(channel)
        for peer in self._subs.pop(channel, {}):
            peer.subscriptions.discard(channel)

    def subscribers(self, channel: str) -> tuple[Peer, ...]:
        return tuple(self._subs.get(channel, ()))

    # -- frames --------------------------------------------------------------------------------

    def send(self, peer: Peer, frame: str) -> None:
        """Queue one frame for `peer`; a full outbox cuts it off (it alone)."""
        if peer.closed:
            return
        outbox = peer.outbox
        outbox.append(frame)
        self._dirty[peer] = None
        if len(outbox) > self._limit:
            self.cut_off(peer)

    def cut_off(self, peer: Peer) -> None:
        """The peer fell behind: it gets the frame in flight, then a close."""
        self.effects.append(ClosePeer(peer, CLOSE_TOO_SLOW, TOO_SLOW, drop_queued=True))
        peer.closed = True

    def archive_evicted(self) -> None:
        """Turns the store evicted from chats' live state go to the archive, in order."""
        for evicted in self.store.take_evicted():
            self.effects.append(Run(ArchiveTurns(evicted.chat, evicted.start, evicted.turns)))

    def take_effects(self) -> list[Effect]:
        """Everything decided since the last call, and one `Flush` of the peers that got frames."""
        if self.store.has_evicted:  # a chat created with more turns than it keeps live
            self.archive_evicted()
        effects = self.effects
        if self._dirty:
            effects.append(Flush(tuple(self._dirty)))
            self._dirty = {}
        self.effects = []
        return effects

    # -- derived views -------------------------------------------------------------------------

    def active_at(self, chat: str) -> str | None:
        """When `chat` last had activity, in the host's time (turns starting and ending,
        questions, answers, truncation: `protocol.activity.chat_activity`), or the `modifiedAt`
        it was created with until then; KeyError for an unknown channel."""
        return self._activity.at(chat, self.store.state(chat))

    # -- writing -------------------------------------------------------------------------------

    def apply(
        self, channel: str, action: dict[str, Any], origin: dict[str, Any] | None = None
    ) -> Envelope:
        """Reduce, sequence, log and broadcast one action, then its observers' reactions.

        Before any frame of it is made, the envelope (dated with the host's time) feeds the
        chats' activity clock and every line's own views (`Wire.observe`, with the channel's
        state before and after it).

        An action that names a turn older than a chat's loaded window gets the
        `chat/turnsLoaded` the spec requires first, so windowed clients reduce it alike.
        """
        store = self.store
        preload = store.preload_for(channel, action)
        if preload is not None:
            self.apply(channel, preload)
        before = store.state(channel)
        at = self._clock() if self._clock is not None else None
        envelope = store.apply(channel, action, origin, at=at, keep_post=self._keep_post)
        if store.has_evicted:
            self.archive_evicted()
        after = store.state(channel)
        if envelope.kind == "chat":
            self._activity.observe(channel, before, action, envelope.changed, at)
        for wire in self._lines:
            wire.observe(envelope, before, after)
        subs = self._subs.get(channel)
        if subs:
            for peer in tuple(subs):
                for frame in envelope.frames(peer.wire):
                    self.send(peer, frame)
        observers = self._by_type.get(action["type"])
        if observers or self._any:
            reactions: list[Reaction] = []
            for observer in (*self._any, *(observers or ())):
                reactions.extend(observer(envelope))
            self._react(reactions)
        return envelope

    def apply_all(self, emitted: Iterable[tuple[str, dict[str, Any]]]) -> None:
        """Apply host actions in order, skipping channels that no longer exist."""
        has = self.store.has
        for channel, action in emitted:
            if has(channel):
                self.apply(channel, action)

    def _react(self, reactions: Iterable[Reaction]) -> None:
        for reaction in reactions:
            if isinstance(reaction, HostAction):
                if self.store.has(reaction.channel):
                    self.apply(reaction.channel, reaction.action)
            elif isinstance(reaction, Later):
                reaction.work()
            else:
                self.effects.append(reaction)

    def reject(
        self,
        peer: Peer,
        channel: str,
        action: dict[str, Any],
        origin: dict[str, Any],
        reason: str,
    ) -> None:
        """Echo a refused client action to its sender only; state and serverSeq do not move."""
        self.send(peer, self.store.rejection(channel, action, origin, reason).frame)

    def notify(self, channel: str, method: str, params: dict[str, Any]) -> None:
        """Send an ephemeral protocol notification (never replayed) to a channel's subscribers,
        shaped and serialised once per wire line in use."""
        self.notify_each(tuple(self._subs.get(channel, ())), method, params)

    def notify_each(self, peers: Sequence[Peer], method: str, params: dict[str, Any]) -> None:
        """One protocol notification to each of `peers` in its wire line (a line without it is
        skipped), shaped and serialised once per line in use."""
        frames: dict[str, str | None] = {}
        for peer in peers:
            line = peer.wire.line
            if line not in frames:
                shaped = peer.wire.notification(method, params)
                frames[line] = None if shaped is None else notification_frame(method, shaped)
            frame = frames[line]
            if frame is not None:
                self.send(peer, frame)
