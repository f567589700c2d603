"""`@` mention completion latency on a 50,000-file working directory, cold and warm.

Run: python bench/completions.py [--quick] [--files N] [--cold R] [--warm W]

A deterministic tree is generated in a temporary directory: N files (default 50,000) that git
would track, in 40 packages of nested directories with names drawn from a word list, plus
ignored trees beside them (`node_modules/`: 12,000 files, `dist/`: 3,000, `*.log`: 500), which
the index must skip. The bridge (`ahp-bridge serve`, fake provider) runs in its own process;
the tree is not its default directory but a session's working directory, so disposing the
session drops the index and the next session starts cold.

- **cold**: a new session on the tree; as soon as it is ready (the bridge starts building the
  index then), one completion request; the time is request sent -> response received, so it
  is the index build the first mention waits for (the OS page cache is warm after the first
  run: this is the bridge's cold, not the disk's).
- **warm**: then W requests on the built index, cycling through queries of every ranking tier
  (short and long name prefixes, a path prefix, a substring, a fuzzy subsequence, a query
  with no match), one at a time.

Also, in this process, what the parts cost without the socket: the walk with ignore rules,
building the ranking table, and ranking alone. Percentiles are nearest-rank (with fewer than
100 samples p99 is the slowest). Figures only; nothing is asserted about speed.
"""

from __future__ import annotations

import argparse
import random
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import orjson
import trio
from _common import (
    STEP_TIMEOUT,
    BenchClient,
    bridge_argv,
    child_process,
    clients,
    machine_note,
    percentile,
    table,
    write_config,
)

from ahp_bridge.host.workspace.mention_rank import Entries, rank
from ahp_bridge.host.workspace.mentions import scan

WORDS = tuple(
    [
        "reader",
        "writer",
        "config",
        "loader",
        "parser",
        "client",
        "server",
        "session",
        "channel",
        "stream",
        "buffer",
        "handler",
        "router",
        "model",
        "view",
        "store",
        "action",
        "reducer",
        "event",
        "queue",
        "cache",
        "index",
        "search",
        "render",
        "layout",
        "button",
        "dialog",
        "editor",
        "panel",
        "theme",
        "token",
        "auth",
        "user",
        "account",
        "billing",
        "invoice",
        "report",
        "metric",
        "trace",
        "logger",
        "format",
        "schema",
        "migrate",
        "import",
        "export",
        "upload",
        "download",
        "worker",
        "task",
        "job",
        "pipeline",
        "build",
        "deploy",
        "release",
        "version",
        "patch",
    ]
)
EXTS = ("ts", "tsx", "py", "go", "rs", "md", "json", "css", "test.ts", "spec.py")

#: (label, query) pairs for the warm requests, one per ranking tier and then some.
QUERIES = [
    ("1 char", "@r"),
    ("name prefix", "@REA"),
    ("name prefix, long", "@reader_conf"),
    ("path prefix", "@packages/pkg07/src/"),
    ("substring", "@_loader"),
    ("fuzzy", "@cfgldr"),
    ("no match", "@zzqqxx"),
]


