"""Envelope fan-out: one producer, N actions on one channel, 1/10/50 subscribers spread over
client processes; the bridge beside bare WebSocket servers of three stacks, in one run.

Run: python bench/fanout.py [--quick] [--actions N] [--runs R] [--clients 1,10,50]
                            [--procs P] [--workload draft,annotation] [--in-process]

The bridge (`ahp-bridge serve`, fake provider) runs in its own process; a producer client
dispatches N actions as fast as its socket takes them, and every subscriber must receive all N
envelopes, in order (checked). The subscribers run in `--procs` client processes (2 by
default; one process for one subscriber), so that at 10 and 50 subscribers the clients'
parsing is not the ceiling. The headline figure is the server's **CPU time per delivered
envelope** (its CPU clock, to the ns; from the first dispatch to the last envelope received,
divided by N x subscribers): what the server spends whoever is the bottleneck, the steadiest
figure on a shared machine. Beside it: envelopes delivered per second, summed over
subscribers, and the client processes' CPU per envelope.

Three bridge runs per count, interleaved: every subscriber at 1.0, every one at 0.6 (the end of
the lens chain: four steps from the canonical form), and mixed (all five lines, 1.0, 0.9, 0.8,
0.7 and 0.6, in turn), so the cost of the down-translations is the mixed figure against
all-1.0. Beside them, the same payloads through bare broadcast servers, each in its own process,
with the same client code: trio-websocket (parse once, serialise once, a bounded queue and
writer task per client), Python `websockets` (asyncio, C speedups, `broadcast`), and Node.js
`ws` (the stack VS Code's agent host runs on; only where node and npm `ws` are installed:
`npm install --prefix .tools/bench --no-save ws@8.23.1`). The last column is the bridge's CPU
per envelope over the fastest bare server's.

Two workloads: `draft` (`chat/draftChanged`: the same on every wire, like the deltas that make
up most of a stream, so the versions share one encode) and `annotation` (`annotations/set`,
whose form before 0.9 differs, so every envelope is translated and encoded twice: once for 1.0
and 0.9, once for 0.8, 0.7 and 0.6, which share it: the worst case). Figures only; nothing is
asserted about speed.

A burst must fit the bridge's per-client outbound queue (4096 frames by default): a client
that falls further behind is disconnected by design, so N is capped below it.

`--in-process` measures the host's side alone, where a loaded machine matters less: the
engine's fan-out (`Fanout.apply`) of N actions to the subscribers, as peers with no socket, in
this process; CPU time per action, all-1.0 and mixed interleaved, median of the runs.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import trio
from _common import (
    NODE_WS_HINT,
    STEP_TIMEOUT,
    BenchClient,
    Child,
    annotation_action,
    bare_argv,
    bridge_argv,
    child_process,
    clients,
    die_with_parent,
    draft_action,
    machine_note,
    median,
    ready_session,
    table,
    write_config,
)

#: The bridge's default outbound queue, minus room for frames that are not envelopes.
MAX_ACTIONS = 4000
BARE_CHAT = "ahp-chat:/bench-fanout"
V10 = ("1.0.0", "0.9.0")
V06 = ("0.6.0",)
#: What a client of each line offers, newest first.
OFFERS: tuple[tuple[str, ...], ...] = (V10, ("0.9.0",), ("0.8.0",), ("0.7.0",), V06)
#: Bridge runs: what each subscriber offers, by index.
MIXES: dict[str, Callable[[int], tuple[str, ...]]] = {
    "1.0": lambda i: V10,
    "0.6": lambda i: V06,
    "mixed": lambda i: OFFERS[i % len(OFFERS)],
}


class Workload:
    """What the producer dispatches, where, and how a subscriber recognises each envelope."""

    def __init__(self, name: str, channel: str, session: str) -> None:
        self.name = name
        self.channel = channel
        self.session = session

    def action(self, i: int) -> dict[str, Any]:
        if self.name == "annotation":
            return annotation_action(i, self.session)
        return draft_action(i)

    @property
    def type(self) -> str:
        return "annotations/set" if self.name == "annotation" else "chat/draftChanged"

    @staticmethod
    def key(action: dict[str, Any]) -> str:
        if action["type"] == "annotations/set":
            return str(action["annotation"]["entries"][0]["text"])
        return str(action["draft"]["text"])


class Result:
    def __init__(self, rate: float, frame_bytes: int, cpu_us: float, client_us: float) -> None:
        self.rate = rate
        self.frame_bytes = frame_bytes
        #: Server process CPU time per delivered envelope (its cost, whoever is the bottleneck).
        self.cpu_us = cpu_us
        #: The client processes' CPU time per envelope (receiving and parsing, all clients).
        self.client_us = client_us


#: The bare servers, by name: (command kind, the first word of the line it prints when ready).
BARES = {
    "trio-websocket": ("trio-websocket", "bare listening"),
    "bridge transport": ("transport", "bare-transport listening"),
    "websockets": ("websockets", "bare-websockets listening"),
    "node ws": ("node", "bare-node listening"),
}


def _split(count: int, procs: int) -> list[tuple[int, int]]:
    """(first index, how many) of each client process's subscribers."""
    procs = max(1, min(procs, count))
    sizes = [count // procs + (1 if i < count % procs else 0) for i in range(procs)]
    starts = [sum(sizes[:i]) for i in range(procs)]
    return list(zip(starts, sizes, strict=True))


class Subscribers:
    """One client process of subscribers (`python bench/fanout.py --child SPEC`): it connects
    and subscribes them, says `ready`, starts counting at `go` and answers with its finish time
    (monotonic ns, one clock for every process on a Linux host), its CPU and any problem."""

    def __init__(self, proc: subprocess.Popen[bytes], stdout: trio.lowlevel.FdStream) -> None:
        self.proc = proc
        self.stdout = stdout
        self._buffer = b""

    async def line(self) -> str:
        with trio.fail_after(STEP_TIMEOUT):
            while b"\n" not in self._buffer:
                chunk = await self.stdout.receive_some(4096)
                if not chunk:
                    raise RuntimeError(f"a subscriber process exited ({self.proc.poll()})")
                self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"go\n")
        self.proc.stdin.flush()


