"""WebSocket text frames built once per envelope and written to a socket in batches.

An envelope fanned out to many subscribers is one `str` object in every peer's outbox. Sent
through `WebSocketConnection.send_message`, each connection would encode it to UTF-8, frame it
and write it with one `send_all` of its own: per client, per frame. A server's frames are
unmasked (RFC 6455 section 5.1), so the bytes of a text frame depend on its payload alone: they
are built once (`text_frame`, a small cache keyed by the frame string, which every subscriber's
outbox holds as the same object) and a connection writes everything queued for it with one
`send_all` (`write_frames`), under trio-websocket's own send lock, so a close or pong from its
reader never interleaves with a batch. No extension is negotiated (trio-websocket's server offers
none), so a data frame has no per-connection state: wsproto only needs to know about the close.
"""

from __future__ import annotations

import functools
import os
import struct

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

__all__ = ["BATCH_BYTES", "BATCH_FRAMES", "text_frame", "try_write", "write_frames"]

#: Most frames and bytes one write takes: enough to empty a burst's queue in a few system
#: calls, small enough that a batch is not a long stall for a slow client's cut-off.
BATCH_FRAMES = 256
BATCH_BYTES = 1024 * 1024
#: Frames larger than this are built each time (the cache must stay small in bytes:
#: 512 entries of at most 64 KiB is at most 32 MiB, and in practice a few hundred KiB).
_CACHED_MAX = 64 * 1024


def _build(payload: bytes) -> bytes:
    size = len(payload)
    if size < 126:
        header = struct.pack("!BB", 0x81, size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", 0x81, 126, size)
    else:
        header = struct.pack("!BBQ", 0x81, 127, size)
    return header + payload


@functools.lru_cache(maxsize=512)
def _cached(frame: str) -> bytes:
    return _build(frame.encode())


def text_frame(frame: str) -> bytes:
    """The whole unmasked, unfragmented text frame (FIN set) carrying `frame`."""
    if len(frame) <= _CACHED_MAX // 4:  # at most 4 UTF-8 bytes a character
        return _cached(frame)
    return _build(frame.encode())


async def write_frames(ws: WebSocketConnection, data: bytes) -> None:
    """Write already-built frames to the connection's stream, as `send_message` would.

    Raises ConnectionClosed when the connection is closed or closing (nothing is written then)
    or the stream breaks, like trio-websocket's own send path (whose private lock and stream
    this uses; the version is pinned in pyproject.toml and the tests run every send path).
    """
    if ws._close_reason:
        raise ConnectionClosed(ws._close_reason)
    async with ws._stream_lock:
        try:
            await ws._stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            await ws._abort_web_socket()
            assert ws._close_reason is not None
            raise ConnectionClosed(ws._close_reason) from None


def try_write(ws: WebSocketConnection, data: bytes) -> int | None:
    """Write what the socket takes of `data` now, without waiting: the bytes written (0 when
    its buffer is full), or None when a direct write is not possible now (the connection is
    closing, trio-websocket is itself sending a control frame, or the stream is not a plain
    socket); the caller then hands `data` to `write_frames`, which waits.

    This is the path of a connection whose writer is idle: the host writes an envelope's frame
    straight after deciding it (as asyncio's transports do), instead of waking a task to make
    the same system call, which costs a trip through trio's scheduler per client per envelope.
    Only a write the socket cannot take at once goes through the writer task. A failed write
    (the peer is gone) also returns None: `write_frames` then meets the same error and closes
    the connection as it always does.
    """
    if ws._close_reason or ws._stream_lock.locked():
        return None
    stream = ws._stream
    socket = getattr(stream, "socket", None)
    if not isinstance(stream, trio.SocketStream) or socket is None:
        return None
    try:
        return os.write(socket.fileno(), data)
    except BlockingIOError:
        return 0
    except OSError:
        return None
