"""A server's WebSocket on a trio stream, driven by `websockets`' sans-I/O protocol.

The protocol (`websockets.server.ServerProtocol`, with its C speedups for unmasking) is fed the
bytes of each read and hands back everything they completed: the handshake request, then
frames, which this module assembles into messages. One read of a client that sent a burst
yields every message in it at once (`receive`), so the connection hands them to the engine
together and its frames go out once per read, not once per message. Control frames are the
protocol's: a ping is answered with a pong, a close with a close, an oversized message
(`max_size`, `server.max_frame_bytes`) fails the connection with 1009, invalid UTF-8 with
1007. Everything the protocol wants sent, and every frame the host writes, goes through one
send lock; `try_write` writes without waiting when nothing else is being written.

trio-websocket, which this replaces for the server, ran a reader task per connection that put
each message on a memory channel (a task switch per message) and parsed frames with wsproto in
pure Python: most of the bridge's cost per envelope at one subscriber (bench/fanout.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

import trio
from websockets.datastructures import Headers
from websockets.frames import Frame, Opcode
from websockets.http11 import Request
from websockets.protocol import SEND_EOF, State
from websockets.server import ServerProtocol

__all__ = ["Closed", "Upgrade", "WebSocket", "handshake"]

#: Bytes asked of the socket per read.
RECEIVE_BYTES = 256 * 1024

# websockets logs each connection at INFO through the standard library; the bridge says what
# matters itself (structlog), so the protocol's own logger is silenced.
_quiet = logging.getLogger("ahp_bridge.transport.websockets")
_quiet.addHandler(logging.NullHandler())
_quiet.propagate = False
_quiet.setLevel(logging.CRITICAL)

#: RFC 6455 close codes used here.
ABNORMAL = 1006
INVALID_DATA = 1007
MESSAGE_TOO_BIG = 1009


class Closed(Exception):
    """The connection is over: the close `code` and `reason` the peer sent, or the host's own
    when it failed the connection (1009 too big, 1007 invalid UTF-8), or 1006 when the
    connection just ended."""

    def __init__(self, code: int, reason: str = "") -> None:
        super().__init__(f"{code} {reason}".strip())
        self.code = code
        self.reason = reason


def _headers(headers: Headers) -> dict[str, str]:
    return {key.lower(): value for key, value in headers.raw_items()}


class WebSocket:
    """One open server-side WebSocket (see the module docstring)."""

    def __init__(
        self,
        stream: trio.SocketStream,
        protocol: ServerProtocol,
        early: Iterable[object] = (),
    ) -> None:
        self.stream = stream
        self.protocol = protocol
        self._lock = trio.Lock()
        self._parts: list[bytes] = []
        self._binary = False
        self._early = [e for e in early if isinstance(e, Frame)]
        self._over: Closed | None = None
        self._fd = stream.socket.fileno()

    @property
    def closing(self) -> bool:
        """A close was sent or received, or the connection failed: write nothing more."""
        return self._over is not None or self.protocol.state is not State.OPEN

    # -- reading -------------------------------------------------------------------------------

    async def receive(self) -> list[str | bytes]:
        """The next messages the peer sent: every message one read completed, at least one.
        Raises Closed once the connection is over (after the messages that came before)."""
        while True:
            if self._early:
                early, self._early = self._early, []
                messages = self._assemble(early)
            else:
                if self._over is not None:
                    raise self._over
                try:
                    data = await self.stream.receive_some(RECEIVE_BYTES)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                if data:
                    self.protocol.receive_data(data)
                else:
                    self.protocol.receive_eof()
                messages = self._assemble(self.protocol.events_received())
            await self._send_protocol_data()
            if (
                self._over is None
                and self.protocol.state in (State.CLOSING, State.CLOSED)
                and (self.protocol.close_rcvd is not None or self.protocol.eof_sent)
            ):
                self._over = self._closed()
            if messages:
                return messages

    def _assemble(self, events: Iterable[object]) -> list[str | bytes]:
        messages: list[str | bytes] = []
        for frame in events:
            if not isinstance(frame, Frame):
                continue
            if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
                self._binary = frame.opcode is Opcode.BINARY
                self._parts = [bytes(frame.data)]
            elif frame.opcode is Opcode.CONT:
                self._parts.append(bytes(frame.data))
            else:
                continue  # ping (answered by the protocol), pong, close
            if not frame.fin:
                continue
            data = self._parts[0] if len(self._parts) == 1 else b"".join(self._parts)
            self._parts = []
            if self._binary:
                messages.append(data)
                continue
            try:
                messages.append(data.decode())
            except UnicodeDecodeError as exc:
                self.protocol.fail(INVALID_DATA, f"invalid UTF-8 at position {exc.start}")
                break
        return messages

    def _closed(self) -> Closed:
        """Why the connection is over, as the peer or the host's own close put it."""
        received, sent = self.protocol.close_rcvd, self.protocol.close_sent
        if received is not None:
            return Closed(received.code, received.reason)
        if sent is not None:
            return Closed(sent.code, sent.reason)
        return Closed(ABNORMAL)

    # -- writing -------------------------------------------------------------------------------

    def try_write(self, data: bytes) -> int | None:
        """Write what the socket takes of `data` now, without waiting: the bytes written (0
        when its buffer is full), or None when a direct write is not possible (the connection
        is closing, or a write is under way); the caller then uses `write`."""
        if self.closing or self._lock.locked():
            return None
        try:
            return os.write(self._fd, data)
        except BlockingIOError:
            return 0
        except OSError:
            return None

    async def write(self, data: bytes) -> None:
        """Write `data` (already framed), waiting for the socket; Closed if it cannot be."""
        if self.closing:
            raise self._over or self._closed()
        async with self._lock:
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.protocol.fail(ABNORMAL)
                self._over = Closed(ABNORMAL, "the connection broke")
                raise self._over from None

    async def _send_protocol_data(self) -> None:
        """What the protocol wants sent (pongs, a close, the end of the stream: a half-close,
        so what the client still sends is read and dropped rather than answered with a reset
        that could destroy the close frame before the client reads it)."""
        for data in self.protocol.data_to_send():
            async with self._lock:
                try:
                    if data == SEND_EOF:
                        await self.stream.send_eof()
                    else:
                        await self.stream.send_all(data)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    await self.abort()
                    return

    # -- closing -------------------------------------------------------------------------------

    async def close(self, code: int, reason: str, *, wait: float) -> None:
        """Send a close frame (when still open), wait up to `wait` seconds for the peer's
        reply, then close the TCP connection (the server closes it, RFC 6455 section 7.1.1)."""
        if self.protocol.state is State.OPEN:
            self.protocol.send_close(code, reason)
            await self._send_protocol_data()
        with trio.move_on_after(wait):
            try:
                while True:
                    await self.receive()  # what still comes is dropped: the host said goodbye
            except Closed:
                pass
        await self.finish(wait=wait)

    async def finish(self, *, wait: float) -> None:
        """The connection is over: end our side of the stream, read and drop what the peer
        still sends until it closes its side (`wait` seconds at most), then close."""
        with trio.move_on_after(wait):
            try:
                if not self.protocol.eof_sent:
                    self.protocol.eof_sent = True
                    async with self._lock:
                        await self.stream.send_eof()
                while await self.stream.receive_some(RECEIVE_BYTES):
                    pass
            except (trio.BrokenResourceError, trio.ClosedResourceError, trio.BusyResourceError):
                pass
        await self.abort()

    async def abort(self) -> None:
        """Close the TCP connection now."""
        if self._over is None:
            self._over = self._closed() if self.protocol.state is State.CLOSED else None
        await trio.aclose_forcefully(self.stream)


