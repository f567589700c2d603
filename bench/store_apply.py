"""Benchmark the store's hot path: chat/delta throughput and reconnect replay.

Run: python bench/store_apply.py [--deltas N] [--missed N]
Prints figures only; nothing here is asserted.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ahp_bridge.state import Store

CHAT = "ahp-chat:/bench"
SESSION = "ahp-session:/bench"


def _clock() -> str:
    return "2026-01-01T00:00:00.000Z"


def _turn(i: int) -> dict[str, Any]:
    return {
        "id": f"t{i}",
        "startedAt": "2026-01-01T00:00:00.000Z",
        "duration": 1000,
        "message": {"text": f"question {i} " * 20, "origin": {"kind": "user"}},
        "responseParts": [
            {"kind": "markdown", "id": f"m{i}", "content": "answer text " * 200},
            {
                "kind": "toolCall",
                "toolCall": {
                    "status": "completed",
                    "toolCallId": f"c{i}",
                    "toolName": "bash",
                    "displayName": "Bash",
                    "invocationMessage": "ls",
                    "success": True,
                    "pastTenseMessage": "ran ls",
                },
            },
        ],
        "state": "complete",
    }


def _store(log_limit: int) -> Store:
    store = Store(clock=_clock, log_limit=log_limit)
    store.create(
        SESSION,
        "session",
        {
            "provider": "bench",
            "title": "b",
            "status": 1,
            "lifecycle": "ready",
            "activeClients": [],
            "chats": [],
        },
    )
    store.create(
        CHAT,
        "chat",
        {
            "resource": CHAT,
            "title": "b",
            "status": 1,
            "modifiedAt": _clock(),
            "turns": [_turn(i) for i in range(100)],
        },
    )
    store.apply(
        CHAT,
        {
            "type": "chat/turnStarted",
            "turnId": "live",
            "startedAt": _clock(),
            "message": {"text": "go", "origin": {"kind": "user"}},
        },
    )
    store.apply(
        CHAT,
        {
            "type": "chat/responsePart",
            "turnId": "live",
            "part": {"kind": "markdown", "id": "p", "content": ""},
        },
    )
    return store


def _delta() -> dict[str, Any]:
    return {"type": "chat/delta", "turnId": "live", "partId": "p", "content": "token "}


def _time_deltas(n: int, *, frame: bool) -> tuple[float, Store]:
    store = _store(log_limit=10_000)
    start = time.perf_counter()
    for _ in range(n):
        env = store.apply(CHAT, _delta())
        if frame:
            _ = env.frame
    return time.perf_counter() - start, store


def bench_deltas(n: int, repeat: int = 3) -> None:
    """Best of `repeat` runs (the first run also pays for growing the heap)."""
    apply_s = min(_time_deltas(n, frame=False)[0] for _ in range(repeat))
    framed_s, store = min((_time_deltas(n, frame=True) for _ in range(repeat)), key=lambda r: r[0])
    final = len(store.state(CHAT)["activeTurn"]["responseParts"][0]["content"])
    print(
        f"chat/delta on a 100-turn chat, {n} deltas (final part {final} chars), best of {repeat}:"
    )
    print(f"  apply only        {n / apply_s:>10,.0f} actions/s  ({apply_s * 1e6 / n:.1f} µs each)")
    print(
        f"  apply + frame     {n / framed_s:>10,.0f} actions/s  ({framed_s * 1e6 / n:.1f} µs each)"
    )


def bench_replay(missed: int) -> None:
    store = _store(log_limit=max(missed + 10, 10_000))
    last_seen = store.server_seq
    for i in range(missed):
        if i % 10 == 9:  # some traffic on another channel the client also follows
            store.apply(SESSION, {"type": "session/titleChanged", "title": f"t{i}"})
        else:
            store.apply(CHAT, _delta())
    start = time.perf_counter()
    envelopes = store.replay(last_seen, [CHAT, SESSION])
    replay_s = time.perf_counter() - start
    assert envelopes is not None
    start = time.perf_counter()
    frames = [e.frame for e in envelopes]
    frame_s = time.perf_counter() - start
    size = sum(len(f) for f in frames)
    print(f"replay of {len(envelopes)} missed actions:")
    print(f"  store.replay      {replay_s * 1e3:>8.2f} ms")
    print(f"  + frames          {frame_s * 1e3:>8.2f} ms  ({size / 1e6:.2f} MB of JSON)")
    start = time.perf_counter()
    store.replay(last_seen, [SESSION])
    print(f"  filtered (10%)    {(time.perf_counter() - start) * 1e3:>8.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deltas", type=int, default=20_000)
    parser.add_argument("--missed", type=int, default=10_000)
    args = parser.parse_args()
    bench_deltas(args.deltas)
    bench_replay(args.missed)


if __name__ == "__main__":
    main()
