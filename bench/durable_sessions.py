"""Durable sessions: what recording and restoring sessions costs.

Prints figures, asserts nothing about speed:

- catalog: the latency of the awaited session write `createSession` waits for (add_session
  then add_chat through `AsyncCatalog`, off the trio thread), and the rate of queued writes
  (the per-turn `update_chat` + `update_session` pair);
- restore: after a restart, how long the first `subscribe` of a chat with N turns takes (the
  session is restored then: reopen the fake conversation, read its record through the
  HistoryPager, rebuild the turns), against a plain `subscribe` of the same chat afterwards.

Usage: python bench/durable_sessions.py [--sessions 300] [--turns 50 500]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository, for tests.support

from ahp_bridge.config import Settings
from ahp_bridge.host.app import run_bridge
from ahp_bridge.host.durable.catalog import AsyncCatalog, Catalog, ChatRecord, SessionRecord
from ahp_bridge.host.transport.connect import connect_url
from tests.support.ahp_client import AhpClient, open_client

ROOT = "ahp-root://"
SCRIPT = """
display_name = "bench"
[defaults]
chunk_size = 64
delay = 0
[[prompts]]
[[prompts.steps]]
kind = "text"
text = "An answer of moderate length, enough to look like a real reply in a transcript."
"""


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench_catalog(sessions: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        acatalog = AsyncCatalog(Catalog.open(Path(tmp)))
        async with trio.open_nursery() as nursery:
            await nursery.start(acatalog.run)
            latencies = []
            for i in range(sessions):
                uri = f"ahp-session:/{uuid.uuid4()}"
                now = "2026-01-01T00:00:00.000Z"
                start = time.perf_counter()
                await acatalog.call(
                    Catalog.add_session,
                    SessionRecord(
                        uri=uri, provider="fake", workdir="/w", created_at=now, modified_at=now
                    ),
                )
                await acatalog.call(
                    Catalog.add_chat,
                    uri,
                    ChatRecord(f"ahp-chat:/{i}", f"c{i}", now, now),
                    default=True,
                )
                latencies.append((time.perf_counter() - start) * 1000)
            median = statistics.median(latencies)
            print(
                f"catalog: record session+chat ({sessions}x): median {median:.2f} ms,"
                f" p99 {pct(latencies, 0.99):.2f} ms"
            )
            writes = 5000
            start = time.perf_counter()
            for i in range(writes):
                acatalog.submit(Catalog.update_chat, f"ahp-chat:/{i % sessions}", active_turn="")
            await acatalog.call(Catalog.get, "ahp-session:/none")  # after all queued writes
            elapsed = time.perf_counter() - start
            print(f"catalog: queued writes: {writes / elapsed:,.0f} writes/s")
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def bridge(settings: Settings) -> AsyncIterator[tuple[str, trio.Nursery, list[AhpClient]]]:
    clients: list[AhpClient] = []
    async with trio.open_nursery() as nursery:
        port = await nursery.start(run_bridge, settings)
        try:
            yield connect_url("127.0.0.1", port, settings.server.token), nursery, clients
        finally:
            for client in clients:
                await client.close()
            nursery.cancel_scope.cancel()


async def client_for(url: str, nursery: trio.Nursery, clients: list[AhpClient]) -> AhpClient:
    client = await open_client(nursery, url, f"bench-{len(clients)}")
    clients.append(client)
    await client.initialize([ROOT])
    return client


async def prompt(client: AhpClient, chat: str, text: str) -> None:
    turn_id = str(uuid.uuid4())
    action: dict[str, Any] = {
        "type": "chat/turnStarted",
        "turnId": turn_id,
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": {"text": text, "origin": {"kind": "user"}},
    }
    await client.dispatch(chat, action)
    await client.wait_for(lambda: any(t["id"] == turn_id for t in client.states[chat]["turns"]))


async def bench_restore(turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.toml"
        script.write_text(SCRIPT)
        settings = Settings()
        settings.server.port = 0
        settings.bridge.data_dir = Path(tmp) / "data"
        settings.bridge.workdir = Path(tmp)
        settings.log.level = "warning"
        settings.providers = {"fake": {"script": str(script), "time_scale": 0.0}}
        async with bridge(settings) as (url, nursery, clients):
            client = await client_for(url, nursery, clients)
            uri = f"ahp-session:/{uuid.uuid4()}"
            await client.request("createSession", {"channel": uri, "provider": "fake"})
            await client.subscribe(uri)
            await client.wait_for(lambda: client.states[uri].get("lifecycle") == "ready")
            chat = client.states[uri]["defaultChat"]
            await client.subscribe(chat)
            for i in range(turns):
                await prompt(client, chat, f"prompt {i}")
        async with bridge(settings) as (url, nursery, clients):
            client = await client_for(url, nursery, clients)
            start = time.perf_counter()
            snap = await client.subscribe(chat, view={"turns": 50})
            first = (time.perf_counter() - start) * 1000
            other = await client_for(url, nursery, clients)
            start = time.perf_counter()
            await other.subscribe(chat, view={"turns": 50})
            again = (time.perf_counter() - start) * 1000
            shown = len(snap["state"]["turns"])
            print(
                f"restore: chat with {turns} turns: first subscribe {first:.1f} ms"
                f" (restores; {shown} turns in the window), later subscribe {again:.1f} ms"
            )


async def main(args: argparse.Namespace) -> None:
    await bench_catalog(args.sessions)
    for turns in args.turns:
        await bench_restore(turns)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--turns", type=int, nargs="+", default=[50, 500])
    trio.run(main, parser.parse_args())
