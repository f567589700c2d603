"""Shared harness for the host benchmarks: bridge processes, a lean AHP client, statistics.

The bridge runs in its own process (the real `ahp-bridge serve` command, or `python
bench/_common.py bridge` when emit times must be stamped into deltas) so that the clients
generating load do not share its trio loop. Only 127.0.0.1 is used. Every wait is bounded,
and child processes are terminated when a benchmark leaves, whatever happened.

Run as a script this module is a child process: `bridge` (run_bridge with the fake wrapped so
that each delta's text starts with its emit time), `bare-server` (a minimal trio-websocket
broadcast server, see `serve_bare`), `bare-transport` (the same on the bridge's own WebSocket
layer: the transport ceiling) or `bare-websockets` (asyncio `websockets`).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import itertools
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
    connect_websocket_url,
    serve_websocket,
)

HERE = Path(__file__).resolve().parent
ROOT = "ahp-root://"
#: Large enough for a 10,000-action replay (the client library's default is 1 MiB).
MAX_MESSAGE = 256 * 1024 * 1024
#: No single step of a benchmark may take longer than this (then it fails, it never hangs).
STEP_TIMEOUT = 120.0
#: Marker the timing bridge puts before each delta's emit time (monotonic ns, shared by all
#: processes on one Linux host: CLOCK_MONOTONIC).
STAMP = "@T"


def machine_note() -> str:
    load = os.getloadavg()
    return (
        f"machine: {os.cpu_count()} cores shared with other work (load average "
        f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}); python {sys.version.split()[0]}; "
        "bridge and load-generating clients in separate processes, 127.0.0.1 only"
    )


# -- child processes ---------------------------------------------------------------------------


def write_config(directory: Path, *, fake: Mapping[str, Any], replay_log: int = 10_000) -> Path:
    """A settings TOML for a fake-only bridge on an ephemeral loopback port."""
    lines = [
        "[server]",
        'host = "127.0.0.1"',
        "port = 0",
        f"replay_log = {replay_log}",
        "[bridge]",
        'providers = ["fake"]',
        f"data_dir = {_toml_str(str(directory / 'data'))}",
        f"workdir = {_toml_str(str(directory))}",
        "[providers.fake]",
    ]
    for key, value in fake.items():
        lines.append(f"{key} = {_toml_str(value) if isinstance(value, str) else value}")
    path = directory / "bridge.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _toml_str(value: str) -> str:
    return orjson.dumps(value).decode()  # a JSON string is a valid TOML basic string


class Child:
    """A running child server: its ws:// URL and its CPU time so far."""

    def __init__(self, url: str, pid: int) -> None:
        self.url = url
        self.pid = pid

    def cpu_seconds(self) -> float:
        """User + system CPU time of the process: its CPU clock (clock_getcpuclockid, to the
        nanosecond) where the C library has it, else /proc's ticks (10 ms: at 4,000 envelopes a
        run, 2.5 µs an envelope); 0.0 where neither is available."""
        clock = _cpu_clock(self.pid)
        if clock is not None:
            with contextlib.suppress(OSError):
                return time.clock_gettime(clock)
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_clock(pid: int) -> int | None:
    """The CPU-time clock id of process `pid` (POSIX clock_getcpuclockid), or None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        clock = ctypes.c_int()
        if libc.clock_getcpuclockid(pid, ctypes.byref(clock)) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return clock.value


@asynccontextmanager
async def child_process(argv: Sequence[str], ready_prefix: str) -> AsyncIterator[Child]:
    """Start `argv`, yield it with the ws:// URL of its first stdout line; stop it on exit.

    The child is forked from this (the main) thread with PR_SET_PDEATHSIG, so it is
    terminated if the benchmark dies without cleaning up. (trio's `open_process` forks from
    a worker thread, whose exit would count as the parent's death.)
    """
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            list(argv),
            stdout=subprocess.PIPE,
            stderr=log,
            stdin=subprocess.DEVNULL,
            preexec_fn=die_with_parent,
        )
        assert proc.stdout is not None
        stdout = trio.lowlevel.FdStream(os.dup(proc.stdout.fileno()))
        proc.stdout.close()
        try:
            async with trio.open_nursery() as nursery:
                buffer = b""
                with trio.fail_after(30):
                    while b"\n" not in buffer:
                        chunk = await stdout.receive_some(4096)
                        if not chunk:
                            raise RuntimeError(f"{argv[1:3]} exited before it listened")
                        buffer += chunk
                line = buffer.split(b"\n", 1)[0].decode()
                if not line.startswith(ready_prefix):
                    raise RuntimeError(f"unexpected first line from {argv[1:3]}: {line!r}")
                nursery.start_soon(_drain, stdout)
                try:
                    yield Child(line.rsplit(" ", 1)[-1], proc.pid)  # as printed: with its token
                finally:
                    nursery.cancel_scope.cancel()
        except BaseException:
            # The child logs warnings and errors only: show them with the failure.
            with trio.CancelScope(shield=True):
                await _wait(proc, 1.0)  # a crashed server may still be exiting
            state = "running" if proc.returncode is None else f"exited {proc.returncode}"
            log.seek(0)
            tail = log.read()[-6000:].decode(errors="replace")
            print(f"{argv[1:3]} ({state}), its stderr:\n{tail}", file=sys.stderr)
            raise
        finally:
            with trio.CancelScope(shield=True):
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    await _wait(proc, 10.0)
                if proc.poll() is None:
                    proc.kill()
                    await _wait(proc, 10.0)
                await stdout.aclose()


async def _wait(proc: subprocess.Popen[bytes], timeout: float) -> None:
    with trio.move_on_after(timeout):
        while proc.poll() is None:
            await trio.sleep(0.02)


def die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when the forking thread dies (Linux)."""
    if sys.platform == "linux":
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some(65536):
        pass


def bridge_argv(config: Path, *, timing: bool = False) -> list[str]:
    """The bridge command: the real CLI, or this module's timing wrapper around run_bridge."""
    if timing:
        return [sys.executable, str(HERE / "_common.py"), "bridge", "--config", str(config)]
    # AHP_BENCH_PROFILE=FILE: the bridge runs under cProfile and writes its profile to FILE when
    # it stops (each bridge a bench starts overwrites it: profile one case at a time).
    profile = os.environ.get("AHP_BENCH_PROFILE")
    return [
        sys.executable,
        *(["-m", "cProfile", "-o", profile] if profile else []),
        "-m",
        "ahp_bridge.cli",
        "serve",
        "--config",
        str(config),
        "--log-level",
        "warning",
    ]


def bare_argv(kind: str = "trio-websocket") -> list[str] | None:
    """A bare broadcast server's command: `trio-websocket` (serve_bare), `transport` (the
    bridge's own WebSocket layer, serve_bare_transport), `websockets` (asyncio with its C
    speedups, serve_bare_websockets) or `node` (bench/bare_ws.js over npm `ws`, from
    .tools/bench: None when node or ws is missing; `NODE_WS_HINT` says how to install it)."""
    if kind == "trio-websocket":
        return [sys.executable, str(HERE / "_common.py"), "bare-server"]
    if kind == "websockets":
        return [sys.executable, str(HERE / "_common.py"), "bare-websockets"]
    if kind == "transport":
        return [sys.executable, str(HERE / "_common.py"), "bare-transport"]
    node = shutil.which("node")
    if node is None or not (NODE_MODULES / "ws" / "package.json").is_file():
        return None
    return [node, str(HERE / "bare_ws.js")]


#: Where bench/bare_ws.js finds `ws` (the bench's only npm dependency, pinned).
NODE_MODULES = HERE.parent / ".tools" / "bench" / "node_modules"
NODE_WS = "ws@8.23.1"
NODE_WS_HINT = f"npm install --prefix .tools/bench --no-save {NODE_WS}"


# -- a lean AHP client ---------------------------------------------------------------------------

EnvelopeHandler = Callable[[dict[str, Any], int], None]


class BenchClient:
    """One WebSocket client: requests for setup, a handler per received `action` envelope.

    It keeps nothing it is not asked to keep, so the client process costs as little as a real
    client that only parses frames: one `orjson.loads` per frame. The receive time is taken
    (monotonic ns) as soon as a whole message has arrived, before parsing.
    """

    def __init__(self, ws: WebSocketConnection, client_id: str) -> None:
        self.ws = ws
        self.client_id = client_id
        self._ids = itertools.count(1)
        self._seq = itertools.count(1)
        self._waiters: dict[int, trio.MemorySendChannel[tuple[str, int]]] = {}
        self.on_envelope: EnvelopeHandler | None = None
        self.envelopes: list[dict[str, Any]] = []
        self.keep = True
        #: Error frames no request waits for, and rejections of this client's actions.
        self.errors: list[dict[str, Any]] = []
        self.closed: str | None = None
        self.changed = trio.Event()

    async def reader(self) -> None:
        try:
            while True:
                message = await self.ws.get_message()
                received = time.monotonic_ns()
                text = message if isinstance(message, str) else message.decode()
                frame = orjson.loads(text)
                if frame.get("method") == "action":
                    env = frame["params"]
                    if env.get("rejectionReason") is not None:
                        self.errors.append({"rejected": env["rejectionReason"]})
                    if self.on_envelope is not None:
                        self.on_envelope(env, received)
                    if self.keep:
                        self.envelopes.append(env)
                        self.changed.set()
                        self.changed = trio.Event()
                elif "id" in frame and frame["id"] in self._waiters:
                    self._waiters.pop(frame["id"]).send_nowait((text, received))
                elif "error" in frame:
                    self.errors.append(frame["error"])  # e.g. a refused notification
        except ConnectionClosed as exc:
            reason = exc.reason
            self.closed = f"{reason.code} {reason.reason}" if reason is not None else "closed"
            self.changed.set()

    async def send_request(
        self, method: str, params: dict[str, Any]
    ) -> tuple[int, trio.MemoryReceiveChannel[tuple[str, int]]]:
        """Send a request; returns (send time ns, a receive channel for (text, recv ns))."""
        msg_id = next(self._ids)
        send, recv = trio.open_memory_channel[tuple[str, int]](1)
        self._waiters[msg_id] = send
        frame = orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        sent = time.monotonic_ns()
        await self.ws.send_message(frame.decode())
        return sent, recv

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        _, recv = await self.send_request(method, params)
        with trio.fail_after(STEP_TIMEOUT):
            text, _ = await recv.receive()
        frame = orjson.loads(text)
        if "error" in frame:
            raise RuntimeError(f"{method} failed: {frame['error']}")
        return frame["result"]

    async def notify(self, method: str, params: dict[str, Any]) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        await self.ws.send_message(orjson.dumps(message).decode())

    def dispatch_frame(self, channel: str, action: dict[str, Any]) -> str:
        params = {"channel": channel, "clientSeq": next(self._seq), "action": action}
        message = {"jsonrpc": "2.0", "method": "dispatchAction", "params": params}
        return orjson.dumps(message).decode()

    async def initialize(
        self, subscriptions: Sequence[str] = (), versions: Sequence[str] = ("0.7.0",)
    ) -> dict[str, Any]:
        params: dict[str, Any] = {
            "channel": ROOT,
            "protocolVersions": list(versions),
            "clientId": self.client_id,
        }
        if subscriptions:
            params["initialSubscriptions"] = list(subscriptions)
        result: dict[str, Any] = await self.request("initialize", params)
        return result

    async def wait_envelope(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        with trio.fail_after(STEP_TIMEOUT):
            seen = 0
            while True:
                for env in self.envelopes[seen:]:
                    if predicate(env):
                        return env
                seen = len(self.envelopes)
                if self.closed is not None:
                    raise RuntimeError(f"connection closed: {self.closed}")
                await self.changed.wait()

    async def aclose(self) -> None:
        with trio.move_on_after(5):
            await self.ws.aclose()
        await self.ws._stream.aclose()


@asynccontextmanager
async def clients(url: str, count: int, prefix: str) -> AsyncIterator[list[BenchClient]]:
    """`count` connected clients (not yet initialized), closed on exit."""
    opened: list[BenchClient] = []
    async with trio.open_nursery() as nursery:
        try:
            for i in range(count):
                ws = await connect_websocket_url(nursery, url, max_message_size=MAX_MESSAGE)
                client = BenchClient(ws, f"{prefix}-{i}")
                opened.append(client)
                nursery.start_soon(client.reader)
            yield opened
        finally:
            with trio.CancelScope(shield=True):
                for client in opened:
                    await client.aclose()
            nursery.cancel_scope.cancel()


async def ready_session(control: BenchClient) -> tuple[str, str]:
    """Create a fake session on an initialized client; returns (session, default chat)."""
    session = f"ahp-session:/{uuid.uuid4()}"
    keep, control.keep = control.keep, True
    await control.request("createSession", {"channel": session, "provider": "fake"})
    snap = await control.request("subscribe", {"channel": session})
    if snap["snapshot"]["state"].get("lifecycle") == "creating":
        await control.wait_envelope(
            lambda e: (
                e["channel"] == session
                and e["action"]["type"] in ("session/ready", "session/creationFailed")
            )
        )
        snap = await control.request("subscribe", {"channel": session})
    state = snap["snapshot"]["state"]
    if state.get("lifecycle") != "ready":
        raise RuntimeError(f"session creation failed: {state.get('creationError', state)}")
    await control.notify("unsubscribe", {"channel": session})
    control.keep = keep
    control.envelopes.clear()
    return session, str(state["defaultChat"])


#: Annotations the workload cycles through: each set replaces one, so the session stays under
#: limits.max_annotations (64 annotations and entries) however long the run.
ANNOTATIONS = 16


def annotation_action(i: int, session: str, width: int = 48) -> dict[str, Any]:
    """An annotations/set action: one whose 0.7 form differs from 1.0's (origin -> turnId).

    The entry's text differs per index (a subscriber recognises each envelope by it)."""
    text = f"note {i:08d} " + "x" * max(0, width - 38)
    return {
        "type": "annotations/set",
        "annotation": {
            "id": f"note-{i % ANNOTATIONS:02d}",
            "origin": {"session": session, "turnId": f"turn-{i % 7}"},
            "resource": "file:///src/app.py",
            "resolved": False,
            "entries": [{"id": "e", "text": text}],
        },
    }


def draft_action(i: int, width: int = 48) -> dict[str, Any]:
    """A chat/draftChanged action whose text differs per index (the fan-out payload)."""
    text = f"draft {i:08d} " + "x" * max(0, width - 15)
    return {"type": "chat/draftChanged", "draft": {"text": text, "origin": {"kind": "user"}}}


# -- a provider's event sink, for in-process provider benchmarks -------------------------------


class ProviderSink:
    """An agentapi EventSink that counts events, stamps the first delta, counts ended turns and
    asked interactions, and wakes a trio waiter (no polling); emit may come from any thread."""

    def __init__(self) -> None:
        from ahp_bridge import agentapi

        self._agentapi = agentapi
        self.lock = threading.Lock()
        self.count = 0
        self.first_delta = 0.0
        self.ended = 0
        self.pending: list[str] = []
        self.token = trio.lowlevel.current_trio_token()
        self.changed = trio.Event()

    def emit(self, event: Any) -> None:
        agentapi = self._agentapi
        wake = False
        with self.lock:
            self.count += 1
            if event.delta is not None and event.delta.text and not self.first_delta:
                self.first_delta = time.perf_counter()
            turn = event.turn
            if turn is not None and turn.state != agentapi.TurnState.WORKING:
                self.ended += 1
                wake = True
            ia = event.interaction
            if ia is not None and ia.state == agentapi.InteractionState.PENDING:
                self.pending.append(ia.id)
                wake = True
        if wake:
            self.token.run_sync_soon(self._wake)

    def _wake(self) -> None:
        self.changed.set()
        self.changed = trio.Event()

    async def until(self, *, ended: int = 0, pending: int = 0, timeout: float = math.inf) -> None:
        """Wait until at least `ended` turns ended and `pending` interactions were asked."""
        with trio.fail_after(timeout):
            while True:
                changed = self.changed
                with self.lock:
                    if self.ended >= ended and len(self.pending) >= pending:
                        return
                await changed.wait()


# -- statistics and output -------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


# -- child: the bare broadcast server (the transport ceiling) ---------------------------------


def bare_answer(msg: dict[str, Any], seq: Iterator[int]) -> tuple[bytes | None, bytes | None]:
    """What a bare server does with one client message: a `dispatchAction` becomes the envelope
    frame every subscriber gets (shaped like the bridge's); a request gets a null result (so
    clients can use it as a barrier). Returns (envelope, reply), each JSON bytes or None."""
    if msg.get("method") == "dispatchAction":
        p = msg["params"]
        env = {
            "channel": p["channel"],
            "serverSeq": next(seq),
            "action": p["action"],
            "origin": {"clientId": "producer", "clientSeq": p["clientSeq"]},
        }
        return orjson.dumps({"jsonrpc": "2.0", "method": "action", "params": env}), None
    if "id" in msg:
        return None, orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": None})
    return None, None


async def serve_bare(queue_size: int = 4096) -> None:
    """The least a server can do to fan frames out over trio-websocket.

    A client that sends a `subscribe` request is a subscriber; every `dispatchAction` is parsed
    once, wrapped in an envelope shaped like the bridge's, serialised once, and queued to every
    subscriber (one writer task and one bounded queue per client, like the bridge's
    connections). Requests get a null result so clients can use them as barriers.
    """
    subscribers: set[trio.MemorySendChannel[str]] = set()
    seq = itertools.count(1)

    async def handler(request: WebSocketRequest) -> None:
        ws = await request.accept()
        send, recv = trio.open_memory_channel[str](queue_size)

        async def writer() -> None:
            with contextlib.suppress(ConnectionClosed):
                async for frame in recv:
                    await ws.send_message(frame)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(writer)
            try:
                while True:
                    msg = orjson.loads(await ws.get_message())
                    envelope, reply = bare_answer(msg, seq)
                    if envelope is not None:
                        frame = envelope.decode()
                        for sub in tuple(subscribers):
                            try:
                                sub.send_nowait(frame)
                            except trio.WouldBlock:  # fell behind: dropped, as the bridge does
                                subscribers.discard(sub)
                                sub.close()
                    elif reply is not None:
                        if msg.get("method") == "subscribe":
                            subscribers.add(send)
                        send.send_nowait(reply.decode())
            except ConnectionClosed:
                pass
            finally:
                subscribers.discard(send)
                send.close()

    async with trio.open_nursery() as nursery:
        serve = functools.partial(serve_websocket, max_message_size=MAX_MESSAGE)
        server = await nursery.start(serve, handler, "127.0.0.1", 0, None)
        print(f"bare listening on ws://127.0.0.1:{server.port}/", flush=True)


def serve_bare_websockets() -> None:
    """serve_bare's protocol on `websockets` (asyncio, its C speedups): the envelope encoded
    once and pushed to every subscriber with `websockets.broadcast` (no per-client task)."""
    import asyncio

    from websockets.asyncio.server import ServerConnection, broadcast, serve

    subscribers: set[ServerConnection] = set()
    seq = itertools.count(1)

    async def handler(ws: ServerConnection) -> None:
        try:
            async for message in ws:
                msg = orjson.loads(message)
                envelope, reply = bare_answer(msg, seq)
                if envelope is not None:
                    broadcast(subscribers, envelope, text=True)
                elif reply is not None:
                    if msg.get("method") == "subscribe":
                        subscribers.add(ws)
                    await ws.send(reply, text=True)
        finally:
            subscribers.discard(ws)

    async def main() -> None:
        stop = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set_result, None)
        async with serve(handler, "127.0.0.1", 0, max_size=MAX_MESSAGE) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            print(f"bare-websockets listening on ws://127.0.0.1:{port}/", flush=True)
            await stop

    asyncio.run(main())


async def serve_bare_transport(queue_size: int = 4096) -> None:
    """serve_bare's protocol on the bridge's own transport (`host/transport/websocket.py`:
    `websockets`' sans-I/O protocol over trio streams), used as the bridge uses it: every
    message one read completed is handled before anything is written, the envelopes are framed
    once each (`text_frame`), and a subscriber gets one write per read, directly when its
    socket takes it (else its writer task writes it, in order). No engine, no state: what the
    transport alone allows."""
    from ahp_bridge.host.transport.frames import text_frame
    from ahp_bridge.host.transport.websocket import Closed, WebSocket, handshake

    class Sub:
        def __init__(self, ws: WebSocket) -> None:
            self.ws = ws
            self.send, self.recv = trio.open_memory_channel[bytes](queue_size)
            self.backlog = 0  # writes handed to the writer task and not yet done

        def put(self, data: bytes) -> None:
            if not self.backlog:
                written = self.ws.try_write(data) or 0
                if written == len(data):
                    return
                data = data[written:]
            self.backlog += 1
            self.send.send_nowait(data)

        async def writer(self) -> None:
            with contextlib.suppress(Closed, trio.ClosedResourceError):
                async for data in self.recv:
                    await self.ws.write(data)
                    self.backlog -= 1

    subscribers: set[Sub] = set()
    seq = itertools.count(1)

    async def handler(stream: trio.SocketStream) -> None:
        upgrade = await handshake(stream, max_size=MAX_MESSAGE, timeout=10.0)
        ws = None if upgrade is None else await upgrade.accept()
        if ws is None:
            return
        me = Sub(ws)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(me.writer)
            try:
                while True:
                    envelopes: list[bytes] = []
                    replies: list[bytes] = []
                    for message in await ws.receive():
                        msg = orjson.loads(message)
                        envelope, reply = bare_answer(msg, seq)
                        if envelope is not None:
                            envelopes.append(text_frame(envelope.decode()))
                        elif reply is not None:
                            if msg.get("method") == "subscribe":
                                subscribers.add(me)
                            replies.append(text_frame(reply.decode()))
                    if envelopes:
                        data = b"".join(envelopes)
                        for sub in tuple(subscribers):
                            try:
                                sub.put(data)
                            except trio.WouldBlock:  # fell behind: dropped, as the bridge does
                                subscribers.discard(sub)
                                sub.send.close()
                    if replies:
                        me.put(b"".join(replies))
            except Closed:
                pass
            finally:
                subscribers.discard(me)
                me.send.close()
                await ws.abort()

    async with trio.open_nursery() as nursery:
        [listener] = await trio.open_tcp_listeners(0, host="127.0.0.1")
        port = listener.socket.getsockname()[1]
        nursery.start_soon(trio.serve_listeners, handler, [listener])
        print(f"bare-transport listening on ws://127.0.0.1:{port}/", flush=True)


# -- child: the bridge with stamped deltas ------------------------------------------------------


def _install_delta_stamps() -> None:
    """Wrap every provider the bridge creates so each delta's text starts with its emit time.

    The stamp (`@T<monotonic ns>;`) is taken when the provider calls `emit`, before the
    bridge's sink schedules delivery, so the measured latency covers the whole host path.
    """
    from ahp_bridge import agentapi, providers

    inner_create = providers.create

    class StampingSink:
        def __init__(self, inner: agentapi.EventSink) -> None:
            self.inner = inner

        def emit(self, event: agentapi.Event) -> None:
            if event.kind == agentapi.EventKind.DELTA and event.delta is not None:
                stamped = f"{STAMP}{time.monotonic_ns()};{event.delta.text}"
                delta = event.delta.model_copy(update={"text": stamped})
                event = event.model_copy(update={"delta": delta})
            self.inner.emit(event)

    class StampingProvider:
        def __init__(self, inner: agentapi.Provider) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> Any:
            return getattr(self._inner, name)

        async def __aenter__(self) -> StampingProvider:
            await self._inner.__aenter__()
            return self

        async def __aexit__(self, *exc: Any) -> Any:
            return await self._inner.__aexit__(*exc)

        async def open(self, req: agentapi.OpenRequest) -> agentapi.Conversation:
            sink = StampingSink(req.events) if req.events is not None else None
            return await self._inner.open(req.model_copy(update={"events": sink}))

    def create(name: str, options: Mapping[str, Any] | None = None) -> Any:
        return StampingProvider(inner_create(name, options))

    providers.create = create


def _bridge_main(config: Path) -> None:
    from ahp_bridge import log as logsetup
    from ahp_bridge.config import load_settings
    from ahp_bridge.host.app import run_bridge
    from ahp_bridge.host.transport import connect

    settings = load_settings(config)
    logsetup.configure("console", "warning")
    _install_delta_stamps()

    async def main() -> None:
        async with trio.open_nursery() as nursery:

            async def on_signals() -> None:
                with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for _ in signals:
                        nursery.cancel_scope.cancel()
                        return

            nursery.start_soon(on_signals)
            port = await nursery.start(run_bridge, settings)
            url = connect.connect_url("127.0.0.1", port, settings.server.token)
            print(f"ahp-bridge listening on {url}", flush=True)

    trio.run(main)


def _main() -> None:
    parser = argparse.ArgumentParser(description="benchmark child processes")
    sub = parser.add_subparsers(dest="command", required=True)
    bridge = sub.add_parser("bridge")
    bridge.add_argument("--config", type=Path, required=True)
    sub.add_parser("bare-server")
    sub.add_parser("bare-websockets")
    sub.add_parser("bare-transport")
    args = parser.parse_args()
    if args.command == "bridge":
        _bridge_main(args.config)
    elif args.command == "bare-websockets":
        serve_bare_websockets()
    else:
        serve = serve_bare_transport if args.command == "bare-transport" else serve_bare

        async def bare() -> None:
            with trio.open_signal_receiver(signal.SIGTERM) as signals:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(serve)
                    async for _ in signals:
                        nursery.cancel_scope.cancel()
                        return

        trio.run(bare)


if __name__ == "__main__":
    _main()
