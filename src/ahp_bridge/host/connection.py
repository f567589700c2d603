"""One client connection: a reader that handles frames in order and a writer fed by a bounded queue.

Requests are handled one at a time in arrival order, so responses, snapshots and the action
envelopes that follow them reach the client in the order the host produced them. Nothing the
host does ever waits on a client: frames go into a bounded queue with `send_nowait`, and a
client that lets it fill up is disconnected with a clear close reason (it recovers with
`reconnect`), so it cannot slow the provider or the other clients.
"""

from __future__ import annotations

import contextlib
import itertools
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import structlog
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from ahp_bridge.protocol import jsonrpc
from ahp_bridge.protocol.errors import INVALID_REQUEST, RpcError
from ahp_bridge.protocol.lens import WIRES, Wire
from ahp_bridge.protocol.versions import V07

if TYPE_CHECKING:
    from ahp_bridge.host.rpc import RpcHandler
    from ahp_bridge.host.wirelog import WireLog

log = structlog.get_logger(__name__)

#: How long a client that fell behind gets to take the frame in flight before its socket is
#: dropped without a close frame (a half-written frame cannot be followed by one); the
#: default of `server.slow_client_grace`.
ABANDON_GRACE = 10.0

#: Close codes (RFC 6455): 1008 policy violation (the client fell behind), 1002 protocol error.
CLOSE_TOO_SLOW = 1008
CLOSE_TOO_BIG = 1009
CLOSE_PROTOCOL = 1002
CLOSE_NORMAL = 1000

_ids = itertools.count(1)


