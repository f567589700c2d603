"""What the ACP provider costs: an ACP agent subprocess beside the fake provider in-process.

Prints, side by side: streamed events per second (one turn of many small deltas, from send to
the turn's end), first-delta latency (send to the first delta of a short answer, median and
p90), and agent start time (provider entered, i.e. spawned and ``initialize`` answered; then
the first ``session/new``). For the fake in-process, the ACP provider driving the SDK-built test
agent (``tests/support/acp_agent.py``, a Python subprocess), and, when scripts/install-acp-agents.sh
installed them, Claude Code's ACP agent against the scripted Anthropic server and Codex's
(codex-acp) against the scripted Responses API server, both on 127.0.0.1 (their latency is the
agent's own work per prompt; they are not asked to stream thousands of events).

    .venv/bin/python bench/acp.py [--events 5000] [--turns 20] [--starts 5]
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, and this file's name would
# shadow the SDK's package `acp`: put the repository root there instead.
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
sys.path.insert(0, str(HERE.parent))

import argparse  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import AsyncIterator, Callable  # noqa: E402
from contextlib import AbstractAsyncContextManager, asynccontextmanager  # noqa: E402

import trio  # noqa: E402
from ahp_bridge_acp import create_provider  # noqa: E402
from ahp_bridge_fake import FakeProvider, parse_script  # noqa: E402

from ahp_bridge import agentapi  # noqa: E402
from bench._common import ProviderSink  # noqa: E402
from tests.support.acp_agents import (  # noqa: E402
    CLAUDE_ACP,
    CODEX_ACP,
    claude_options,
    codex_options,
    sdk_agent_options,
)
from tests.support.anthropic_server import AnthropicServer  # noqa: E402
from tests.support.model_server import Text  # noqa: E402
from tests.support.openai_responses_server import ResponsesServer  # noqa: E402

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
text = "answer"
[[prompts.steps]]
kind = "text"
text = "Hello from the fake."
"""

WAIT = 120.0  # every wait fails rather than hang


Factory = Callable[[], AbstractAsyncContextManager[agentapi.Provider]]


def fake_factory(events: int) -> Factory:
    @asynccontextmanager
    async def factory() -> AsyncIterator[agentapi.Provider]:
        script = parse_script(SCRIPT.replace("{text}", "x" * (4 * events)), "bench.toml")
        async with FakeProvider(script, time_scale=0) as provider:
            yield provider

    return factory


def acp_factory(options: dict[str, object]) -> Factory:
    def factory() -> AbstractAsyncContextManager[agentapi.Provider]:
        provider: agentapi.Provider = create_provider(options)
        return provider

    return factory


async def measure(
    factory: Factory, workdir: str, stream: str | None, answer: str, turns: int, starts: int
) -> dict[str, float]:
    out: dict[str, float] = {}
    enters, opens = [], []
    for _ in range(starts):
        t0 = time.perf_counter()
        async with factory() as provider:
            t1 = time.perf_counter()
            conv = await provider.open(agentapi.OpenRequest(workdir=workdir, events=ProviderSink()))
            t2 = time.perf_counter()
            await conv.close()
        enters.append(t1 - t0)
        opens.append(t2 - t1)
    out["start_ms"] = statistics.median(enters) * 1e3
    out["open_ms"] = statistics.median(opens) * 1e3

    async with factory() as provider:
        sink = ProviderSink()
        conv = await provider.open(agentapi.OpenRequest(workdir=workdir, events=sink))
        done = 0
        if stream is not None:
            before = sink.count
            start = time.perf_counter()
            await conv.send(agentapi.Prompt(text=stream))
            done += 1
            await sink.until(ended=done, timeout=WAIT)
            elapsed = time.perf_counter() - start
            out["events"] = sink.count - before
            out["events_per_s"] = (sink.count - before) / elapsed
        latencies = []
        for _ in range(turns):
            with sink.lock:
                sink.first_delta = 0.0
            t0 = time.perf_counter()
            await conv.send(agentapi.Prompt(text=answer))
            done += 1
            await sink.until(ended=done, timeout=WAIT)
            latencies.append(sink.first_delta - t0)
        await conv.close()
    out["first_delta_med_ms"] = statistics.median(latencies) * 1e3
    out["first_delta_p90_ms"] = statistics.quantiles(latencies, n=10)[8] * 1e3
    return out


async def main(events: int, turns: int, starts: int) -> None:
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load {load[0]:.2f}, Python {sys.version.split()[0]}")
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="ahp-bench-acp-") as tmp:
        work = Path(tmp) / "work"
        work.mkdir()
        results["fake in-process"] = await measure(
            fake_factory(events), str(work), "stream", "answer", turns, starts
        )
        results["ACP: SDK test agent"] = await measure(
            acp_factory(sdk_agent_options(Path(tmp) / "store")),
            str(work),
            f"stream {events}",
            "answer",
            turns,
            starts,
        )
        if CLAUDE_ACP.is_file():
            with AnthropicServer() as srv:
                srv.script("bench answer", [Text("Hello from the scripted model.")])
                results["ACP: Claude Agent"] = await measure(
                    acp_factory(claude_options(srv.base_url, Path(tmp) / "home")),
                    str(work),
                    None,
                    "bench answer",
                    max(3, turns // 4),
                    max(2, starts // 2),
                )
        if CODEX_ACP.is_file():
            with ResponsesServer() as responses:
                responses.script("bench answer", [Text("Hello from the scripted model.")])
                results["ACP: Codex"] = await measure(
                    acp_factory(codex_options(responses.base_url, Path(tmp) / "codex-home")),
                    str(work),
                    None,
                    "bench answer",
                    max(3, turns // 4),
                    max(2, starts // 2),
                )
    rows = [
        ("streamed events/s", "events_per_s", "{:,.0f}"),
        ("first delta, median (ms)", "first_delta_med_ms", "{:,.1f}"),
        ("first delta, p90 (ms)", "first_delta_p90_ms", "{:,.1f}"),
        ("start: spawn+initialize (ms)", "start_ms", "{:,.0f}"),
        ("first session/new (ms)", "open_ms", "{:,.1f}"),
    ]
    print(f"{events} events in the streamed turn; {turns} short answers; {starts} starts\n")
    print(f"{'':30}" + "".join(f"{way:>22}" for way in results))
    for label, key, fmt in rows:
        cells = [fmt.format(r[key]) if key in r else "-" for r in results.values()]
        print(f"{label:30}" + "".join(f"{cell:>22}" for cell in cells))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--starts", type=int, default=5)
    args = parser.parse_args()
    trio.run(main, args.events, args.turns, args.starts)
