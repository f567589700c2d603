"""One client connection's limits over real WebSockets on 127.0.0.1.

The cut-off of a client that stopped reading is exact only seen from the connection itself: the
test below drives a `Connection` directly (a real server socket, a real client that never reads,
a real engine and shell with nothing else in them) and offers it frames one by one through the
engine's fan-out, so it knows which frame found the outbox full. The memory of
request ids is tested through the whole bridge, set by its config key (the grace a client that
fell behind gets is in test_host_core.py).
"""

from __future__ import annotations

import functools
from typing import Any

import orjson
import trio
from trio_websocket import ConnectionClosed

from ahp_bridge.engine.core import Engine, EngineConfig
from ahp_bridge.engine.fanout import CLOSE_TOO_SLOW
from ahp_bridge.host.shell import Shell
from ahp_bridge.host.transport.connection import Connection
from ahp_bridge.host.transport.websocket import handshake
from ahp_bridge.state.store import Store
from tests.e2e.conftest import StartBridge
from tests.support.ahp_client import connect

ROOT = "ahp-root://"
QUEUE = 8
PAD = "x" * 60_000  # big frames fill the socket buffers in a few hundred sends


async def serve_connections(nursery: trio.Nursery, shell: Shell) -> tuple[str, list[Connection]]:
    """A listener on 127.0.0.1 whose every client is a `Connection` of `shell`: its URL, and
    the connections as they are accepted."""
    accepted: list[Connection] = []

    async def handler(stream: trio.SocketStream) -> None:
        upgrade = await handshake(stream, max_size=1 << 20, timeout=10)
        assert upgrade is not None
        ws = await upgrade.accept()
        assert ws is not None
        conn = Connection(ws, shell)
        accepted.append(conn)
        await conn.run()

    serve = functools.partial(trio.serve_tcp, handler, 0, host="127.0.0.1")
    listeners = await nursery.start(serve)
    return f"ws://127.0.0.1:{listeners[0].socket.getsockname()[1]}/", accepted


def bare_shell(nursery: trio.Nursery) -> Shell:
    """An engine with no providers and an outbox of QUEUE frames, in its shell."""
    engine = Engine(
        Store(), {}, EngineConfig(outbound_queue=QUEUE), now_ms=lambda: 0, new_id=lambda: "x"
    )
    return Shell(engine, nursery)


async def test_a_client_that_fell_behind_gets_nothing_that_was_queued_for_it(
    nursery: trio.Nursery,
) -> None:
    shell = bare_shell(nursery)
    url, accepted = await serve_connections(nursery, shell)

    def offer(conn: Connection, n: int) -> None:
        shell.engine.fanout.send(conn.peer, orjson.dumps({"n": n, "pad": PAD}).decode())
        shell.settle()

    ws = await connect(nursery, url, message_queue_size=1)  # and never reads
    try:
        with trio.fail_after(10):
            while not accepted:
                await trio.sleep(0.01)
        (conn,) = accepted

        # Offer frames one at a time, letting the writer hand each to the socket, until the
        # socket stops taking them, the queue fills and the frame `cut` finds it full.
        offered = 0
        with trio.fail_after(30):
            while not conn.closed:
                offer(conn, offered)
                offered += 1
                await trio.sleep(0)
        cut = offered - 1
        offer(conn, offered)  # after the cut-off: dropped

        received: list[int] = []
        with trio.fail_after(10):
            try:
                while True:
                    received.append(orjson.loads(await ws.get_message())["n"])
            except ConnectionClosed as closed:
                reason = closed.reason
        assert reason is not None and reason.code == CLOSE_TOO_SLOW
        assert "too slow" in (reason.reason or "")
        # At the cut-off the writer was in the middle of frame cut-QUEUE-1 and the outbox held the
        # QUEUE frames after it. The client gets the frame in flight, then the close: none of the
        # queued frames, nor the one that overflowed, nor any offered later.
        assert received == list(range(cut - QUEUE)), (cut, received[-3:])
        assert conn.peer.closed and not conn.peer.outbox
    finally:
        await trio.aclose_forcefully(ws._stream)