@asynccontextmanager
async def subscribers(spec: dict[str, Any]) -> AsyncIterator[Subscribers]:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", json.dumps(spec)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        preexec_fn=die_with_parent,
    )
    assert proc.stdout is not None
    stdout = trio.lowlevel.FdStream(os.dup(proc.stdout.fileno()))
    proc.stdout.close()
    kid = Subscribers(proc, stdout)
    try:
        line = await kid.line()
        if line != "ready":
            raise RuntimeError(f"a subscriber process said {line!r}")
        yield kid
    finally:
        with trio.CancelScope(shield=True):
            if proc.stdin is not None:
                proc.stdin.close()
            with trio.move_on_after(10):
                while proc.poll() is None:
                    await trio.sleep(0.02)
            if proc.poll() is None:
                proc.kill()
            await stdout.aclose()


async def fan_out(
    server: Child,
    producer: BenchClient,
    work: Workload,
    mode: str,
    count: int,
    actions: int,
    tag: str,
    procs: int,
) -> Result:
    """One run: `count` fresh subscribers in client processes (`mode`: a bridge mix, or "bare"),
    `actions` dispatches; the figures of this run."""
    frames = [producer.dispatch_frame(work.channel, work.action(i)) for i in range(actions)]
    spec = {
        "url": server.url,
        "workload": work.name,
        "channel": work.channel,
        "session": work.session,
        "mode": mode,
        "actions": actions,
        "tag": tag,
    }
    async with AsyncExitStack() as stack:
        kids = [
            await stack.enter_async_context(subscribers({**spec, "first": first, "count": n}))
            for first, n in _split(count, procs)
        ]
        cpu_before = server.cpu_seconds()
        started = time.monotonic_ns()
        for kid in kids:
            kid.go()
        for frame in frames:
            await producer.ws.send_message(frame)
        answers = [json.loads((await kid.line()).split(" ", 1)[1]) for kid in kids]
        cpu = server.cpu_seconds() - cpu_before
    problems = [p for a in answers for p in a["problems"]]
    if problems or producer.errors:
        raise RuntimeError(f"{tag}: {problems[:3] or producer.errors[:3]}")
    elapsed = (max(a["finished"] for a in answers) - started) / 1e9
    delivered = actions * count
    client_cpu = sum(a["cpu"] for a in answers)
    size = answers[0]["frame_bytes"]
    return Result(delivered / elapsed, size, cpu * 1e6 / delivered, client_cpu * 1e6 / delivered)


