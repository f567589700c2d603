"""One client connection: a reader that feeds the engine and a writer that drains the outbox.

The reader hands each message to the engine (through the shell) and, when the engine deferred
the request to the shell (a file to read, a provider to ask) or must restore a session first,
awaits that before it takes the next one: requests are handled one at a time, in arrival order,
so responses, snapshots and the envelopes that follow them reach the client in the order the
host produced them. Every message one read brought is handed over before any frame goes out
(`Shell.hold`), so a burst of actions is answered with one write per subscriber, not one per
action. What the engine put in the peer's outbox is then written at once when the writer is
idle and the socket takes it (`wake`, `WebSocket.try_write`); the writer task sends the rest,
and everything queued meanwhile, in one write (`frames.py`: each frame's bytes built once for
all subscribers). A client is read no faster than its own frames drain: the reader pauses
while the client's outbox is more than half full, so a client that floods requests is slowed
by TCP rather than cut off by its own answers. Nothing the host does
ever waits on a client: the outbox is bounded by the engine, which cuts off a client that lets it
fill up; then this connection sends only the frame already in flight and the close frame, within
`server.slow_client_grace`, or drops the socket.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import deque

import structlog
import trio

from ahp_bridge.engine import effects as fx
from ahp_bridge.engine import inputs
from ahp_bridge.engine.peers import Peer
from ahp_bridge.host.shell import Shell
from ahp_bridge.host.transport.frames import BATCH_BYTES, BATCH_FRAMES, text_frame
from ahp_bridge.host.transport.websocket import Closed, WebSocket
from ahp_bridge.host.transport.wirelog import WireLog

__all__ = ["CLOSE_NORMAL", "CLOSE_TOO_BIG", "Connection"]

log = structlog.get_logger(__name__)

#: How long a client that fell behind gets to take the frame in flight before its socket is
#: dropped without a close frame (a half-written frame cannot be followed by one); the
#: default of `server.slow_client_grace`.
ABANDON_GRACE = 10.0

#: Close codes (RFC 6455): 1009 message too big, 1000 normal, 1001 going away.
CLOSE_TOO_BIG = 1009
CLOSE_NORMAL = 1000
CLOSE_GOING_AWAY = 1001
GOING_AWAY = "going away: the bridge is stopping; reconnect when it is back"
#: How long a stopping bridge spends sending each client what was queued and the close frame;
#: the default of `server.shutdown_grace`.
SHUTDOWN_GRACE = 2.0
#: How long a cancelled bridge waits for a client's close reply (nobody can read it then).
_CLOSE_REPLY_WAIT = 0.1
#: How long a closing connection waits for the client's close reply.
_DISCONNECT_WAIT = 2.0

_ids = itertools.count(1)


class Connection:
    """The socket side of one peer."""

    def __init__(
        self,
        ws: WebSocket,
        shell: Shell,
        *,
        abandon_grace: float = ABANDON_GRACE,
        shutdown_grace: float = SHUTDOWN_GRACE,
        wire_log: WireLog | None = None,
    ) -> None:
        self.ws = ws
        self.shell = shell
        self.number = next(_ids)
        self.peer: Peer = shell.engine.open_peer(self.number)
        self._abandon_grace = abandon_grace
        self._shutdown_grace = shutdown_grace
        self._wire = wire_log
        self._wake = trio.Event()
        self._cancel: trio.CancelScope | None = None
        self._send_scope: trio.CancelScope | None = None
        self._close: tuple[int, str] | None = None
        self._draining = False
        self._abandon = False
        self._broken = False
        self.closed = False
        #: The writer task waits for a wake (nothing of ours is being written).
        self._idle = False
        #: Bytes taken from the outbox that a direct write could not finish: sent first.
        self._pending = b""
        #: Envelopes written directly, without the writer task (for tests and benches).
        self.direct_writes = 0
        #: The reader waits while the outbox holds more than this (half the outbound queue).
        self._read_pause = max(1, shell.engine.config.outbound_queue // 2)
        self._drained = trio.Event()

    @property
    def client_id(self) -> str | None:
        return self.peer.client_id

    # -- what the shell asks -------------------------------------------------------------------

    def wake(self) -> None:
        """Frames were queued: written at once when the writer is idle and the socket takes
        them (`WebSocket.try_write`), else by the writer task."""
        if self._idle and not self._pending and not (self._draining or self._abandon):
            outbox = self.peer.outbox
            while outbox:
                data = self._take_batch(outbox)
                written = self.ws.try_write(data)
                if written is None or written < len(data):
                    self._pending = data[written or 0 :]
                    break
                self.direct_writes += 1
            else:
                self._drained.set()
                return
        self._wake.set()

    def close(self, effect: fx.ClosePeer) -> None:
        """Stop serving this client and close its socket with the effect's code and reason.

        Frames already queued (such as the error that explains the close) are sent first,
        except to a client that fell behind: it gets only the frame already in flight, then the
        close frame. When the peer is already gone there is nothing left to send.
        """
        if self.closed:
            return
        self.closed = True
        if effect.drop_queued:
            log.warning("client too slow, disconnecting", conn=self.number, client=self.client_id)
            self._abandon = True
            self.peer.outbox.clear()
            if self._send_scope is not None:
                self._send_scope.deadline = trio.current_time() + self._abandon_grace
        self._close = None if effect.peer_gone else (effect.code, effect.reason)
        self._drained.set()
        self.shell.feed(inputs.PeerGone(self.peer))
        if effect.peer_gone:
            if self._cancel is not None:
                self._cancel.cancel()
            return
        self._draining = True
        self._wake.set()  # the writer sends what it must, then ends the connection

    def _gone(self) -> None:
        self.close(fx.ClosePeer(self.peer, CLOSE_NORMAL, "closed", peer_gone=True))

    # -- loops ---------------------------------------------------------------------------------

    async def run(self) -> None:
        self.shell.connection_opened(self.peer, self)
        try:
            with trio.CancelScope() as scope:
                self._cancel = scope
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._writer, nursery.cancel_scope)
                    await self._reader()
                    if not self._draining:
                        nursery.cancel_scope.cancel()
        finally:
            if not self.closed and not self._broken:
                # Still open yet leaving: the bridge is stopping (SIGTERM, Ctrl-C, a clean
                # stop). What was queued, then a 1001 close, so a client can tell a restart
                # from a crash.
                with trio.CancelScope(shield=True), trio.move_on_after(self._shutdown_grace):
                    await self._goodbye()
            self.shell.connection_closed(self.peer)
            if not self.closed:
                self.closed = True
                self.shell.feed(inputs.PeerGone(self.peer))
        if self._broken:
            await self.ws.abort()
        elif self._close is not None:
            code, reason = self._close
            with trio.move_on_after(2 * _DISCONNECT_WAIT + 1):
                await self.ws.close(code, reason, wait=_DISCONNECT_WAIT)
        else:
            with trio.move_on_after(_DISCONNECT_WAIT + 1):
                await self.ws.finish(wait=_DISCONNECT_WAIT)
            await self.ws.abort()

    async def _goodbye(self) -> None:
        """The bridge is being cancelled: what was queued, the close frame, then the TCP close.

        The WebSocket layer's reader is cancelled too, so the peer's close reply is never read;
        the server closes the TCP connection itself (RFC 6455: the server initiates it), which
        also tells a client waiting for that close that the connection is over.
        """
        self._close = None
        outbox = self.peer.outbox
        with contextlib.suppress(Closed):
            while self._pending or outbox:
                await self.ws.write(self._next_data(outbox))
            await self.ws.close(CLOSE_GOING_AWAY, GOING_AWAY, wait=_CLOSE_REPLY_WAIT)
        await self.ws.abort()

    async def _writer(self, scope: trio.CancelScope) -> None:
        outbox = self.peer.outbox
        try:
            while True:
                while self._pending or outbox:
                    if self._abandon:
                        # A client that fell behind gets nothing more that was queued, only
                        # the rest of a frame a direct write began (in flight, as a batch the
                        # writer began is), within the same grace.
                        outbox.clear()
                        if not self._pending:
                            break
                    data = self._next_data(outbox)
                    with trio.CancelScope() as send_scope:
                        self._send_scope = send_scope
                        if self._abandon:
                            send_scope.deadline = trio.current_time() + self._abandon_grace
                        await self.ws.write(data)
                    self._send_scope = None
                    if len(outbox) <= self._read_pause:
                        self._drained.set()
                    if send_scope.cancelled_caught:
                        self._broken = True
                        scope.cancel()
                        return
                if self._draining or self._abandon:
                    break
                self._wake = trio.Event()
                if outbox or self._pending:
                    continue
                self._idle = True
                try:
                    await self._wake.wait()
                finally:
                    self._idle = False
        except Closed:
            self._gone()
        scope.cancel()

    def _next_data(self, outbox: deque[str]) -> bytes:
        """What to write next: the rest of a direct write first, else a batch of the outbox."""
        if self._pending:
            data, self._pending = self._pending, b""
            return data
        return self._take_batch(outbox)

    def _take_batch(self, outbox: deque[str]) -> bytes:
        """What is queued, up to a batch, as the frames' bytes for one write."""
        parts: list[bytes] = []
        size = 0
        wire = self._wire
        while outbox and len(parts) < BATCH_FRAMES and size < BATCH_BYTES:
            frame = outbox.popleft()
            if wire is not None:
                wire.record(frame, "s2c", f"conn-{self.number}")
            part = text_frame(frame)
            parts.append(part)
            size += len(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def _reader(self) -> None:
        shell = self.shell
        outbox = self.peer.outbox
        while True:
            while len(outbox) > self._read_pause and not self.closed:
                self._drained = trio.Event()
                await self._drained.wait()
            try:
                messages = await self.ws.receive()
            except Closed as exc:
                if exc.code == CLOSE_TOO_BIG:
                    # The WebSocket layer closed it (its reason names the key, websocket.too_big);
                    # the operator's log says so too.
                    log.warning(
                        "client sent a frame over server.max_frame_bytes; closed with 1009",
                        conn=self.number,
                        client=self.client_id,
                    )
                self._gone()
                return
            shell.hold()
            try:
                for data in messages:
                    if self._wire is not None:
                        self._wire.record(data, "c2s", f"conn-{self.number}")
                    text = data if isinstance(data, str) else None
                    for deferred in shell.feed(inputs.Received(self.peer, text)):
                        shell.release()  # what was decided goes out before anything waits
                        await shell.serve(deferred)
                        shell.hold()
                    if self.closed:
                        return
            finally:
                shell.release()
