"""Benchmark agentapi Events through Go JSON (the translator and gRPC/record paths).

Run: python bench/agentapi_json.py [--n N] [--reps R]
Prints ops/s (best and median of R runs of N operations); nothing here is asserted.
Paths measured:
  build delta    : Event(kind=DELTA, delta=Delta(...))   (what an adapter does per token)
  to_json delta  : to_json(event)                         (Go JSON dict)
  from_json delta: Event.from_json(dict)
  to_json tool   : to_json of an item event with a running tool call and output tail
  from_json tool : Event.from_json of the same
  model_dump     : event.model_dump() (python mode), for comparison
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ahp_bridge.agentapi import (
    Delta,
    Event,
    EventKind,
    Item,
    ItemKind,
    OutputLine,
    ToolCall,
    ToolStatus,
    to_json,
)


def _delta() -> Event:
    return Event(
        kind=EventKind.DELTA,
        delta=Delta(item_id="m1", kind=ItemKind.ASSISTANT, text="Hello, wor"),
    )


TOOL = Event(
    kind=EventKind.ITEM,
    item=Item(
        id="call_1",
        kind=ItemKind.TOOL,
        time=datetime(2026, 5, 1, 12, 0, tzinfo=UTC),
        tool=ToolCall(
            name="bash",
            title="Run tests",
            status=ToolStatus.RUNNING,
            input='{"command": "pytest -q"}',
            progress="collecting",
            tail=[OutputLine(text=f"line {i}") for i in range(10)],
        ),
    ),
)


def run(label: str, fn: Callable[[], Any], n: int, reps: int) -> None:
    rates = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rates.append(n / (time.perf_counter() - start))
    best, median = max(rates), statistics.median(rates)
    print(f"{label:16s} best {best:>10,.0f} ops/s   median {median:>10,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    delta = _delta()
    delta_json = to_json(delta)
    tool_json = to_json(TOOL)
    run("build delta", _delta, args.n, args.reps)
    run("to_json delta", lambda: to_json(delta), args.n, args.reps)
    run("from_json delta", lambda: Event.from_json(delta_json), args.n, args.reps)
    run("to_json tool", lambda: to_json(TOOL), args.n, args.reps)
    run("from_json tool", lambda: Event.from_json(tool_json), args.n, args.reps)
    run("model_dump delta", delta.model_dump, args.n, args.reps)


if __name__ == "__main__":
    main()
