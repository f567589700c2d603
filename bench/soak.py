"""Soak: N clients x T seconds of streaming turns; envelopes delivered, RSS and fd growth.

Run: python bench/soak.py [--clients 20] [--seconds 60] [--watchers 2]

The bridge (`ahp-bridge serve`, the fake provider with a bench script) runs in its own
process. Each client has a session of its own and runs turns back to back on its default chat,
each turn 64 streamed 8-character deltas 10 ms apart, a tool call and a usage report;
`--watchers` more
clients (0.7, so both wire versions are in use) subscribe to every chat and only read. Every
client checks that each of its turns completed, and each watcher that it saw every turn end.

Sampled every few seconds from /proc: the bridge's RSS and open fds. The report separates
what turn history costs (a live chat keeps its last `limits.max_live_turns` turns; older ones
go to the catalog) from growth that would be a leak: RSS per completed turn in the first and
second half of the run, RSS growth from the first sample (the clients connected, their
sessions made, the first turns run) to the end, and fds after every client has gone compared
with before they came. Figures only.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import trio
from _common import (
    STEP_TIMEOUT,
    BenchClient,
    bridge_argv,
    child_process,
    clients,
    machine_note,
    ready_session,
    table,
    write_config,
)

MIB = 1024 * 1024
V1 = ("1.0.0", "0.9.0")
DELTAS = 64
SCRIPT = f"""display_name = "Fake agent (soak bench)"

