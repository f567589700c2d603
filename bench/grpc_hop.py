"""What the gRPC hop costs: the fake provider in-process vs. served over gRPC (Unix socket).

Prints, side by side: streamed events per second (one turn of many small deltas, from send
to the turn's end), and per-call round trips of set_title and respond (median and p99);
for the fake in-process, served over gRPC in this same process (one GIL for both ends), and
served by ``python -m ahp_bridge_remote.server`` in a second process, as deployed.

    .venv/bin/python bench/grpc_hop.py [--events 20000] [--calls 500] [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import trio
from _common import ProviderSink
from ahp_bridge_fake import FakeProvider, parse_script
from ahp_bridge_remote import RemoteProvider
from ahp_bridge_remote.server import serve

from ahp_bridge import agentapi

SCRIPT = """
display_name = "bench"
[defaults]
chunk_size = 4
delay = 0
[[prompts]]
text = "stream"
[[prompts.steps]]
kind = "text"
text = "{text}"
[[prompts]]
text = "ask"
[[prompts.steps]]
kind = "permission"
title = "May I?"
"""


def fake(events: int) -> FakeProvider:
    script = parse_script(SCRIPT.replace("{text}", "x" * (4 * events)), "bench.toml")
    return FakeProvider(script, time_scale=0)


@asynccontextmanager
async def in_process(events: int) -> AsyncIterator[agentapi.Provider]:
    async with fake(events) as provider:
        yield provider


@asynccontextmanager
async def over_grpc(events: int) -> AsyncIterator[agentapi.Provider]:
    with tempfile.TemporaryDirectory(prefix="ahpb") as folder:
        address = f"unix:{Path(folder) / 'b.sock'}"
        async with trio.open_nursery() as nursery:
            await nursery.start(serve, fake(events), address)
            async with RemoteProvider(address) as remote:
                yield remote
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def over_grpc_subprocess(events: int) -> AsyncIterator[agentapi.Provider]:
    """The server in its own process (python -m ahp_bridge_remote.server), as deployed."""
    with tempfile.TemporaryDirectory(prefix="ahpb") as folder:
        async with (
            _server_process(Path(folder), events) as address,
            RemoteProvider(address) as remote,
        ):
            yield remote


@asynccontextmanager
async def _server_process(folder: Path, events: int) -> AsyncIterator[str]:
    script = folder / "bench.toml"
    script.write_text(SCRIPT.replace("{text}", "x" * (4 * events)))
    address = f"unix:{folder / 'b.sock'}"
    argv = [
        sys.executable, "-m", "ahp_bridge_remote.server", "--provider", "fake",
        "--listen", address, "--option", f"script={script}", "--option", "time_scale=0",
    ]  # fmt: skip
    proc = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        line = b""
        while not line.endswith(b"\n"):
            chunk = await proc.stdout.receive_some(1)
            if not chunk:
                raise RuntimeError("the server process exited before listening")
            line += chunk
        yield address
    finally:
        proc.terminate()
        await proc.wait()
        if proc.stdout is not None:
            await proc.stdout.aclose()


async def measure(
    factory: Callable[[int], AbstractAsyncContextManager[agentapi.Provider]],
    events: int,
    calls: int,
) -> dict[str, float]:
    async with factory(events) as provider:
        sink = ProviderSink()
        conv = await provider.open(agentapi.OpenRequest(workdir="/tmp", events=sink))
        before = sink.count
        start = time.perf_counter()
        await conv.send(agentapi.Prompt(text="stream"))
        await sink.until(ended=1)
        elapsed = time.perf_counter() - start
        streamed = sink.count - before

        titles = []
        for i in range(calls):
            t0 = time.perf_counter()
            await conv.set_title(f"title {i}")
            titles.append(time.perf_counter() - t0)

        responds = []
        for i in range(max(1, calls // 5)):
            await conv.send(agentapi.Prompt(text="ask"))
            await sink.until(pending=i + 1)
            interaction = sink.pending[i]
            t0 = time.perf_counter()
            await conv.respond(interaction, agentapi.Answer(decision="allow-once"))
            responds.append(time.perf_counter() - t0)
            await sink.until(ended=i + 2)
        await conv.close()
    return {
        "events_per_s": streamed / elapsed,
        "events": streamed,
        "set_title_med_us": statistics.median(titles) * 1e6,
        "set_title_p99_us": statistics.quantiles(titles, n=100)[98] * 1e6,
        "respond_med_us": statistics.median(responds) * 1e6,
        "respond_p99_us": statistics.quantiles(responds, n=100)[98] * 1e6
        if len(responds) >= 2
        else responds[0] * 1e6,
    }


async def main(events: int, calls: int, reps: int) -> None:
    ways = {
        "in-process": in_process,
        "gRPC, 1 process": over_grpc,
        "gRPC, 2 processes": over_grpc_subprocess,
    }
    results: dict[str, list[dict[str, float]]] = {way: [] for way in ways}
    for _ in range(reps):
        for way, factory in ways.items():
            results[way].append(await measure(factory, events, calls))
    rows = [
        ("streamed events/s", "events_per_s", "{:,.0f}"),
        ("set_title median (µs)", "set_title_med_us", "{:,.0f}"),
        ("set_title p99 (µs)", "set_title_p99_us", "{:,.0f}"),
        ("respond median (µs)", "respond_med_us", "{:,.0f}"),
        ("respond p99 (µs)", "respond_p99_us", "{:,.0f}"),
    ]
    n = int(results["in-process"][0]["events"])
    print(f"fake provider, {n} events per turn, {calls} set_title, {calls // 5} respond; ")
    print(f"median of {reps} runs\n")
    print(f"{'':24}" + "".join(f"{way:>20}" for way in ways))
    for label, key, fmt in rows:
        cells = [fmt.format(statistics.median(r[key] for r in results[w])) for w in results]
        print(f"{label:24}" + "".join(f"{cell:>20}" for cell in cells))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=20000)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    trio.run(main, args.events, args.calls, args.reps)
