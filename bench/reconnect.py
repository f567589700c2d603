"""Time to answer a `reconnect` that replays 10,000 missed actions (and smaller gaps).

Run: python bench/reconnect.py [--quick] [--runs R]

The bridge (`ahp-bridge serve`, fake provider, replay log 10,000) runs in its own process.
A producer dispatches 10,000 `chat/draftChanged` actions on one chat and waits for them all
to be applied (a `ping` after them is answered only once they are); the bridge's serverSeq
must then have moved by exactly 10,000. Each run opens a fresh connection and sends
`reconnect` with a lastSeenServerSeq that misses the last M actions; the time is from the
request being sent to the whole response having arrived (one WebSocket message), and the
response is checked (type "replay", M actions, in order). Median of the runs; the response
size is printed. Figures only; nothing is asserted about speed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import orjson
import trio
from _common import (
    STEP_TIMEOUT,
    bridge_argv,
    child_process,
    clients,
    draft_action,
    machine_note,
    median,
    ready_session,
    table,
    write_config,
)

MISSED = 10_000
GAPS = (0, 100, 1_000, MISSED)


class Sample:
    def __init__(self, wait_ms: float, parse_ms: float, size: int) -> None:
        self.wait_ms = wait_ms
        self.parse_ms = parse_ms
        self.size = size


async def measure(runs: int) -> dict[int, list[Sample]]:
    samples: dict[int, list[Sample]] = {gap: [] for gap in GAPS}
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), fake={"time_scale": 0.0}, replay_log=MISSED)
        async with (
            child_process(bridge_argv(config), "ahp-bridge listening") as bridge,
            clients(bridge.url, 1, "producer") as (producer,),
        ):
            url = bridge.url
            await producer.initialize()
            session, chat = await ready_session(producer)
            producer.keep = False
            async with clients(url, 1, "probe") as (probe,):
                before = (await probe.initialize())["serverSeq"]
            for i in range(MISSED):
                await producer.ws.send_message(producer.dispatch_frame(chat, draft_action(i)))
            await producer.request("ping", {"channel": "ahp-root://"})
            async with clients(url, 1, "probe") as (probe,):
                after = (await probe.initialize())["serverSeq"]
            if after - before != MISSED:
                raise RuntimeError(f"serverSeq moved by {after - before}, expected {MISSED}")
            texts = [draft_action(i)["draft"]["text"] for i in range(MISSED)]
            for run in range(runs):
                for gap in GAPS:
                    async with clients(url, 1, f"r{run}.{gap}") as (client,):
                        params = {
                            "channel": "ahp-root://",
                            "clientId": client.client_id,
                            "lastSeenServerSeq": after - gap,
                            "subscriptions": [session, chat],
                        }
                        sent, response = await client.send_request("reconnect", params)
                        with trio.fail_after(STEP_TIMEOUT):
                            text, received = await response.receive()
                        parse_start = time.perf_counter()
                        result = orjson.loads(text)["result"]
                        parse_ms = (time.perf_counter() - parse_start) * 1000
                        actions = result["actions"] if result.get("type") == "replay" else None
                        if actions is None or len(actions) != gap:
                            got = "snapshot" if actions is None else f"{len(actions)} actions"
                            raise RuntimeError(f"reconnect missing {gap}: got {got}")
                        if any(
                            env["action"]["draft"]["text"] != texts[MISSED - gap + n]
                            for n, env in enumerate(actions)
                        ):
                            raise RuntimeError("replayed actions out of order or wrong")
                        wait_ms = (received - sent) / 1e6
                        samples[gap].append(Sample(wait_ms, parse_ms, len(text.encode())))
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 runs instead of 7")
    parser.add_argument("--runs", type=int, help="runs per gap (the median is reported)")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 7)
    if runs < 1:
        parser.error("--runs must be at least 1")
    print(machine_note())
    print(f"reconnect: {MISSED} chat/draftChanged actions in the log, median of {runs} runs")
    samples = trio.run(measure, runs)
    rows = []
    for gap in GAPS:
        waits = [s.wait_ms for s in samples[gap]]
        rows.append(
            [
                gap,
                f"{median(waits):.1f}",
                f"{min(waits):.1f}",
                f"{max(waits):.1f}",
                f"{median([s.parse_ms for s in samples[gap]]):.1f}",
                f"{samples[gap][0].size / 1024:,.1f}",
            ]
        )
    headers = [
        "missed",
        "request->response ms (median)",
        "min",
        "max",
        "client parse ms",
        "response KiB",
    ]
    print(table(headers, rows))


if __name__ == "__main__":
    main()
