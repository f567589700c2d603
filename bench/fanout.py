"""Envelope fan-out throughput: one producer, N actions on one channel, 1/10/50 subscribers.

Run: python bench/fanout.py [--quick] [--actions N] [--runs R] [--clients 1,10,50]
                            [--workload draft,annotation] [--in-process]

The bridge (`ahp-bridge serve`, fake provider) runs in its own process; a producer client
dispatches N actions as fast as its socket takes them, and every subscriber must receive all N
envelopes, in order (checked). The figure is envelopes delivered per second, summed over
subscribers, from the first dispatch sent to the last envelope received. Three bridge runs per
count, interleaved: every subscriber at 1.0, every one at 0.6 (the end of the lens chain: four
steps from the canonical form), and mixed (all five lines, 1.0, 0.9, 0.8, 0.7 and 0.6, in
turn), so the cost of the down-translations is the mixed figure against all-1.0. Beside them:
the same payloads through a bare trio-websocket broadcast server in its own process (the
transport's ceiling), with the same client code.

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
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import trio
from _common import (
    STEP_TIMEOUT,
    BenchClient,
    Child,
    annotation_action,
    bare_argv,
    bridge_argv,
    child_process,
    clients,
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

Subscribe = Callable[[BenchClient, str, int], Awaitable[None]]


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
        #: The client process's CPU time per envelope (receiving and parsing, all clients).
        self.client_us = client_us


def _subscribe_bridge(mix: Callable[[int], tuple[str, ...]]) -> Subscribe:
    async def subscribe(client: BenchClient, channel: str, index: int) -> None:
        await client.initialize([channel], versions=mix(index))

    return subscribe


async def _subscribe_bare(client: BenchClient, channel: str, index: int) -> None:
    await client.request("subscribe", {"channel": channel})


async def fan_out(
    server: Child,
    producer: BenchClient,
    work: Workload,
    subscribe: Subscribe,
    count: int,
    actions: int,
    tag: str,
) -> Result:
    """One run: `count` fresh subscribers, `actions` dispatches; returns total envelopes/s."""
    chat = work.channel
    frames = [producer.dispatch_frame(chat, work.action(i)) for i in range(actions)]
    expected = [work.key(work.action(i)) for i in range(actions)]
    received = [0] * count
    finished = [0] * count
    remaining = [count]
    sample: list[dict[str, Any]] = []
    problems: list[str] = []
    done = trio.Event()

    def handler_for(index: int) -> Callable[[dict[str, Any], int], None]:
        def on_envelope(env: dict[str, Any], at: int) -> None:
            if env["channel"] != chat or env["action"]["type"] != work.type:
                return
            n = received[index]
            if env.get("rejectionReason") is not None:
                problems.append(f"rejected: {env['rejectionReason']}")
            elif work.key(env["action"]) != expected[n]:
                problems.append(f"client {index}: envelope {n} out of order")
            received[index] = n + 1
            if n + 1 == actions:
                finished[index] = at
                if not sample:
                    sample.append(env)
                remaining[0] -= 1
                if remaining[0] == 0:
                    done.set()

        return on_envelope

    async with clients(server.url, count, tag) as subs:
        for index, sub in enumerate(subs):
            sub.keep = False
            await subscribe(sub, chat, index)
            sub.on_envelope = handler_for(index)
        cpu_before = server.cpu_seconds()
        client_before = time.process_time()
        started = time.monotonic_ns()
        for frame in frames:
            await producer.ws.send_message(frame)
        with trio.fail_after(STEP_TIMEOUT):
            while not done.is_set():
                closed = [s.closed for s in subs if s.closed is not None]
                if closed or problems or producer.errors:
                    raise RuntimeError(f"{tag}: {closed or problems[:3] or producer.errors[:3]}")
                with trio.move_on_after(0.05):
                    await done.wait()
        cpu = server.cpu_seconds() - cpu_before
        client_cpu = time.process_time() - client_before
    if problems:
        raise RuntimeError(f"{tag}: {problems[:3]}")
    elapsed = (max(finished) - started) / 1e9
    size = len(orjson.dumps({"jsonrpc": "2.0", "method": "action", "params": sample[0]}))
    delivered = actions * count
    return Result(delivered / elapsed, size, cpu * 1e6 / delivered, client_cpu * 1e6 / delivered)


Results = dict[int, dict[str, list[Result]]]


async def measure(
    counts: list[int],
    actions: int,
    runs: int,
    *,
    workload: str = "draft",
    mixes: tuple[str, ...] = tuple(MIXES),
) -> Results:
    """Per subscriber count: results per bridge mix and "bare", runs interleaved."""
    results: Results = {c: {m: [] for m in (*mixes, "bare")} for c in counts}
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), fake={"time_scale": 0.0})
        async with (
            child_process(bridge_argv(config), "ahp-bridge listening") as bridge_server,
            child_process(bare_argv(), "bare listening") as bare_server,
            clients(bridge_server.url, 1, "producer") as (producer,),
            clients(bare_server.url, 1, "bare-producer") as (bare_producer,),
        ):
            producer.keep = False
            bare_producer.keep = False
            work = Workload(workload, BARE_CHAT, "ahp-session:/bench")
            if mixes:
                await producer.initialize(versions=V10)
                session, chat = await ready_session(producer)
                channel = session + "/annotations" if workload == "annotation" else chat
                work = Workload(workload, channel, session)
            bare_work = Workload(workload, BARE_CHAT, work.session)
            for count in counts:
                for run in range(runs):
                    for mix in mixes:
                        results[count][mix].append(
                            await fan_out(
                                bridge_server,
                                producer,
                                work,
                                _subscribe_bridge(MIXES[mix]),
                                count,
                                actions,
                                f"b{mix}-{count}.{run}",
                            )
                        )
                    results[count]["bare"].append(
                        await fan_out(
                            bare_server,
                            bare_producer,
                            bare_work,
                            _subscribe_bare,
                            count,
                            actions,
                            f"t{count}.{run}",
                        )
                    )
    return results


async def transport_ceiling(counts: list[int], actions: int, runs: int) -> dict[int, float]:
    """Median envelopes/s per subscriber count through the bare broadcast server only."""
    results = await measure(counts, actions, runs, mixes=())
    return {c: median([r.rate for r in results[c]["bare"]]) for c in counts}


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
        "--workload", default="draft,annotation", help="draft and/or annotation, comma-separated"
    )
    parser.add_argument(
        "--in-process", action="store_true", help="the host's fan-out alone, no sockets"
    )
    args = parser.parse_args()
    actions = args.actions or (400 if args.quick else 2000)
    runs = args.runs or (2 if args.quick else 3)
    if not 1 <= actions <= MAX_ACTIONS:
        parser.error(f"--actions must be 1..{MAX_ACTIONS} (the per-client outbound queue)")
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    if not counts or min(counts) < 1 or max(counts) > 200:
        parser.error("--clients: counts between 1 and 200")
    workloads = [w.strip() for w in args.workload.split(",") if w.strip()]
    if not workloads or any(w not in ("draft", "annotation") for w in workloads):
        parser.error("--workload: draft and/or annotation")
    print(machine_note())
    if args.in_process:
        main_in_process(counts, actions, max(runs, 7), workloads)
        return
    for workload in workloads:
        kind = "chat/draftChanged" if workload == "draft" else "annotations/set"
        print(f"\nfan-out, {workload}: {actions} {kind} actions per run, median of {runs} runs")
        results = trio.run(lambda w=workload: measure(counts, actions, runs, workload=w))
        print(table(HEADERS, [_row(count, results[count]) for count in counts]))


HEADERS = [
    "clients",
    "all 1.0 env/s",
    "all 0.6 env/s",
    "mixed (5 lines) env/s",
    "mixed/1.0",
    "bare ws env/s",
    "1.0/bare",
    "server CPU us/env (1.0/mixed/bare)",
]


def _row(count: int, results: dict[str, list[Result]]) -> list[Any]:
    rate = {mix: median([r.rate for r in runs]) for mix, runs in results.items()}
    cpu = {mix: median([r.cpu_us for r in runs]) for mix, runs in results.items()}
    return [
        count,
        f"{rate['1.0']:,.0f}",
        f"{rate['0.6']:,.0f}",
        f"{rate['mixed']:,.0f}",
        f"{rate['mixed'] / rate['1.0']:.2f}",
        f"{rate['bare']:,.0f}",
        f"{rate['1.0'] / rate['bare']:.2f}",
        f"{cpu['1.0']:.1f}/{cpu['mixed']:.1f}/{cpu['bare']:.1f}",
    ]


if __name__ == "__main__":
    main()
