"""Benchmark the fake provider: events per second it emits, recorded and replayed.

Run: python bench/fake_provider.py [--chunks N] [--turns N]
Prints figures only; nothing here is asserted. Pacing is off (time_scale 0), so the
figures are the cost of the fake itself: building events, its own record (in memory, or
JSONL on disk with a data dir), and the recorder's JSONL writes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import trio
from ahp_bridge_fake import FakeProvider, parse_script
from ahp_bridge_fake.record import RecordingProvider
from ahp_bridge_fake.replay import replay_provider
from ahp_bridge_fake.testing import EventLog

from ahp_bridge.agentapi import OpenRequest, Prompt


def _script(chunks: int) -> str:
    text = "x" * (chunks * 8)
    return f"""
[[prompts]]
[[prompts.steps]]
kind = "text"
text = "{text}"
chunk_size = 8
[[prompts.steps]]
kind = "tool"
name = "shell"
output = "ok"
"""


async def _run(provider: Any, turns: int) -> tuple[int, float]:
    sink = EventLog()
    async with provider:
        conversation = await provider.open(OpenRequest(events=sink))
        started = time.perf_counter()
        for i in range(turns):
            start = len(sink.events)
            await conversation.send(Prompt(text=f"go {i}"))
            await sink.turn_end(after=start)
        elapsed = time.perf_counter() - started
    return len(sink.events), elapsed


def _case(name: str, make: Any, turns: int, reps: int = 3) -> None:
    rates = []
    count = 0
    for _ in range(reps):
        count, elapsed = trio.run(_run, make(), turns)
        rates.append(count / elapsed)
    print(f"{name:<34} {count:>7} events  {statistics.median(rates):>10,.0f} events/s (median)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=500, help="deltas per turn")
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()
    script = parse_script(_script(args.chunks), "bench.toml")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _case("fake, in-memory record", lambda: FakeProvider(script, time_scale=0), args.turns)
        counter = iter(range(1000))
        _case(
            "fake, JSONL record (data_dir)",
            lambda: FakeProvider(script, time_scale=0, data_dir=root / f"d{next(counter)}"),
            args.turns,
        )
        recording = root / "rec.jsonl"
        _case(
            "recorded (RecordingProvider)",
            lambda: RecordingProvider(FakeProvider(script, time_scale=0), recording),
            args.turns,
        )
        size = recording.stat().st_size
        _case("replayed from the recording", lambda: replay_provider(recording, time_scale=0), 1)
        print(f"recording: {size / 1e6:.1f} MB for {args.turns} turns")


if __name__ == "__main__":
    main()
