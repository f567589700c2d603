"""Envelope fan-out throughput: one producer, N actions on one chat, 1/10/50 subscribers.

Run: python bench/fanout.py [--quick] [--actions N] [--runs R] [--clients 1,10,50]

The bridge (`ahp-bridge serve`, fake provider) runs in its own process; a producer client
dispatches N `chat/draftChanged` actions as fast as its socket takes them, and every
subscriber must receive all N envelopes, in order (checked). The figure is envelopes
delivered per second, summed over subscribers, from the first dispatch sent to the last
envelope received. Beside it: the same payloads through a bare trio-websocket broadcast
server in its own process (the transport's ceiling: parse once, serialise once, queue to each
client), with the same client code. Figures only; nothing is asserted about speed.

A burst must fit the bridge's per-client outbound queue (4096 frames by default): a client
that falls further behind is disconnected by design, so N is capped below it.
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

Subscribe = Callable[[BenchClient, str], Awaitable[None]]


class Result:
    def __init__(self, rate: float, frame_bytes: int, cpu_us: float, client_us: float) -> None:
        self.rate = rate
        self.frame_bytes = frame_bytes
        #: Server process CPU time per delivered envelope (its cost, whoever is the bottleneck).
        self.cpu_us = cpu_us
        #: The client process's CPU time per envelope (receiving and parsing, all clients).
        self.client_us = client_us


async def _subscribe_bridge(client: BenchClient, chat: str) -> None:
    await client.initialize([chat])


async def _subscribe_bare(client: BenchClient, chat: str) -> None:
    await client.request("subscribe", {"channel": chat})


async def fan_out(
    server: Child,
    producer: BenchClient,
    chat: str,
    subscribe: Subscribe,
    count: int,
    actions: int,
    tag: str,
) -> Result:
    """One run: `count` fresh subscribers, `actions` dispatches; returns total envelopes/s."""
    frames = [producer.dispatch_frame(chat, draft_action(i)) for i in range(actions)]
    expected = [draft_action(i)["draft"]["text"] for i in range(actions)]
    received = [0] * count
    finished = [0] * count
    remaining = [count]
    sample: list[dict[str, Any]] = []
    problems: list[str] = []
    done = trio.Event()

    def handler_for(index: int) -> Callable[[dict[str, Any], int], None]:
        def on_envelope(env: dict[str, Any], at: int) -> None:
            if env["channel"] != chat or env["action"]["type"] != "chat/draftChanged":
                return
            n = received[index]
            if env.get("rejectionReason") is not None:
                problems.append(f"rejected: {env['rejectionReason']}")
            elif env["action"]["draft"]["text"] != expected[n]:
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
            await subscribe(sub, chat)
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


async def measure(
    counts: list[int], actions: int, runs: int, *, bridge: bool = True
) -> dict[int, tuple[list[Result], list[Result]]]:
    """Per subscriber count: (bridge results, bare results), runs interleaved."""
    results: dict[int, tuple[list[Result], list[Result]]] = {c: ([], []) for c in counts}
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
            if bridge:
                await producer.initialize()
                _, chat = await ready_session(producer)
            for count in counts:
                for run in range(runs):
                    if bridge:
                        results[count][0].append(
                            await fan_out(
                                bridge_server,
                                producer,
                                chat,
                                _subscribe_bridge,
                                count,
                                actions,
                                f"b{count}.{run}",
                            )
                        )
                    results[count][1].append(
                        await fan_out(
                            bare_server,
                            bare_producer,
                            BARE_CHAT,
                            _subscribe_bare,
                            count,
                            actions,
                            f"t{count}.{run}",
                        )
                    )
    return results


async def transport_ceiling(counts: list[int], actions: int, runs: int) -> dict[int, float]:
    """Median envelopes/s per subscriber count through the bare broadcast server only."""
    results = await measure(counts, actions, runs, bridge=False)
    return {c: median([r.rate for r in results[c][1]]) for c in counts}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short run (fewer actions, runs)")
    parser.add_argument("--actions", type=int, help=f"actions per run (at most {MAX_ACTIONS})")
    parser.add_argument("--runs", type=int, help="runs per case (the median is reported)")
    parser.add_argument("--clients", default="1,10,50", help="subscriber counts, comma-separated")
    args = parser.parse_args()
    actions = args.actions or (400 if args.quick else 2000)
    runs = args.runs or (2 if args.quick else 3)
    if not 1 <= actions <= MAX_ACTIONS:
        parser.error(f"--actions must be 1..{MAX_ACTIONS} (the per-client outbound queue)")
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    if not counts or min(counts) < 1 or max(counts) > 200:
        parser.error("--clients: counts between 1 and 200")
    print(machine_note())
    print(f"fan-out: {actions} chat/draftChanged actions per run, median of {runs} runs")
    results = trio.run(measure, counts, actions, runs)
    rows = []
    for count in counts:
        bridge, bare = results[count]
        b = median([r.rate for r in bridge])
        t = median([r.rate for r in bare])
        rows.append(
            [
                count,
                f"{b:,.0f}",
                f"{b / count:,.0f}",
                f"{t:,.0f}",
                f"{b / t:.2f}",
                f"{median([r.cpu_us for r in bridge]):.1f}/{median([r.cpu_us for r in bare]):.1f}",
                f"{median([r.client_us for r in bridge]):.1f}",
                f"{bridge[0].frame_bytes}/{bare[0].frame_bytes}",
            ]
        )
    headers = [
        "clients",
        "bridge env/s",
        "per client",
        "bare ws env/s",
        "bridge/bare",
        "server CPU us/env (bridge/bare)",
        "client CPU us/env",
        "frame B (bridge/bare)",
    ]
    print(table(headers, rows))


if __name__ == "__main__":
    main()
