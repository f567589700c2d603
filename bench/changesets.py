"""Changeset computation for a turn that edits 100 files, in process and through the bridge.

Run: python bench/changesets.py [--quick] [--files N] [--lines L] [--runs R]

A working directory holds N files (default 100) of L lines (default 400). One turn of the fake
edits every one of them (a tool call whose ``file_edits`` rewrite each file: 10 lines of every
50 replaced, so 80 changed lines in a 400-line file), with real writes on disk.

- **in process**: what the host computes once the provider's record is read: the record as a
  snapshot (``translate.changes.snapshot`` of N ``FileDiff``s with the provider's counts), the
  turn's files against the
  snapshot at its start (``turn_files``: line counts with a diff per file) and the changeset
  files with their content references (``changeset_file`` + the content store's digests).
  Median and p99 of 200 runs (20 with --quick).
- **through the bridge** (``ahp-bridge serve`` in its own process, the fake provider): a client
  starts the turn and subscribes to its changeset; the time from the turn's end
  (``chat/turnComplete`` received) to the changeset being ``ready`` with N files received,
  and from the turn's start (dispatch) to that. Each run is a new session whose turn writes
  new content. The provider's ``diff()`` call is part of it.

Percentiles are nearest-rank. Figures only; nothing is asserted about speed.
"""

from __future__ import annotations

import argparse
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

from ahp_bridge.agentapi import FileDiff
from ahp_bridge.host.workspace.content import ContentStore
from ahp_bridge.translate.changes import changeset_file, snapshot, turn_files


def original(index: int, lines: int) -> str:
    return "".join(f"file {index} line {n}: some code = value_{n}\n" for n in range(lines))


def edited(index: int, lines: int, run: int) -> str:
    out = []
    for n in range(lines):
        if n % 50 < 10:
            out.append(f"file {index} line {n}: changed in run {run}\n")
        else:
            out.append(f"file {index} line {n}: some code = value_{n}\n")
    return "".join(out)


def _file_uri(path: str) -> str:
    return "file://" + path


def in_process(files: int, lines: int, runs: int) -> list[list[object]]:
    base = {f"/w/src/f{i}.py": original(i, lines) for i in range(files)}
    start_diffs = [FileDiff(path=p, before=t, after=t) for p, t in base.items()]
    # The provider's own counts, as the fake and Copilot report them (snapshot counts only
    # files that come without).
    changed = sum(1 for n in range(lines) if n % 50 < 10)
    end_diffs = [
        FileDiff(
            path=p,
            status="modified",
            before=t,
            after=edited(i, lines, 1),
            additions=changed,
            deletions=changed,
        )
        for i, (p, t) in enumerate(base.items())
    ]
    start = snapshot([d for d in start_diffs if d.before != d.after])  # nothing changed yet
    times: dict[str, list[float]] = {"snapshot": [], "turn files": [], "changeset": []}
    for _ in range(runs):
        store = ContentStore(max_bytes=1 << 30, wait_seconds=1)
        t0 = time.perf_counter()
        end = snapshot(end_diffs)
        t1 = time.perf_counter()
        changes = turn_files(start, end)
        t2 = time.perf_counter()
        shown = [changeset_file(c, _file_uri, store.ref) for c in changes]
        t3 = time.perf_counter()
        assert len(shown) == files and all(f["edit"]["diff"]["added"] > 0 for f in shown)
        times["snapshot"].append((t1 - t0) * 1000)
        times["turn files"].append((t2 - t1) * 1000)
        times["changeset"].append((t3 - t2) * 1000)
    total = [sum(parts) for parts in zip(*times.values(), strict=True)]
    rows: list[list[object]] = [
        [name, f"{median(v):.2f}", f"{percentile(v, 99):.2f}"] for name, v in times.items()
    ]
    rows.append(["total", f"{median(total):.2f}", f"{percentile(total, 99):.2f}"])
    return rows


def script(files: int, lines: int, runs: int) -> str:
    parts = []
    for run in range(1, runs + 1):
        parts.append(f'[[prompts]]\ntext = "edit run {run}"\n\n[[prompts.steps]]\nkind = "tool"')
        parts.append('name = "edit"\nfile_edits = [')
        for i in range(files):
            content = edited(i, lines, run).replace("\n", "\\n")
            parts.append(f'  {{ path = "src/f{i}.py", content = "{content}" }},')
        parts.append("]\n")
    return "\n".join(parts) + "\n"


