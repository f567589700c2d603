"""The server's WebSocket layer (host/transport/websocket.py) against a raw client on 127.0.0.1:
the bytes a client really sends (masked frames, fragments, pings, bad UTF-8, an oversized
message, a request that is no upgrade), and what the layer makes of them."""

from __future__ import annotations

import base64
import functools
import os
from collections.abc import Awaitable, Callable

import trio
from websockets.frames import Close, Frame, Opcode

from ahp_bridge.host.transport.websocket import Closed, WebSocket, handshake

MAX = 64 * 1024
KEY = base64.b64encode(os.urandom(16)).decode()
UPGRADE = (
    "GET /?tkn=x HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    f"Sec-WebSocket-Key: {KEY}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://localhost:1\r\n\r\n"
).encode()

Session = Callable[[WebSocket], Awaitable[None]]


async def server(
    nursery: trio.Nursery, session: Session, refuse: bool = False, done: trio.Event | None = None
) -> int:
    """A listener on 127.0.0.1 that runs `session` on each accepted WebSocket (setting `done`
    when one ended); its port."""

    async def handler(stream: trio.SocketStream) -> None:
        try:
            await handle(stream)
        finally:
            if done is not None:
                done.set()

    async def handle(stream: trio.SocketStream) -> None:
        upgrade = await handshake(stream, max_size=MAX, timeout=5)
        if upgrade is None:
            return
        assert upgrade.path == "/?tkn=x" and upgrade.headers["origin"] == "http://localhost:1"
        if refuse:
            await upgrade.reject(403, "Forbidden: no\n")
            return
        ws = await upgrade.accept()
        if ws is not None:
            await session(ws)

    serve = functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
    listeners = await nursery.start(serve)
    return int(listeners[0].socket.getsockname()[1])