def make_tree(root: Path, files: int, seed: int = 13) -> dict[str, int]:
    """Write the benchmark tree; returns counts of what it holds."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    (root / ".gitignore").write_text("node_modules/\ndist/\n*.log\n")
    (root / "README.md").write_text("# bench\n")
    made = 1
    dirs: list[Path] = []
    for p in range(40):
        package = root / "packages" / f"pkg{p:02}"
        (package / "src").mkdir(parents=True)
        (package / "README.md").write_text("")
        made += 1
        dirs.append(package / "src")
        for _ in range(12):
            parts = [rng.choice(WORDS) for _ in range(rng.randint(1, 3))]
            folder = package / "src" / Path(*parts)
            folder.mkdir(parents=True, exist_ok=True)
            dirs.append(folder)
    while made < files:
        folder = rng.choice(dirs)
        name = f"{rng.choice(WORDS)}_{rng.choice(WORDS)}{rng.randint(0, 99)}.{rng.choice(EXTS)}"
        path = folder / name
        if path.exists():
            continue
        path.write_bytes(b"")
        made += 1
    ignored = 0
    for top, count in (("node_modules", 12_000), ("dist", 3_000)):
        for i in range(count):
            folder = root / top / f"m{i // 200:03}" / rng.choice(WORDS)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{rng.choice(WORDS)}{i}.js").write_bytes(b"")
            ignored += 1
    for i in range(500):
        (rng.choice(dirs) / f"debug{i}.log").write_bytes(b"")
        ignored += 1
    return {"tracked": made, "ignored": ignored}


async def completion(client: BenchClient, chat: str, text: str) -> tuple[float, int]:
    params = {"channel": chat, "kind": "userMessage", "text": text, "offset": len(text)}
    sent, response = await client.send_request("completions", params)
    with trio.fail_after(STEP_TIMEOUT):
        payload, received = await response.receive()
    frame = orjson.loads(payload)
    if "error" in frame:
        raise RuntimeError(f"completions failed: {frame['error']}")
    return (received - sent) / 1e6, len(frame["result"]["items"])


async def open_session(client: BenchClient, tree: Path) -> tuple[str, str]:
    session = f"ahp-session:/{uuid.uuid4()}"
    params = {"channel": session, "provider": "fake", "workingDirectories": [tree.as_uri()]}
    await client.request("createSession", params)
    snap = await client.request("subscribe", {"channel": session})
    if snap["snapshot"]["state"].get("lifecycle") == "creating":
        await client.wait_envelope(
            lambda e: e["channel"] == session and e["action"]["type"] == "session/ready"
        )
        snap = await client.request("subscribe", {"channel": session})
    return session, str(snap["snapshot"]["state"]["defaultChat"])


async def measure(tree: Path, cold_runs: int, warm_runs: int) -> dict[str, Any]:
    cold: list[float] = []
    warm: dict[str, list[float]] = {label: [] for label, _ in QUERIES}
    counts: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        config = write_config(Path(tmp), fake={"time_scale": 0.0})
        async with (
            child_process(bridge_argv(config), "ahp-bridge listening") as bridge,
            clients(bridge.url, 1, "bench") as (client,),
        ):
            await client.initialize()
            for run in range(cold_runs):
                session, chat = await open_session(client, tree)
                elapsed, _ = await completion(client, chat, "@REA")
                cold.append(elapsed)
                if run < cold_runs - 1:
                    await client.request("disposeSession", {"channel": session})
                    await trio.sleep(1.0)  # the bridge drops the unused index
            for i in range(warm_runs):
                label, query = QUERIES[i % len(QUERIES)]
                elapsed, items = await completion(client, chat, f"explain {query}")
                warm[label].append(elapsed)
                counts[label] = items
    return {"cold": cold, "warm": warm, "counts": counts}


def in_process(tree: Path, runs: int) -> dict[str, float]:
    scans, builds = [], []
    paths: list[str] = []
    for _ in range(runs):
        start = time.perf_counter()
        paths, _ = scan(str(tree), 200_000)
        scans.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        entries = Entries(paths)
        builds.append((time.perf_counter() - start) * 1000)
    ranks = []
    for _ in range(max(1, runs * 10)):
        for _, query in QUERIES:
            start = time.perf_counter()
            rank(entries, query[1:], 50)
            ranks.append((time.perf_counter() - start) * 1000)
    return {
        "entries": len(paths),
        "scan": percentile(scans, 50),
        "build": percentile(builds, 50),
        "rank_p50": percentile(ranks, 50),
        "rank_p99": percentile(ranks, 99),
    }


def _p50_p99(values: list[float], digits: int) -> list[str]:
    return [f"{percentile(values, q):.{digits}f}" for q in (50, 99)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 cold runs, 70 warm requests")
    parser.add_argument("--files", type=int, default=50_000, help="tracked files in the tree")
    parser.add_argument("--cold", type=int, help="cold runs (default 10)")
    parser.add_argument("--warm", type=int, help="warm requests (default 700)")
    args = parser.parse_args()
    cold_runs = args.cold or (3 if args.quick else 10)
    warm_runs = args.warm or (70 if args.quick else 700)
    if cold_runs < 1 or warm_runs < 1 or args.files < 100:
        parser.error("--cold and --warm must be at least 1, --files at least 100")
    print(machine_note())
    base = Path(tempfile.mkdtemp(prefix="ahp-bench-mentions-"))
    try:
        tree = base / "repo"
        start = time.perf_counter()
        made = make_tree(tree, args.files)
        print(
            f"tree: {made['tracked']:,} files git would track, {made['ignored']:,} ignored "
            f"(node_modules/, dist/, *.log), written in {time.perf_counter() - start:.1f} s"
        )
        parts = in_process(tree, 3 if args.quick else 5)
        result = trio.run(measure, tree, cold_runs, warm_runs)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(
        f"in process: walk with ignore rules {parts['scan']:.0f} ms for {parts['entries']:,} "
        f"entries (files and folders), ranking table {parts['build']:.0f} ms, ranking alone "
        f"p50 {parts['rank_p50']:.2f} ms / p99 {parts['rank_p99']:.2f} ms"
    )
    cold = result["cold"]
    everything = [v for values in result["warm"].values() for v in values]
    rows: list[list[object]] = [
        ["cold (first mention)", len(cold), *_p50_p99(cold, 1), ""],
        ["warm, all queries", len(everything), *_p50_p99(everything, 2), ""],
    ]
    for label, query in QUERIES:
        values = result["warm"][label]
        rows.append(
            [f"  {label} ({query})", len(values), *_p50_p99(values, 2), result["counts"][label]]
        )
    print("mention completion latency, request sent -> response received over WebSocket:")
    print(table(["case", "requests", "p50 ms", "p99 ms", "items"], rows))


if __name__ == "__main__":
    main()