async def child(spec: dict[str, Any]) -> None:
    """A subscriber process (see `Subscribers`)."""
    work = Workload(spec["workload"], spec["channel"], spec["session"])
    actions, count, first = spec["actions"], spec["count"], spec["first"]
    expected = [work.key(work.action(i)) for i in range(actions)]
    received = [0] * count
    finished = [0] * count
    remaining = [count]
    sample: list[dict[str, Any]] = []
    problems: list[str] = []
    done = trio.Event()

    def handler_for(index: int) -> Callable[[dict[str, Any], int], None]:
        def on_envelope(env: dict[str, Any], at: int) -> None:
            if env["channel"] != work.channel or env["action"]["type"] != work.type:
                return
            n = received[index]
            if env.get("rejectionReason") is not None:
                problems.append(f"rejected: {env['rejectionReason']}")
            elif n >= actions or work.key(env["action"]) != expected[n]:
                problems.append(f"client {first + index}: envelope {n} out of order")
            received[index] = n + 1
            if n + 1 == actions:
                finished[index] = at
                if not sample:
                    sample.append(env)
                remaining[0] -= 1
                if remaining[0] == 0:
                    done.set()

        return on_envelope

    async with clients(spec["url"], count, f"{spec['tag']}-{first}") as subs:
        for index, sub in enumerate(subs):
            sub.keep = False
            if spec["mode"] == "bare":
                await sub.request("subscribe", {"channel": work.channel})
            else:
                await sub.initialize([work.channel], versions=MIXES[spec["mode"]](first + index))
            sub.on_envelope = handler_for(index)
        print("ready", flush=True)
        stdin = trio.lowlevel.FdStream(os.dup(0))
        await stdin.receive_some(16)
        cpu_before = time.process_time()
        with trio.fail_after(STEP_TIMEOUT):
            while not done.is_set():
                closed = [s.closed for s in subs if s.closed is not None]
                if closed or problems:
                    break
                with trio.move_on_after(0.05):
                    await done.wait()
        cpu = time.process_time() - cpu_before
        closed = [s.closed for s in subs if s.closed is not None]
        answer = {
            "finished": max(finished),
            "cpu": cpu,
            "problems": problems[:3] + [f"closed: {c}" for c in closed[:3]],
            "frame_bytes": len(
                orjson.dumps({"jsonrpc": "2.0", "method": "action", "params": sample[0]})
            )
            if sample
            else 0,
        }
        print("done " + json.dumps(answer), flush=True)
        await stdin.aclose()


Results = dict[int, dict[str, list[Result]]]


