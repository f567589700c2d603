"""WebSocket text frames built once per envelope, for every subscriber.

An envelope fanned out to many subscribers is one `str` object in every peer's outbox. A
server's frames are unmasked (RFC 6455 section 5.1), so the bytes of a text frame depend on its
payload alone: they are built once (`text_frame`, a small cache keyed by the frame string, which
every subscriber's outbox holds as the same object), and a connection writes everything queued
for it with one write (`WebSocket.write`, under the connection's send lock, so a close or pong
never interleaves with a batch). No extension is negotiated (the server offers none), so a data
frame has no per-connection state.
"""

from __future__ import annotations

import functools
import struct

__all__ = ["BATCH_BYTES", "BATCH_FRAMES", "text_frame"]

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