[[prompts]]
[[prompts.steps]]
kind = "text"
text = "{"abcdefgh" * DELTAS}"
chunk_size = 8
delay = 0.01
[[prompts.steps]]
kind = "tool"
name = "shell"
title = "List files"
input = '{{"command": "ls"}}'
output = "a.txt"
exit_code = 0
[[prompts.steps]]
kind = "usage"
ai_units = 0.1
"""


def rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


class Driver:
    """One client running turns on its own chat until the deadline."""

    def __init__(self, client: BenchClient) -> None:
        self.client = client
        self.turns = 0
        self.envelopes = 0
        self.chat = ""
        self._ended = trio.Event()
        self._turn = ""
        client.keep = False
        client.on_envelope = self._on_envelope

    def _on_envelope(self, env: dict[str, Any], _: int) -> None:
        self.envelopes += 1
        action = env["action"]
        ends = ("chat/turnComplete", "chat/error", "chat/turnCancelled")
        if (
            env["channel"] == self.chat
            and action.get("turnId") == self._turn
            and action["type"] in ends
        ):
            if action["type"] != "chat/turnComplete":
                raise RuntimeError(f"turn ended with {action['type']}: {action}")
            self._ended.set()

    async def run(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            self._turn, self._ended = str(uuid.uuid4()), trio.Event()
            action = {
                "type": "chat/turnStarted",
                "turnId": self._turn,
                "startedAt": "2026-01-01T00:00:00.000Z",
                "message": {"text": f"turn {self.turns}", "origin": {"kind": "user"}},
            }
            await self.client.ws.send_message(self.client.dispatch_frame(self.chat, action))
            with trio.fail_after(STEP_TIMEOUT):
                await self._ended.wait()
            self.turns += 1


class Watcher:
    def __init__(self, client: BenchClient) -> None:
        self.client = client
        self.envelopes = 0
        self.ends = 0
        client.keep = False
        client.on_envelope = self._on_envelope

    def _on_envelope(self, env: dict[str, Any], _: int) -> None:
        self.envelopes += 1
        if env["action"]["type"] == "chat/turnComplete":
            self.ends += 1


async def soak(n_clients: int, seconds: float, n_watchers: int, every: float) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "soak.toml"
        script.write_text(SCRIPT)
        config = write_config(Path(tmp), fake={"script": str(script), "time_scale": 1.0})
        async with child_process(bridge_argv(config), "ahp-bridge listening") as bridge:
            pid = bridge.pid
            base_rss, base_fds = rss(pid), fds(pid)
            samples: list[tuple[float, int, int, int]] = []
            async with (
                clients(bridge.url, n_clients, "soak") as driving,
                clients(bridge.url, n_watchers, "watch") as watching,
            ):
                drivers = [Driver(c) for c in driving]
                for driver in drivers:
                    await driver.client.initialize(versions=V1)
                    _, driver.chat = await ready_session(driver.client)
                    await driver.client.request("subscribe", {"channel": driver.chat})
                watchers = [Watcher(c) for c in watching]
                for watcher in watchers:
                    await watcher.client.initialize()
                    for driver in drivers:
                        await watcher.client.request("subscribe", {"channel": driver.chat})
                start = time.monotonic()
                deadline = start + seconds
                samples.append((0.0, rss(pid), fds(pid), 0))

                async def sample() -> None:
                    while True:
                        await trio.sleep(every)
                        turns = sum(d.turns for d in drivers)
                        samples.append((time.monotonic() - start, rss(pid), fds(pid), turns))

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(sample)
                    async with trio.open_nursery() as turns:
                        for driver in drivers:
                            turns.start_soon(driver.run, deadline)
                    nursery.cancel_scope.cancel()
                elapsed = time.monotonic() - start
                total_turns = sum(d.turns for d in drivers)
                samples.append((elapsed, rss(pid), fds(pid), total_turns))
                for client in [*driving, *watching]:
                    if client.closed is None:
                        assert await client.request("ping", {"channel": "ahp-root://"}) is None
                # A watcher that fell behind is disconnected by design (close 1008, it would
                # `reconnect`); say so rather than count its missed envelopes as lost.
                dropped = [w.client.closed for w in watchers if w.client.closed is not None]
                missed = [
                    w.ends for w in watchers if w.client.closed is None and w.ends < total_turns
                ]
                delivered = sum(d.envelopes for d in drivers) + sum(w.envelopes for w in watchers)
                connected_fds = fds(pid)
            await trio.sleep(1.0)  # the bridge notices the closes
            after_rss, after_fds = rss(pid), fds(pid)

    print(
        f"{n_clients} clients x {seconds:g} s (+{n_watchers} 0.7 watchers of every chat): "
        f"{total_turns:,} turns, {delivered:,} envelopes delivered "
        f"({delivered / elapsed:,.0f}/s), watchers that missed a turn end: {len(missed)}, "
        f"watchers disconnected as too slow: {len(dropped)}"
    )
    rows = [
        [f"{t:.0f}", turns, f"{r / MIB:.0f}", f"{(r - base_rss) / MIB:+.0f}", f]
        for t, r, f, turns in samples
    ]
    print(table(["t s", "turns", "RSS MiB", "vs idle MiB", "fds"], rows))
    half = len(samples) // 2
    first, mid, last = samples[0], samples[half], samples[-1]

    def per_turn(a: tuple[float, int, int, int], b: tuple[float, int, int, int]) -> str:
        turns = b[3] - a[3]
        return f"{(b[1] - a[1]) / max(turns, 1) / 1024:.1f} KiB" if turns else "-"

    warm = samples[1] if len(samples) > 2 else first

    def growth(a: tuple[float, int, int, int], b: tuple[float, int, int, int]) -> str:
        return f"{(b[1] - a[1]) / max(a[1], 1):+.1%}"

    print(
        f"RSS per turn: first half {per_turn(first, mid)}, second half {per_turn(mid, last)} "
        "(turn history: each live chat keeps its last limits.max_live_turns turns)"
    )
    print(
        f"RSS growth after warm-up (t={warm[0]:.0f} s to the end): {growth(warm, last)}; "
        f"over the second half: {growth(mid, last)}"
    )
    print(
        f"fds: idle {base_fds}, with {n_clients + n_watchers} clients {connected_fds}, after they "
        f"left {after_fds} (growth {after_fds - base_fds:+d}); RSS after they left "
        f"{after_rss / MIB:.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--watchers", type=int, default=2)
    parser.add_argument("--every", type=float, default=5.0, help="seconds between samples")
    args = parser.parse_args()
    print(machine_note())
    trio.run(soak, args.clients, args.seconds, args.watchers, args.every)


if __name__ == "__main__":
    main()