async def measure(
    counts: list[int],
    actions: int,
    runs: int,
    *,
    workload: str = "draft",
    mixes: tuple[str, ...] = tuple(MIXES),
    procs: int = 2,
) -> Results:
    """Per subscriber count: results per bridge mix and per bare server, runs interleaved."""
    bares = {name: bare_argv(kind) for name, (kind, _) in BARES.items()}
    servers = [name for name, argv in bares.items() if argv is not None]
    results: Results = {c: {m: [] for m in (*mixes, *servers)} for c in counts}
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), fake={"time_scale": 0.0})
        async with AsyncExitStack() as stack:
            bridge_server = await stack.enter_async_context(
                child_process(bridge_argv(config), "ahp-bridge listening")
            )
            (producer,) = await stack.enter_async_context(clients(bridge_server.url, 1, "producer"))
            producer.keep = False
            bare: dict[str, tuple[Child, BenchClient]] = {}
            for name in servers:
                argv = bares[name]
                assert argv is not None
                server = await stack.enter_async_context(child_process(argv, BARES[name][1]))
                (bare_producer,) = await stack.enter_async_context(
                    clients(server.url, 1, f"{name}-producer")
                )
                bare_producer.keep = False
                bare[name] = (server, bare_producer)
            work = Workload(workload, BARE_CHAT, "ahp-session:/bench")
            if mixes:
                await producer.initialize(versions=V10)
                session, chat = await ready_session(producer)
                channel = session + "/annotations" if workload == "annotation" else chat
                work = Workload(workload, channel, session)
            bare_work = Workload(workload, BARE_CHAT, work.session)
            # One run of each server first, not counted: what a server does once (a module
            # imported, a validator built on first use) is not a cost per envelope.
            for mix in mixes:
                await fan_out(bridge_server, producer, work, mix, 1, 200, f"w{mix}", procs)
            for name, (server, bare_producer) in bare.items():
                tag = "w" + name.replace(" ", "")
                await fan_out(server, bare_producer, bare_work, "bare", 1, 200, tag, procs)
            for count in counts:
                for run in range(runs):
                    for mix in mixes:
                        results[count][mix].append(
                            await fan_out(
                                bridge_server,
                                producer,
                                work,
                                mix,
                                count,
                                actions,
                                f"b{mix}-{count}.{run}",
                                procs,
                            )
                        )
                    for name, (server, bare_producer) in bare.items():
                        results[count][name].append(
                            await fan_out(
                                server,
                                bare_producer,
                                bare_work,
                                "bare",
                                count,
                                actions,
                                f"{name.replace(' ', '')}-{count}.{run}",
                                procs,
                            )
                        )
    return results


#: The transport ceiling's server: the bridge's own WebSocket layer without the engine.
CEILING = "bridge transport"


async def transport_ceiling(
    counts: list[int], actions: int, runs: int
) -> dict[int, dict[str, float]]:
    """Median envelopes/s per subscriber count through each bare server (`CEILING` is the
    bridge's own transport), its subscribers in one process like the stream latency clients."""
    results = await measure(counts, actions, runs, mixes=(), procs=1)
    return {
        c: {name: median([r.rate for r in runs_]) for name, runs_ in results[c].items()}
        for c in counts
    }


def in_process(workload: str, mix: str, count: int, actions: int) -> float:
    """CPU µs per action of `Fanout.apply` to `count` socketless peers of `mix` (see above)."""
    from ahp_bridge.engine.fanout import Fanout
    from ahp_bridge.engine.peers import Peer
    from ahp_bridge.state.store import Store

    store = Store()
    session = "ahp-session:/bench"
    channel = session + "/annotations" if workload == "annotation" else BARE_CHAT
    if workload == "annotation":
        store.create(channel, "annotations", {"annotations": []})
    else:
        chat = {"resource": channel, "title": "c", "status": 1, "turns": []}
        store.create(channel, "chat", {**chat, "modifiedAt": "2026-01-01T00:00:00.000Z"})
    fanout = Fanout(store, outbound_queue=actions + 1, clock=lambda: "2026-01-01T00:00:00.000Z")
    lines = {offer: line for offer, line in zip(OFFERS, fanout.wires, strict=True)}
    peers = []
    for index in range(count):
        peer = Peer(index, fanout.wires[lines[MIXES[mix](index)]], client_id=f"c{index}")
        fanout.subscribe(peer, channel)
        peers.append(peer)
    work = Workload(workload, channel, session)
    batch = [work.action(i) for i in range(actions)]
    started = time.process_time()
    for action in batch:
        fanout.apply(channel, action)
    spent = time.process_time() - started
    assert all(len(p.outbox) == actions for p in peers)
    return spent * 1e6 / actions


