"""Emit-to-client latency of streamed deltas, fake provider -> bridge -> 1/10/50 clients.

Run: python bench/stream_latency.py [--quick] [--runs R] [--clients 1,10,50] [--rates ...]

The bridge runs in its own process (`python bench/_common.py bridge`: the real `run_bridge`,
with every provider wrapped so each delta's text starts with `@T<monotonic ns>;`, taken when
the provider calls `emit`). The fake plays a bench script: one rule per rate, a text step
of 8-character chunks with `delay = 1/rate`; above 400/s, bursts of chunks every 5 ms
(trio's timers resolve about 1 ms); `max`: no delay, as fast as the fake and the bridge go.
Subscribers in the client process take the receive time when a whole frame has arrived;
CLOCK_MONOTONIC is one clock for every process on the host, so receive minus stamp is the
emit-to-client latency (it includes the client process's own scheduling, which with 50
clients on one trio loop is part of the figure).

The fake's pacing is a sleep after each delta or burst, so it emits below the asked rate,
and further below when the bridge's loop (which it shares) is busy: the figures use the
rate it achieved. A case is *sustained* when every client received every delta in every
run, its median p99 stayed under 50 ms and latency did not grow through the turn (median
last-fifth latency at most 2x the first fifth's + 5 ms); the highest sustained rate is the
highest achieved rate of a sustained case. Medians over runs damp the spikes that other
work on a shared machine causes. The ceiling beside it is fanout.py's bare broadcast on the
bridge's own transport (`serve_bare_transport`: the same WebSocket layer, no engine), per
client, its subscribers in one process as here; the other bare stacks are shown too. Figures
only; nothing is asserted about speed.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import trio
from _common import (
    STAMP,
    STEP_TIMEOUT,
    BenchClient,
    bridge_argv,
    child_process,
    clients,
    machine_note,
    median,
    percentile,
    ready_session,
    table,
    write_config,
)
from fanout import CEILING, transport_ceiling

CHUNK = "abcdefg "  # one 8-character delta before its stamp
P99_LIMIT_MS = 50.0
MAX_DELTAS = 2000
END_TYPES = ("chat/turnComplete", "chat/turnCancelled", "chat/error")
#: Above this rate the fake streams in bursts, one every BURST_PERIOD seconds.
BURST_ABOVE = 400
BURST_PERIOD = 0.005


def rate_label(rate: int) -> str:
    return "max" if rate == 0 else str(rate)


def burst_for(rate: int) -> int:
    """Deltas per burst: one up to BURST_ABOVE deltas/s, then enough per BURST_PERIOD."""
    if rate == 0 or rate <= BURST_ABOVE:
        return 1
    return max(1, round(rate * BURST_PERIOD))


def deltas_for(rate: int, seconds: float) -> int:
    if rate == 0:
        return MAX_DELTAS
    burst = burst_for(rate)
    count = max(50, min(MAX_DELTAS, int(rate * seconds)))
    return count - count % burst


def bench_script(rates: list[int], seconds: float) -> str:
    """The fake's script: prompt "rate R" streams deltas_for(R) chunks at about R per second.

    Up to BURST_ABOVE/s each chunk follows a `delay` of 1/R (one text step). Faster rates
    cannot be paced chunk by chunk (trio's timers resolve about 1 ms), so they stream in
    bursts: text steps of `burst_for(R)` back-to-back chunks, each followed by a delay step
    of BURST_PERIOD. `max` streams every chunk back to back.
    """
    lines = ['display_name = "Fake agent (stream latency bench)"']
    for rate in rates:
        count = deltas_for(rate, seconds)
        burst = burst_for(rate)
        lines += ["", "[[prompts]]", f'text = "rate {rate_label(rate)}"']
        if burst == 1:
            delay = 0.0 if rate == 0 else 1.0 / rate
            lines += _text_step(CHUNK * count, delay)
            continue
        for _ in range(count // burst):
            lines += _text_step(CHUNK * burst, 0.0)
            lines += ["[[prompts.steps]]", 'kind = "delay"', f"seconds = {burst / rate!r}"]
    return "\n".join(lines) + "\n"


def _text_step(text: str, delay: float) -> list[str]:
    return [
        "[[prompts.steps]]",
        'kind = "text"',
        f'text = "{text}"',
        f"chunk_size = {len(CHUNK)}",
        f"delay = {delay!r}",
    ]


class Run:
    """What one turn looked like from every client."""

    def __init__(self, rate: int, expected: int, latencies: list[list[float]], emits: list[int]):
        self.rate = rate
        self.expected = expected
        self.latencies = latencies
        flat = [v for per_client in latencies for v in per_client]
        if not all(latencies) or len(emits) < 2:
            raise RuntimeError(f"rate {rate_label(rate)}: a client received no stamped deltas")
        self.p50 = percentile(flat, 50)
        self.p99 = percentile(flat, 99)
        fifth = max(1, expected // 5)
        self.first = median([v for c in latencies for v in c[:fifth]])
        self.last = median([v for c in latencies for v in c[-fifth:]])
        span = (emits[-1] - emits[0]) / 1e9
        self.achieved = (len(emits) - 1) / span if span > 0 else float("inf")
        self.complete = all(len(c) == expected for c in latencies)


def summarize(case: list[Run]) -> dict[str, Any]:
    """Medians over a case's runs, and whether the case counts as sustained."""
    p99 = median([r.p99 for r in case])
    first = median([r.first for r in case])
    last = median([r.last for r in case])
    complete = all(r.complete for r in case)
    return {
        "achieved": median([r.achieved for r in case]),
        "p50": median([r.p50 for r in case]),
        "p99": p99,
        "first": first,
        "last": last,
        "complete": complete,
        "sustained": complete and p99 < P99_LIMIT_MS and last <= 2 * first + 5.0,
    }


def stamps_of(action: dict[str, Any]) -> list[int] | None:
    """The emit times carried by a streamed action, or None for other actions.

    The bridge merges a burst of deltas to one part into one action (translate/coalesce.py),
    so one action can carry several chunks, each with its own stamp; each counts as one delta.
    """
    kind = action["type"]
    if kind == "chat/delta":
        content = action["content"]
    elif kind == "chat/responsePart" and action["part"].get("kind") == "markdown":
        content = action["part"]["content"]
    else:
        return None
    if not content.startswith(STAMP):
        return None
    return [int(piece[: piece.index(";")]) for piece in content.split(STAMP)[1:]]


async def stream_once(
    driver: BenchClient, subs: list[BenchClient], chat: str, rate: int, seconds: float
) -> Run:
    """Start one turn at `rate` and collect every subscriber's latencies until it ends."""
    expected = deltas_for(rate, seconds)
    latencies: list[list[float]] = [[] for _ in subs]
    emits: list[int] = []
    ended: list[str] = []
    remaining = [len(subs)]
    done = trio.Event()

    def handler_for(index: int) -> Callable[[dict[str, Any], int], None]:
        mine = latencies[index]

        def on_envelope(env: dict[str, Any], at: int) -> None:
            if env["channel"] != chat:
                return
            action = env["action"]
            stamps = stamps_of(action)
            if stamps is not None:
                for stamp in stamps:
                    mine.append((at - stamp) / 1e6)
                    if index == 0:
                        emits.append(stamp)
            elif action["type"] in END_TYPES:
                ended.append(action["type"])
                remaining[0] -= 1
                if remaining[0] == 0:
                    done.set()

        return on_envelope

    for index, sub in enumerate(subs):
        sub.on_envelope = handler_for(index)
    action = {
        "type": "chat/turnStarted",
        "turnId": str(uuid.uuid4()),
        "startedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
        "message": {"text": f"rate {rate_label(rate)}", "origin": {"kind": "user"}},
    }
    await driver.ws.send_message(driver.dispatch_frame(chat, action))
    with trio.fail_after(STEP_TIMEOUT):
        while not done.is_set():
            closed = [s.closed for s in subs if s.closed is not None]
            if closed or driver.errors:
                detail = f"clients closed: {closed[:3]}" if closed else driver.errors[:3]
                raise RuntimeError(f"rate {rate_label(rate)}: {detail}")
            with trio.move_on_after(0.05):
                await done.wait()
    if set(ended) != {"chat/turnComplete"}:
        raise RuntimeError(f"rate {rate_label(rate)}: the turn ended with {sorted(set(ended))}")
    return Run(rate, expected, latencies, emits)


async def measure(
    counts: list[int], rates: list[int], runs: int, seconds: float
) -> dict[tuple[int, int], list[Run]]:
    results: dict[tuple[int, int], list[Run]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "stream.toml"
        script.write_text(bench_script(rates, seconds))
        config = write_config(Path(tmp), fake={"script": str(script), "time_scale": 1.0})
        async with (
            child_process(bridge_argv(config, timing=True), "ahp-bridge listening") as bridge,
            clients(bridge.url, 1, "driver") as (driver,),
        ):
            url = bridge.url
            await driver.initialize()
            _, chat = await ready_session(driver)
            driver.keep = False
            for count in counts:
                async with clients(url, count, f"watch{count}") as subs:
                    for sub in subs:
                        sub.keep = False
                        await sub.initialize([chat])
                    for rate in rates:
                        for _ in range(runs):
                            run = await stream_once(driver, subs, chat, rate, seconds)
                            results.setdefault((count, rate), []).append(run)
                            await trio.sleep(0.2)  # let both processes settle between turns
    return results


def parse_rates(value: str) -> list[int]:
    """`50,100,max` -> [50, 100, 0] (0 is `max`: no pacing)."""
    rates = []
    for part in value.split(","):
        part = part.strip()
        if part == "max":
            rates.append(0)
            continue
        if not part.isdigit() or not 1 <= int(part) <= 10_000:
            raise argparse.ArgumentTypeError(
                f"{part!r}: rates are deltas/s between 1 and 10000, or max"
            )
        rates.append(int(part))
    return list(dict.fromkeys(rates))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="short turns, one run each")
    parser.add_argument("--runs", type=int, help="turns per case (medians are reported)")
    parser.add_argument("--clients", default="1,10,50", help="watcher counts, comma-separated")
    parser.add_argument(
        "--rates",
        type=parse_rates,
        default="50,100,200,400,1000,1500,2000,max",
        help="deltas/s asked of the fake",
    )
    args = parser.parse_args()
    runs = args.runs or (1 if args.quick else 3)
    seconds = 0.6 if args.quick else 2.0
    counts = [int(c) for c in args.clients.split(",") if c.strip()]
    if not counts or min(counts) < 1 or max(counts) > 200 or runs < 1:
        parser.error("--clients: counts between 1 and 200; --runs at least 1")
    rates: list[int] = args.rates
    print(machine_note())
    print(
        f"stream latency: {len(CHUNK)}-char deltas (+ the emit stamp), ~{seconds:g} s turns "
        f"(at most {MAX_DELTAS} deltas), median of {runs} run(s) per case"
    )
    started = time.monotonic()
    results = trio.run(measure, counts, rates, runs, seconds)
    ceiling = trio.run(
        transport_ceiling, counts, 400 if args.quick else 1000, 1 if args.quick else 3
    )
    rows = []
    summary = []
    others = [name for name in ceiling[counts[0]] if name != CEILING]
    for count in counts:
        sustained = []
        for rate in rates:
            case = summarize(results[(count, rate)])
            if case["sustained"]:
                sustained.append(case["achieved"])
            verdict = "yes" if case["sustained"] else "no"
            if not case["complete"]:
                verdict = "no (deltas lost!)"
            rows.append(
                [
                    count,
                    rate_label(rate),
                    f"{case['achieved']:,.0f}",
                    f"{case['p50']:.2f}",
                    f"{case['p99']:.2f}",
                    f"{case['first']:.2f}/{case['last']:.2f}",
                    verdict,
                ]
            )
        best = f"{max(sustained):,.0f}" if sustained else "none of the asked rates"
        bare = ceiling[count]
        per_client = bare[CEILING] / count
        ratio = f"{max(sustained) / per_client:.2f}" if sustained else "-"
        summary.append(
            [
                count,
                best,
                f"{per_client:,.0f}",
                ratio,
                *(f"{bare[name] / count:,.0f}" for name in others),
            ]
        )
    headers = [
        "clients",
        "asked/s",
        "emitted/s",
        "p50 ms",
        "p99 ms",
        "first/last fifth ms",
        "sustained",
    ]
    print(table(headers, rows))
    print()
    headers = [
        "clients",
        "highest sustained deltas/s",
        "ceiling env/s per client (bare bridge transport)",
        "sustained / ceiling",
        *(f"bare {name} env/s per client" for name in others),
    ]
    print(table(headers, summary))
    print(f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
