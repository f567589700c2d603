"""The engine alone: CPU per client action, from the frame's text to the envelope queued.

Run: python bench/engine_dispatch.py [--actions N] [--runs R] [--profile]

A 1.0 peer with a session made through the sans-IO engine (tests/support/engine.py's harness:
no sockets, no trio) dispatches N `chat/draftChanged` actions on its chat, as the fan-out bench's
producer does; every one is parsed, validated, decided, reduced, encoded and queued for the one
subscriber. What the bridge spends per action above this is the transport's. Median of the runs;
`--profile` prints the top of a cProfile of one more run. Figures only.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ahp_bridge.engine.inputs import Received
from tests.support.engine import Harness


def run(actions: int, profile: bool = False) -> float:
    h = Harness()
    peer = h.connect("producer", "1.0.0")
    chat = h.create_session(peer)
    h.subscribe(peer, chat)
    frames = [
        orjson.dumps(
            {
                "jsonrpc": "2.0",
                "method": "dispatchAction",
                "params": {
                    "channel": chat,
                    "clientSeq": i + 1,
                    "action": {
                        "type": "chat/draftChanged",
                        "draft": {"text": f"draft {i:08d} " + "x" * 33, "origin": {"kind": "user"}},
                    },
                },
            }
        ).decode()
        for i in range(actions)
    ]
    engine, outbox = h.engine, peer.outbox
    profiler = cProfile.Profile() if profile else None
    started = time.process_time()
    if profiler is not None:
        profiler.enable()
    for frame in frames:
        engine.handle(Received(peer, frame))
        outbox.clear()
    if profiler is not None:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("tottime").print_stats(20)
    return (time.process_time() - started) * 1e6 / actions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--actions", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    figures = [run(args.actions) for _ in range(args.runs)]
    print(
        f"engine: {statistics.median(figures):.1f} µs of CPU per chat/draftChanged dispatch "
        f"(median of {args.runs} runs of {args.actions}; min {min(figures):.1f})"
    )
    if args.profile:
        run(args.actions, profile=True)


if __name__ == "__main__":
    main()