def main_in_process(counts: list[int], actions: int, runs: int, workloads: list[str]) -> None:
    print("in process (no sockets): CPU µs per action of the fan-out, median of", runs, "runs")
    rows = []
    for workload in workloads:
        for count in counts:
            got: dict[str, list[float]] = {"1.0": [], "mixed": []}
            for _ in range(runs):
                for mix in got:
                    got[mix].append(in_process(workload, mix, count, actions))
            one, mixed = median(got["1.0"]), median(got["mixed"])
            rows.append([workload, count, f"{one:.1f}", f"{mixed:.1f}", f"{mixed / one:.2f}"])
    headers = ["workload", "clients", "all 1.0 µs/action", "mixed (5 lines) µs/action", "ratio"]
    print(table(headers, rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run (fewer actions, runs)")
    parser.add_argument("--actions", type=int, help=f"actions per run (at most {MAX_ACTIONS})")
    parser.add_argument("--runs", type=int, help="runs per case (the median is reported)")
    parser.add_argument("--clients", default="1,10,50", help="subscriber counts, comma-separated")
    parser.add_argument(
        "--procs", type=int, default=2, help="client processes the subscribers are spread over"
    )
    parser.add_argument(
        "--workload", default="draft,annotation", help="draft and/or annotation, comma-separated"
    )
    parser.add_argument(
        "--in-process", action="store_true", help="the host's fan-out alone, no sockets"
    )
    parser.add_argument(
        "--mixes",
        default=",".join(MIXES),
        help="bridge runs, comma-separated (1.0 alone compares with a bridge before 0.6 and 0.8)",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a subscriber process
    args = parser.parse_args()
    if args.child:
        trio.run(child, json.loads(args.child))
        return
    actions = args.actions or (400 if args.quick else 2000)
    runs = args.runs or (2 if args.quick else 3)
    if not 1 <= actions <= MAX_ACTIONS:
        parser.error(f"--actions must be 1..{MAX_ACTIONS} (the per-client outbound queue)")
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    if not counts or min(counts) < 1 or max(counts) > 200:
        parser.error("--clients: counts between 1 and 200")
    if not 1 <= args.procs <= 16:
        parser.error("--procs: 1 to 16 client processes")
    mixes = tuple(m.strip() for m in args.mixes.split(",") if m.strip())
    if not mixes or "1.0" not in mixes or any(m not in MIXES for m in mixes):
        parser.error(f"--mixes: 1.0 and any of {', '.join(MIXES)}")
    workloads = [w.strip() for w in args.workload.split(",") if w.strip()]
    if not workloads or any(w not in ("draft", "annotation") for w in workloads):
        parser.error("--workload: draft and/or annotation")
    print(machine_note())
    if args.in_process:
        main_in_process(counts, actions, max(runs, 7), workloads)
        return
    if bare_argv("node") is None:
        print(f"(no node ws server: node or npm ws missing; {NODE_WS_HINT})")
    for workload in workloads:
        kind = "chat/draftChanged" if workload == "draft" else "annotations/set"
        print(
            f"\nfan-out, {workload}: {actions} {kind} actions per run, median of {runs} runs, "
            f"subscribers in {args.procs} client processes"
        )
        results = trio.run(
            functools.partial(
                measure, counts, actions, runs, workload=workload, mixes=mixes, procs=args.procs
            )
        )
        servers = [name for name in results[counts[0]] if name not in MIXES]
        headers = [
            "clients",
            "server CPU µs/env: bridge 1.0 / 0.6 / mixed",
            *(f"{name} µs/env" for name in servers),
            "bridge 1.0 / fastest bare",
            "env/s: bridge 1.0 / mixed",
            *(f"{name} env/s" for name in servers),
            "client CPU µs/env (1.0)",
        ]
        print(table(headers, [_row(count, results[count], servers) for count in counts]))


def _row(count: int, results: dict[str, list[Result]], servers: list[str]) -> list[Any]:
    rate = {name: median([r.rate for r in runs]) for name, runs in results.items()}
    cpu = {name: median([r.cpu_us for r in runs]) for name, runs in results.items()}
    client = median([r.client_us for r in results["1.0"]])
    fastest = min(cpu[name] for name in servers) if servers else float("nan")

    def each(figures: dict[str, float], mixes: tuple[str, ...], form: str) -> str:
        return " / ".join(format(figures[m], form) if m in figures else "-" for m in mixes)

    return [
        count,
        each(cpu, ("1.0", "0.6", "mixed"), ".1f"),
        *(f"{cpu[name]:.1f}" for name in servers),
        f"{cpu['1.0'] / fastest:.1f}x",
        each(rate, ("1.0", "mixed"), ",.0f"),
        *(f"{rate[name]:,.0f}" for name in servers),
        f"{client:.1f}",
    ]


if __name__ == "__main__":
    main()
