"""Client tool calls through the bridge: the fake calls a tool an AHP client runs, N times.

Run: python bench/client_tools.py [--quick] [--runs R] [--calls N]

The bridge runs in its own process (the real `ahp-bridge serve`) with the fake playing a bench
script: one turn of N `host_tool` steps (`time_scale = 0`, so the fake adds no pacing). One
client, in this process, creates the session offering the tool (`activeClient.tools`),
starts the turn, and completes each call the moment its `toolClientExecution` request
arrives. A *cycle* is the time from one request's arrival to the next one's: the client's
`chat/toolCallComplete` going out, the host resolving the provider's call_tool, the fake's
tool item and next call, and the host's running tool call and input request coming back.
p50/p99 of the cycles and calls per second over the turn, medians over runs. Figures only.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import trio
from _common import (
    STEP_TIMEOUT,
    bridge_argv,
    child_process,
    clients,
    machine_note,
    median,
    percentile,
    table,
    write_config,
)

TOOL = {
    "name": "usages",
    "title": "List Code Usages",
    "description": "Find usages of a symbol.",
    "inputSchema": {"type": "object", "properties": {"symbol": {"type": "string"}}},
}
RESULT = {
    "success": True,
    "pastTenseMessage": "Found 2 usages",
    "content": [{"type": "text", "text": "main.py:1, app.py:7"}],
}


def script(calls: int) -> str:
    step = (
        '[[prompts.steps]]\nkind = "host_tool"\nname = "usages"\narguments = { symbol = "main" }\n'
    )
    return '[[prompts]]\ntext = "go"\n' + step * calls


async def one_run(url: str, calls: int) -> tuple[list[float], float]:
    """(cycle times in ms, calls per second) of one turn of `calls` client tool calls."""
    async with clients(url, 1, "editor") as (client,):
        await client.initialize(versions=("1.0.0", "0.9.0"))
        session = f"ahp-session:/{uuid.uuid4()}"
        active = {"clientId": client.client_id, "tools": [TOOL]}
        params = {"channel": session, "provider": "fake", "activeClient": active}
        await client.request("createSession", params)
        await client.request("subscribe", {"channel": session})
        await client.wait_envelope(
            lambda e: e["channel"] == session and e["action"]["type"] == "session/ready"
        )
        snapshot = await client.request("subscribe", {"channel": session})
        chat = snapshot["snapshot"]["state"]["defaultChat"]
        await client.request("subscribe", {"channel": chat})
        turn_id = str(uuid.uuid4())
        arrivals: list[int] = []
        done = trio.Event()
        replies: list[str] = []

        def on_envelope(env: dict[str, Any], received: int) -> None:
            action = env["action"]
            kind = action["type"]
            if kind == "session/inputNeededSet":
                request = action["request"]
                if request["kind"] == "toolClientExecution":
                    arrivals.append(received)
                    complete = {
                        "type": "chat/toolCallComplete",
                        "turnId": turn_id,
                        "toolCallId": request["toolCall"]["toolCallId"],
                        "result": RESULT,
                    }
                    replies.append(client.dispatch_frame(chat, complete))
                    outbox.send_nowait(None)
            elif kind in ("chat/turnComplete", "chat/error", "chat/turnCancelled"):
                arrivals.append(received)
                done.set()

        outbox, inbox = trio.open_memory_channel[None](calls + 1)
        client.keep = False
        client.on_envelope = on_envelope

        async def sender() -> None:
            async for _ in inbox:
                await client.ws.send_message(replies.pop(0))

        async with trio.open_nursery() as nursery:
            nursery.start_soon(sender)
            started = {
                "type": "chat/turnStarted",
                "turnId": turn_id,
                "startedAt": "2026-01-01T00:00:00.000Z",
                "message": {"text": "go", "origin": {"kind": "user"}},
            }
            await client.ws.send_message(client.dispatch_frame(chat, started))
            with trio.fail_after(STEP_TIMEOUT):
                await done.wait()
            nursery.cancel_scope.cancel()
        if client.errors:
            raise RuntimeError(f"the bridge refused something: {client.errors[:3]}")
        if len(arrivals) != calls + 1:
            raise RuntimeError(f"expected {calls} calls, saw {len(arrivals) - 1}")
        cycles = [(b - a) / 1e6 for a, b in itertools.pairwise(arrivals)]
        seconds = (arrivals[-1] - arrivals[0]) / 1e9
        return cycles, calls / seconds if seconds > 0 else 0.0


async def measure(runs: int, calls: int) -> list[tuple[list[float], float]]:
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "tools.toml").write_text(script(calls))
        fake = {"script": str(Path(tmp) / "tools.toml"), "time_scale": 0.0}
        config = write_config(Path(tmp), fake=fake)
        async with child_process(bridge_argv(config), "ahp-bridge listening") as bridge:
            await one_run(bridge.url, calls)  # warm-up, not counted
            for _ in range(runs):
                results.append(await one_run(bridge.url, calls))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs and calls")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    runs, calls = (2, 100) if args.quick else (args.runs, args.calls)
    print(machine_note())
    started = time.monotonic()
    results = trio.run(measure, runs, calls)
    rows = [
        [
            f"{calls}",
            f"{median([percentile(c, 50) for c, _ in results]):.2f}",
            f"{median([percentile(c, 99) for c, _ in results]):.2f}",
            f"{median([rate for _, rate in results]):,.0f}",
        ]
    ]
    print(table(["calls per turn", "cycle p50 ms", "cycle p99 ms", "calls/s"], rows))
    print(f"medians of {runs} runs; {time.monotonic() - started:.0f} s in all")


if __name__ == "__main__":
    main()