class Connection:
    """State of one WebSocket client: handshake, subscriptions and its outbound queue."""

    def __init__(
        self,
        ws: WebSocketConnection,
        rpc: RpcHandler,
        *,
        queue_size: int = 4096,
        max_subscriptions: int = 1024,
        remembered_ids: int = 4096,
        max_json_depth: int = jsonrpc.MAX_DEPTH,
        abandon_grace: float = ABANDON_GRACE,
        wire_log: WireLog | None = None,
    ) -> None:
        self.ws = ws
        self.rpc = rpc
        self.number = next(_ids)
        self.client_id: str | None = None
        self.protocol_version: str | None = None
        #: The wire line fixed at `initialize` (or `reconnect`): every shape sent and accepted.
        self.wire: Wire = WIRES[V07]
        self.subscriptions: set[str] = set()
        self.max_subscriptions = max_subscriptions
        self._send_q, self._recv_q = trio.open_memory_channel[str](queue_size)
        self._seen_ids: OrderedDict[jsonrpc.RequestId, None] = OrderedDict()
        self._remembered_ids = remembered_ids
        self._max_json_depth = max_json_depth
        self._abandon_grace = abandon_grace
        self._cancel: trio.CancelScope | None = None
        self._close: tuple[int, str] | None = None
        self._draining = False
        self._abandon = False
        self._broken = False
        self._send_scope: trio.CancelScope | None = None
        self.closed = False
        #: Records every frame in and out when the operator turned the wire log on.
        self._wire = wire_log

    @property
    def initialized(self) -> bool:
        return self.client_id is not None

    # -- outbound ------------------------------------------------------------------------------

    def send(self, frame: str) -> None:
        """Queue one text frame; never blocks. A full queue disconnects this client only."""
        if self.closed:
            return
        if self._wire is not None:
            self._wire.record(frame, "s2c", f"conn-{self.number}")
        try:
            self._send_q.send_nowait(frame)
        except trio.WouldBlock:
            log.warning("client too slow, disconnecting", conn=self.number, client=self.client_id)
            self._abandon = True
            if self._send_scope is not None:
                self._send_scope.deadline = trio.current_time() + self._abandon_grace
            self.close(
                CLOSE_TOO_SLOW,
                "outbound queue full (server.outbound_queue): client too slow; reconnect to resume",
            )

    def close(self, code: int, reason: str, *, peer_gone: bool = False) -> None:
        """Stop serving this client and close its socket with `code` and `reason`.

        Frames already queued (such as the error that explains the close) are sent first,
        except to a client that fell behind: it gets only the frame already in flight, then
        the close frame. When the peer is already gone there is nothing left to send.
        """
        if self.closed:
            return
        self.closed = True
        self._close = None if peer_gone else (code, reason)
        self.rpc.connection_lost(self)
        if peer_gone:
            if self._cancel is not None:
                self._cancel.cancel()
            return
        self._draining = True
        self._send_q.close()  # the writer sends what it must, then ends the connection

    # -- loops ---------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            with trio.CancelScope() as scope:
                self._cancel = scope
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._writer, nursery.cancel_scope)
                    await self._reader()
                    if not self._draining:
                        nursery.cancel_scope.cancel()
        finally:
            if not self.closed:
                self.closed = True
                self.rpc.connection_lost(self)
        if self._broken:
            await trio.aclose_forcefully(self.ws._stream)
        elif self._close is not None:
            code, reason = self._close
            with trio.move_on_after(2):
                with contextlib.suppress(ConnectionClosed):
                    await self.ws.aclose(code=code, reason=reason)

    async def _writer(self, scope: trio.CancelScope) -> None:
        try:
            async for frame in self._recv_q:
                if self._abandon:
                    break  # a client that fell behind gets nothing more that was queued
                with trio.CancelScope() as send_scope:
                    self._send_scope = send_scope
                    await self.ws.send_message(frame)
                self._send_scope = None
                if send_scope.cancelled_caught:
                    self._broken = True
                    break
        except ConnectionClosed:
            self.close(CLOSE_NORMAL, "closed", peer_gone=True)
        scope.cancel()

    async def _reader(self) -> None:
        while True:
            try:
                data = await self.ws.get_message()
            except ConnectionClosed as exc:
                if exc.reason is not None and exc.reason.code == CLOSE_TOO_BIG:
                    # The WebSocket layer closed it with its own words; the operator gets the key.
                    log.warning(
                        "client sent a frame over server.max_frame_bytes; closed with 1009",
                        conn=self.number,
                        client=self.client_id,
                    )
                self.close(CLOSE_NORMAL, "closed", peer_gone=True)
                return
            if self._wire is not None:
                self._wire.record(data, "c2s", f"conn-{self.number}")
            if isinstance(data, bytes):
                self.send_error(
                    None,
                    RpcError(INVALID_REQUEST, "Invalid request: binary frames are not accepted"),
                )
                continue
            await self.handle_frame(data)
            if self.closed:
                return

    async def handle_frame(self, text: str) -> None:
        msg = jsonrpc.parse(text, max_depth=self._max_json_depth)
        if isinstance(msg, jsonrpc.Invalid):
            self.send_error(msg.id, msg.error)
        elif isinstance(msg, jsonrpc.Request):
            if msg.id in self._seen_ids:
                self.send_error(
                    msg.id,
                    RpcError(
                        INVALID_REQUEST,
                        f"Invalid request: duplicate id {msg.id!r}; use a new id for each "
                        "request (the last server.remembered_request_ids are remembered)",
                    ),
                )
                return
            self._remember(msg.id)
            await self.rpc.handle_request(self, msg)
        elif isinstance(msg, jsonrpc.Notification):
            await self.rpc.handle_notification(self, msg)
        # Responses: the host sends no requests, so there is nothing to match them to.

    def _remember(self, msg_id: jsonrpc.RequestId) -> None:
        self._seen_ids[msg_id] = None
        if len(self._seen_ids) > self._remembered_ids:
            self._seen_ids.popitem(last=False)

    # -- helpers for handlers ------------------------------------------------------------------

    def send_result(self, msg_id: jsonrpc.RequestId, result: Any) -> None:
        self.send(jsonrpc.result_frame(msg_id, result))

    def send_error(self, msg_id: jsonrpc.RequestId | None, error: RpcError) -> None:
        code = self.wire.error_code(error.code)
        if code != error.code:
            error = RpcError(code, error.message, error.data)
        self.send(jsonrpc.error_frame(msg_id, error))