async def raw(port: int, request: bytes = UPGRADE) -> tuple[trio.SocketStream, bytes]:
    """A client socket that sent `request`; the server's HTTP answer (its head, and a body when
    the server closed after it; WebSocket bytes that came with a 101 are in `early[stream]`)."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    await stream.send_all(request)
    answer = b""
    with trio.fail_after(5):
        while b"\r\n\r\n" not in answer or not answer.startswith(b"HTTP/1.1 101"):
            chunk = await stream.receive_some(4096)
            if not chunk:
                break
            answer += chunk
    if answer.startswith(b"HTTP/1.1 101"):
        head, _, rest = answer.partition(b"\r\n\r\n")
        early[stream] = rest
        return stream, head
    return stream, answer


#: What a client read past the 101 answer (the server may write at once).
early: dict[trio.SocketStream, bytes] = {}


def frame(opcode: Opcode, data: bytes, fin: bool = True) -> bytes:
    return Frame(opcode, data, fin).serialize(mask=True)  # a client masks (RFC 6455 5.3)


async def frames_from(stream: trio.SocketStream) -> list[Frame]:
    """Every frame the server sends until it closes the connection."""
    data = early.pop(stream, b"")
    with trio.fail_after(5):
        while chunk := await stream.receive_some(65536):
            data += chunk
    out: list[Frame] = []
    while data:
        size = data[1] & 0x7F
        head = 2 + {126: 2, 127: 8}.get(size, 0)
        length = {126: int.from_bytes(data[2:4]), 127: int.from_bytes(data[2:10])}.get(size, size)
        out.append(Frame(Opcode(data[0] & 0x0F), data[head : head + length], bool(data[0] & 0x80)))
        data = data[head + length :]
    return out


async def test_a_burst_comes_out_of_one_read_and_fragments_are_joined(
    nursery: trio.Nursery,
) -> None:
    batches: list[list[str | bytes]] = []
    over: list[Closed] = []

    async def session(ws: WebSocket) -> None:
        try:
            while True:
                batches.append(await ws.receive())
        except Closed as closed:
            over.append(closed)

    done = trio.Event()
    port = await server(nursery, session, done=done)
    stream, answer = await raw(port)
    assert answer.startswith(b"HTTP/1.1 101")
    burst = b"".join(frame(Opcode.TEXT, f"m{i}".encode()) for i in range(5))
    burst += frame(Opcode.TEXT, b"frag", fin=False) + frame(Opcode.PING, b"p")
    burst += frame(Opcode.CONT, "ment é".encode(), fin=False) + frame(Opcode.CONT, b"!")
    burst += frame(Opcode.BINARY, b"\x00\x01")
    burst += frame(Opcode.CLOSE, Close(1000, "bye").serialize())
    await stream.send_all(burst)
    replies = await frames_from(stream)
    with trio.fail_after(5):
        await done.wait()
    assert [m for batch in batches for m in batch] == [
        "m0",
        "m1",
        "m2",
        "m3",
        "m4",
        "fragment é!",
        b"\x00\x01",
    ]
    assert len(batches) <= 2  # one read (or two, as TCP cut it): not one hand-over a message
    assert [(f.opcode, bytes(f.data)) for f in replies] == [
        (Opcode.PONG, b"p"),
        (Opcode.CLOSE, Close(1000, "bye").serialize()),
    ]
    assert [(c.code, c.reason) for c in over] == [(1000, "bye")]
    await stream.aclose()


async def test_bad_utf8_closes_with_1007_and_an_oversized_message_with_1009(
    nursery: trio.Nursery,
) -> None:
    over: list[Closed] = []

    async def session(ws: WebSocket) -> None:
        try:
            while True:
                await ws.receive()
        except Closed as closed:
            over.append(closed)

    for payload, code in ((b"\xff\xfe", 1007), (b"x" * (MAX + 1), 1009)):
        done = trio.Event()
        port = await server(nursery, session, done=done)
        stream, _ = await raw(port)
        await stream.send_all(frame(Opcode.TEXT, payload))
        [close] = await frames_from(stream)
        assert close.opcode is Opcode.CLOSE and Close.parse(bytes(close.data)).code == code
        if code == 1009:  # in the host's words: the key, the bound, what to do
            assert Close.parse(bytes(close.data)).reason == (
                f"a message over server.max_frame_bytes ({MAX:,} bytes): send less in one message"
            )
        await stream.aclose()
        with trio.fail_after(5):
            await done.wait()
    assert [c.code for c in over] == [1007, 1009]


async def test_a_refused_or_invalid_upgrade_is_an_http_answer(nursery: trio.Nursery) -> None:
    async def session(ws: WebSocket) -> None:
        raise AssertionError("no WebSocket may open")

    port = await server(nursery, session, refuse=True)
    stream, answer = await raw(port)
    assert answer.startswith(b"HTTP/1.1 403")
    assert answer.endswith(b"Forbidden: no\n") or b"Forbidden: no" in answer
    await stream.aclose()
    port = await server(nursery, session)
    stream, answer = await raw(port, UPGRADE.replace(b"Upgrade: websocket\r\n", b""))
    assert answer.startswith(b"HTTP/1.1 426")  # no Upgrade header: the protocol's own answer
    await stream.aclose()
    stream, answer = await raw(port, b"nonsense\r\n\r\n")
    assert answer == b""  # not HTTP at all: closed without a word
    await stream.aclose()


async def test_the_server_closes_and_waits_for_the_reply_then_drops_the_socket(
    nursery: trio.Nursery,
) -> None:
    async def session(ws: WebSocket) -> None:
        assert ws.try_write(b"\x81\x02hi") == 4  # a frame built by the host, written at once
        await ws.close(1001, "going away", wait=5)
        assert ws.closing and ws.try_write(b"\x81\x01x") is None

    port = await server(nursery, session)
    stream, _ = await raw(port)
    received = early.pop(stream, b"")
    with trio.fail_after(5):
        while len(received) < 4 + 2 + 2 + len("going away"):
            received += await stream.receive_some(4096)
    assert received[:4] == b"\x81\x02hi"
    await stream.send_all(frame(Opcode.CLOSE, Close(1001, "").serialize()))
    with trio.fail_after(5):
        assert await stream.receive_some(4096) == b""  # the server closed the TCP connection
    await stream.aclose()