async def through_bridge(files: int, lines: int, runs: int) -> list[list[object]]:
    with tempfile.TemporaryDirectory(prefix="ahp-bench-changes-") as tmp:
        root = Path(tmp)
        (root / "src").mkdir()
        for i in range(files):
            (root / "src" / f"f{i}.py").write_text(original(i, lines))
        (root / "edits.toml").write_text(script(files, lines, runs))
        config = write_config(root, fake={"time_scale": 0.0, "script": str(root / "edits.toml")})
        after_end: list[float] = []
        after_start: list[float] = []
        async with (
            child_process(bridge_argv(config), "ahp-bridge listening") as bridge,
            clients(bridge.url, 1, "changes") as (client,),
        ):
            await client.initialize(versions=("1.0.0",))
            for run in range(1, runs + 1):
                end_ms, start_ms = await one_turn(client, root, run, files)
                after_end.append(end_ms)
                after_start.append(start_ms)
    return [
        [
            "turn end -> changeset ready",
            f"{median(after_end):.1f}",
            f"{percentile(after_end, 99):.1f}",
        ],
        [
            "turn start -> changeset ready",
            f"{median(after_start):.1f}",
            f"{percentile(after_start, 99):.1f}",
        ],
    ]


async def one_turn(client: Any, root: Path, run: int, files: int) -> tuple[float, float]:
    session = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": session, "provider": "fake", "workingDirectories": [root.as_uri()]},
    )
    snap = await client.request("subscribe", {"channel": session})
    if snap["snapshot"]["state"].get("lifecycle") != "ready":
        await client.wait_envelope(
            lambda e: e["channel"] == session and e["action"]["type"] == "session/ready"
        )
    with trio.fail_after(STEP_TIMEOUT):  # the catalog follows the default chat
        while True:
            snap = await client.request("subscribe", {"channel": session})
            state = snap["snapshot"]["state"]
            if state.get("changesets"):
                break
            await trio.sleep(0.01)
    chat = state["defaultChat"]
    template = next(c["uriTemplate"] for c in state["changesets"] if c["changeKind"] == "turn")
    await client.request("subscribe", {"channel": chat})
    turn_id = str(uuid.uuid4())
    action = {
        "type": "chat/turnStarted",
        "turnId": turn_id,
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": {"text": f"edit run {run}", "origin": {"kind": "user"}},
    }
    started = time.monotonic_ns()
    await client.ws.send_message(client.dispatch_frame(chat, action))
    ended_at: list[int] = []
    client.on_envelope = lambda env, received: (
        ended_at.append(received)
        if env["channel"] == chat and env["action"]["type"] == "chat/turnComplete"
        else None
    )
    channel = template.replace("{turnId}", turn_id)
    with trio.fail_after(STEP_TIMEOUT):
        while not ended_at:
            await client.changed.wait()
    snap = await client.request("subscribe", {"channel": channel})
    changeset = snap["snapshot"]["state"]
    count = len(changeset["files"])
    ready = changeset["status"] == "ready" and count == files
    ready_at = time.monotonic_ns()
    while not ready:
        env = await client.wait_envelope(lambda e: e["channel"] == channel)
        ready_at = time.monotonic_ns()
        action_type = env["action"]["type"]
        if action_type == "changeset/contentChanged":
            count = len(env["action"]["files"])
        ready = (
            action_type == "changeset/statusChanged" and env["action"]["status"] == "ready"
        ) or ready
        ready = ready and count == files
        client.envelopes.remove(env)
    client.on_envelope = None
    client.envelopes.clear()
    await client.request("disposeSession", {"channel": session})
    return (ready_at - ended_at[0]) / 1e6, (ready_at - started) / 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--files", type=int, default=100)
    parser.add_argument("--lines", type=int, default=400)
    parser.add_argument("--runs", type=int, default=0, help="bridge runs (default 7, quick 3)")
    args = parser.parse_args()
    runs = args.runs or (3 if args.quick else 7)
    print(machine_note())
    print(f"{args.files} files of {args.lines} lines, every one edited (80 lines changed each)\n")
    rows = in_process(args.files, args.lines, 20 if args.quick else 200)
    print("in process (ms per turn):")
    print(table(["step", "p50", "p99"], rows))
    print(f"\nthrough the bridge (ms, {runs} runs, a new session each):")
    print(table(["span", "p50", "p99"], await through_bridge(args.files, args.lines, runs)))


if __name__ == "__main__":
    trio.run(main)