# A memory of request ids smaller than the default (server.remembered_request_ids = 4096).
REMEMBERED_IDS = 200


def ping(msg_id: str) -> str:
    return orjson.dumps(
        {"jsonrpc": "2.0", "id": msg_id, "method": "ping", "params": {"channel": ROOT}}
    ).decode()


async def test_the_memory_of_request_ids_is_bounded_and_keeps_the_recent_ones(
    start_bridge: StartBridge,
) -> None:
    """After many requests the connection remembers exactly the last REMEMBERED_IDS ids: a
    recent id (the oldest one kept, too) is still refused as a duplicate, an older one is
    forgotten and accepted again, so the memory cannot grow with the number of requests."""
    bridge = await start_bridge(remembered_request_ids=REMEMBERED_IDS)
    client = await bridge.client()
    extra = 100
    total = REMEMBERED_IDS + extra
    for i in range(total):
        await client.send_raw(ping(f"r{i}"))
    await client.wait_for(lambda: len(client.frames) >= total + 1, timeout=60)
    answered = [f for f in client.frames if str(f.get("id", "")).startswith("r")]
    assert [f["id"] for f in answered] == [f"r{i}" for i in range(total)]
    assert all(f.get("result", "missing") is None for f in answered)

    async def answer(msg_id: str) -> dict[str, Any]:
        before = len(client.frames)
        await client.send_raw(ping(msg_id))
        await client.wait_for(lambda: len(client.frames) > before)
        frame: dict[str, Any] = client.frames[-1]
        assert frame["id"] == msg_id
        return frame

    newest, oldest_kept, forgotten = f"r{total - 1}", f"r{extra}", f"r{extra - 1}"
    for msg_id in (newest, oldest_kept):
        refused = await answer(msg_id)
        assert refused["error"]["code"] == -32600, refused
        assert f"duplicate id {msg_id!r}" in refused["error"]["message"]
        assert "server.remembered_request_ids" in refused["error"]["message"]
    assert (await answer(forgotten))["result"] is None


async def test_frames_go_straight_to_an_idle_socket_and_through_the_writer_when_it_is_full(
    nursery: trio.Nursery,
) -> None:
    """While the socket takes them, an idle connection's frames are written the moment the
    engine queues them (no writer task involved); when it stops taking them mid-frame, the
    rest of that frame and everything after go through the writer. A client that reads late
    gets every frame, whole and in order."""
    engine = Engine(
        Store(), {}, EngineConfig(outbound_queue=4096), now_ms=lambda: 0, new_id=lambda: "x"
    )
    shell = Shell(engine, nursery)
    url, accepted = await serve_connections(nursery, shell)
    ws = await connect(nursery, url, message_queue_size=1)
    try:
        with trio.fail_after(10):
            while not accepted:
                await trio.sleep(0.01)
        (conn,) = accepted
        await trio.sleep(0.05)  # the writer is idle now

        def offer(n: int) -> None:
            shell.engine.fanout.send(conn.peer, orjson.dumps({"n": n, "pad": PAD}).decode())
            shell.settle()

        offer(0)
        assert conn.direct_writes == 1 and not conn.peer.outbox  # written, nothing queued
        # The client reads nothing: the socket's buffers fill, a frame is cut short, and the
        # rest waits for the writer (which waits for the socket).
        total = 300  # 18 MB: more than loopback's buffers hold
        for n in range(1, total):
            offer(n)
            await trio.sleep(0)
        assert conn.direct_writes < total
        assert not conn.closed
        received: list[int] = []
        with trio.fail_after(30):
            while len(received) < total:
                message = orjson.loads(await ws.get_message())
                assert message["pad"] == PAD
                received.append(message["n"])
        assert received == list(range(total))
    finally:
        await trio.aclose_forcefully(ws._stream)