class Upgrade:
    """A client's upgrade request, read: accept it (101) or refuse it (an HTTP status)."""

    def __init__(
        self,
        stream: trio.SocketStream,
        protocol: ServerProtocol,
        request: Request,
        early: Iterable[object],
    ) -> None:
        self.stream = stream
        self.protocol = protocol
        self.request = request
        self._early = early
        self.path = request.path
        #: The request's headers, names lower-cased.
        self.headers = _headers(request.headers)

    async def accept(self) -> WebSocket | None:
        """The open WebSocket; None when the request is no valid upgrade (the protocol answered
        it, 400 or 426, and the stream is closed)."""
        response = self.protocol.accept(self.request)
        self.protocol.send_response(response)
        websocket = WebSocket(self.stream, self.protocol, self._early)
        await websocket._send_protocol_data()
        if response.status_code != 101:
            await websocket.abort()
            return None
        return websocket

    async def reject(self, status: int, text: str) -> None:
        """Answer with `status` and `text` (plain text), then close the stream."""
        self.protocol.send_response(self.protocol.reject(status, text))
        websocket = WebSocket(self.stream, self.protocol)
        await websocket._send_protocol_data()
        await websocket.abort()


class _Protocol(ServerProtocol):
    """The protocol, with a 1009's reason in the host's words: the key that bounds a message,
    and what to do (the library's own names neither)."""

    def fail(self, code: int, reason: str = "") -> None:
        if code == MESSAGE_TOO_BIG and self.max_message_size is not None:
            reason = too_big(self.max_message_size)
        super().fail(code, reason)


def too_big(limit: int) -> str:
    """The close reason of a message over `server.max_frame_bytes` (at most 123 bytes)."""
    return f"a message over server.max_frame_bytes ({limit:,} bytes): send less in one message"


async def handshake(stream: trio.SocketStream, *, max_size: int, timeout: float) -> Upgrade | None:
    """Read the client's upgrade request (within `timeout` seconds); None when it sent none
    (or nothing valid, which the protocol answered itself) and the stream was closed."""
    protocol = _Protocol(max_size=max_size, logger=_quiet)
    with trio.move_on_after(timeout):
        while True:
            try:
                data = await stream.receive_some(RECEIVE_BYTES)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            if data:
                protocol.receive_data(data)
            else:
                protocol.receive_eof()
            events = protocol.events_received()
            for at, event in enumerate(events):
                if isinstance(event, Request):
                    return Upgrade(stream, protocol, event, events[at + 1 :])
            for out in protocol.data_to_send():  # an invalid request's answer (400, 431)
                if out != SEND_EOF:
                    await stream.send_all(out)
            if not data or protocol.state is not State.CONNECTING or protocol.eof_sent:
                break
    await trio.aclose_forcefully(stream)
    return None
