"""A long chat: what the host keeps of 10,000 turns, and paging back through all of them.

The bridge runs in its own process (the real `ahp-bridge serve`, fake provider at
`time_scale = 0`, default limits: `limits.max_live_turns = 50`); one AHP 1.0 client runs N turns
back to back (each dispatched once the previous one's `chat/turnComplete` arrived). The
bridge's RSS (VmRSS from /proc) is read before the first turn, after 1,000 turns and after
all of them; then a fresh client subscribes to the chat (the live turns and a cursor) and pages
back with `fetchTurns` until no cursor is left: every turn must come back exactly once, in
order (checked), and the time of the whole page-back is printed with the RSS after it.

Prints figures, asserts nothing about speed.

Usage: python bench/long_chat.py [--turns 10000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import trio
from _common import (
    STEP_TIMEOUT,
    BenchClient,
    Child,
    bridge_argv,
    child_process,
    clients,
    machine_note,
    ready_session,
    table,
    write_config,
)

V1 = ("1.0.0",)
#: A page read waits for the catalog writes queued before it (every turn's record and
#: archived turns): after a fast run of 10,000 turns that backlog is minutes long.
PAGE_TIMEOUT = 1800.0
#: Every prompt gets one answer at once, in one delta (the default script also calls tools).
SCRIPT = """
display_name = "long chat"
[defaults]
chunk_size = {chunk}
delay = 0
[[prompts]]
[[prompts.steps]]
kind = "text"
text = "{text}"
"""
ANSWER = "An answer of moderate length, enough to look like a real reply in a transcript."


def rss_mib(child: Child) -> float:
    for line in Path(f"/proc/{child.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class TurnWaiter:
    """The `chat/turnComplete` of the turn running now (the client keeps no envelopes)."""

    def __init__(self, chat: str) -> None:
        self.chat = chat
        self.turn = ""
        self.done = trio.Event()

    def on_envelope(self, env: dict[str, Any], received: int) -> None:
        action = env["action"]
        if (
            env["channel"] == self.chat
            and action["type"] in ("chat/turnComplete", "chat/error", "chat/turnCancelled")
            and action.get("turnId") == self.turn
        ):
            if action["type"] != "chat/turnComplete":
                raise RuntimeError(f"turn {self.turn} ended with {action['type']}")
            self.done.set()

    async def run(self, client: BenchClient, i: int) -> None:
        self.turn, self.done = str(uuid.uuid4()), trio.Event()
        action = {
            "type": "chat/turnStarted",
            "turnId": self.turn,
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"text": f"turn {i}", "origin": {"kind": "user"}},
        }
        await client.ws.send_message(client.dispatch_frame(self.chat, action))
        with trio.fail_after(STEP_TIMEOUT):
            await self.done.wait()


async def page_back(
    client: BenchClient, chat: str, cursor: str | None, first: Callable[[], None]
) -> tuple[list[str], int]:
    """fetchTurns until no cursor is left; the texts of the turns loaded (oldest first) and
    how many pages they came in. `first` runs once the first page is answered."""
    pages: list[list[str]] = []
    client.keep = True
    while cursor:
        client.envelopes.clear()
        _, answer = await client.send_request("fetchTurns", {"channel": chat, "cursor": cursor})
        with trio.fail_after(PAGE_TIMEOUT):  # the first read waits behind queued catalog writes
            text, _ = await answer.receive()
        if orjson.loads(text).get("result") != {}:
            raise RuntimeError(f"fetchTurns failed: {text}")
        [action] = [
            e["action"]
            for e in client.envelopes
            if e["channel"] == chat and e["action"]["type"] == "chat/turnsLoaded"
        ]
        pages.append([t["message"]["text"] for t in action["turns"]])
        if len(pages) == 1:
            first()
        cursor = action.get("turnsNextCursor")
    return [text for page in reversed(pages) for text in page], len(pages)


async def page_back_all(
    bridge: Child, reader: BenchClient, chat: str, expected: list[str], run: str
) -> list[list[object]]:
    """Subscribe (live turns and a cursor), page back to the first turn, check every turn;
    a row for the first page (the catalog has written all it had queued) and one for all."""
    await reader.initialize(versions=V1)
    snap = (await reader.request("subscribe", {"channel": chat}))["snapshot"]
    live = [t["message"]["text"] for t in snap["state"]["turns"]]
    rows: list[list[object]] = []
    began = time.perf_counter()

    def first_page() -> None:
        took = time.perf_counter() - began
        rows.append([f"first page ({run})", f"{rss_mib(bridge):.1f}", f"{took:.1f} s"])

    older, pages = await page_back(reader, chat, snap["state"].get("turnsNextCursor"), first_page)
    took = time.perf_counter() - began
    everything = older + live
    if everything != expected:
        missing = len(set(expected) - set(everything))
        raise RuntimeError(
            f"page-back gave {len(everything)} turns ({missing} missing), "
            f"expected {len(expected)} in order"
        )
    rows.append(
        [
            f"page-back ({run}): {len(older):,} turns in {pages} pages + {len(live)} live",
            f"{rss_mib(bridge):.1f}",
            f"{took:.1f} s",
        ]
    )
    return rows


async def measure(turns: int, limits: dict[str, int], answer: int) -> list[list[object]]:
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.toml"
        text = ANSWER if answer <= 0 else (ANSWER * (answer // len(ANSWER) + 1))[:answer]
        script.write_text(SCRIPT.format(chunk=max(64, len(text)), text=text))
        config = write_config(Path(tmp), fake={"script": str(script), "time_scale": 0.0})
        if limits:  # tables may come in any order in TOML
            with config.open("a") as out:
                out.write("[limits]\n" + "".join(f"{k} = {v}\n" for k, v in limits.items()))
        async with child_process(bridge_argv(config), "ahp-bridge listening") as bridge:
            # The listening line's URL carries the connection token (`?tkn=...`), to which
            # `child_process` appends a "/": take the URL as the bridge printed it.
            url = bridge.url.removesuffix("/") if "?tkn=" in bridge.url else bridge.url
            rows.extend(await run_chat(bridge, url, turns))
    return rows


async def run_chat(bridge: Child, url: str, turns: int) -> list[list[object]]:
    rows: list[list[object]] = []
    async with clients(url, 1, "writer") as (writer,):
        await writer.initialize(versions=V1)
        _, chat = await ready_session(writer)
        waiter = TurnWaiter(chat)
        writer.keep = False
        writer.on_envelope = waiter.on_envelope
        await writer.request("subscribe", {"channel": chat})
        rows.append(["before the first turn", f"{rss_mib(bridge):.1f}", ""])
        started = time.perf_counter()
        for i in range(turns):
            await waiter.run(writer, i)
            if i + 1 in (1_000, turns):
                elapsed = time.perf_counter() - started
                rows.append(
                    [f"after {i + 1:,} turns", f"{rss_mib(bridge):.1f}", f"{elapsed:.1f} s"]
                )
        expected = [f"turn {i}" for i in range(turns)]
        for run in ("first", "again"):  # the first one waits behind the catalog's backlog
            async with clients(url, 1, f"reader-{run}") as (reader,):
                rows.extend(await page_back_all(bridge, reader, chat, expected, run))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=10_000)
    parser.add_argument(
        "--answer-bytes", type=int, default=0, help="each answer's length (default: 80)"
    )
    parser.add_argument("--max-live-turns", type=int, help="limits.max_live_turns (50)")
    parser.add_argument(
        "--max-live-turn-bytes", type=int, help="limits.max_live_turn_bytes (262144)"
    )
    args = parser.parse_args()
    if args.turns < 1:
        parser.error("--turns must be at least 1")
    limits = {
        key: value
        for key, value in (
            ("max_live_turns", args.max_live_turns),
            ("max_live_turn_bytes", args.max_live_turn_bytes),
        )
        if value is not None
    }
    print(machine_note())
    shown = ", ".join(f"limits.{k} = {v:,}" for k, v in limits.items()) or "default limits"
    size = args.answer_bytes or len(ANSWER)
    fake = f"the fake (time_scale 0, {size:,}-byte answers)"
    print(f"long chat: {args.turns:,} turns of {fake}, {shown}")
    rows = trio.run(measure, args.turns, limits, args.answer_bytes)
    print(table(["", "bridge RSS MiB", "time"], rows))


if __name__ == "__main__":
    main()
