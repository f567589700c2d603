"""The doors the ACP provider opens to its agent, tried by the SDK test agent: where its files and
terminals may go, how many terminals it may hold, and that none outlives its conversation.

Each test drives a real agent subprocess that calls the bridge's ``fs/*`` and ``terminal/*``
methods, so a refusal is checked as the agent receives it (JSON-RPC code and reason), and a
terminal as the real process it is.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from ahp_bridge.conformance import RecordingSink
from tests.e2e.test_acp_provider import assistant_text, open_conv, started, tool_items, turn
from tests.e2e.test_copilot_bridge import alive

INVALID_PARAMS = -32602
OUTSIDE = "is outside the session's working directories"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def sibling(tmp_path: Path) -> Path:
    """A directory whose path starts with the working directory's path (``work`` and
    ``work-evil``): a string-prefix confinement would let it in."""
    path = tmp_path / "work-evil"
    path.mkdir()
    (path / "x").write_text("sibling secret\n")
    return path


def refusal(text: str) -> tuple[int, str]:
    """The code and reason of the test agent's ``refused CODE: {"reason": ...}``."""
    head, _, data = text.partition(": ")
    assert head.startswith("refused "), text
    return int(head.removeprefix("refused ")), json.loads(data)["reason"]


async def test_a_sibling_directory_sharing_the_workdirs_prefix_is_outside(
    tmp_path: Path, workdir: Path, sibling: Path
) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        code, reason = refusal(assistant_text(await turn(conv, sink, f"read {sibling}/x")))
        assert code == INVALID_PARAMS
        assert reason.startswith(f"the path '{sibling}/x' {OUTSIDE} ({workdir})")
        events = await turn(conv, sink, f"write {sibling}/x overwritten")
        assert "The client refused the write." in assistant_text(events)
        failed = tool_items(events)[-1].tool
        assert failed is not None and OUTSIDE in failed.output
        await turn(conv, sink, f"write {sibling}/new planted")
        assert (sibling / "x").read_text() == "sibling secret\n"
        assert not (sibling / "new").exists()


@pytest.mark.parametrize("where", ["root", "sibling"])
async def test_a_terminal_cwd_outside_the_workdir_is_refused_and_nothing_runs(
    tmp_path: Path, workdir: Path, sibling: Path, where: str
) -> None:
    cwd = "/" if where == "root" else str(sibling)
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        marker = tmp_path / "ran"
        events = await turn(conv, sink, f"terminal cwd={cwd} touch {marker}")
        code, reason = refusal(assistant_text(events))
        assert (code, reason) == (
            INVALID_PARAMS,
            f"the path '{cwd}' {OUTSIDE} ({workdir}); the bridge only reads and writes inside them",
        )
        assert not marker.exists()
        # Inside, a cwd is honoured.
        (workdir / "sub").mkdir()
        events = await turn(conv, sink, f"terminal cwd={workdir}/sub pwd")
        assert assistant_text(events) == f"exit 0: {workdir}/sub"


async def test_a_limited_read_over_max_file_bytes_is_refused(tmp_path: Path, workdir: Path) -> None:
    lines = workdir / "lines.txt"
    lines.write_text("".join(f"{n:0127d}\n" for n in range(1, 21)))  # 20 lines of 128 bytes
    async with started(tmp_path, max_file_bytes=1024) as provider:
        conv, sink = await open_conv(provider, workdir)
        # Eight lines are 1024 bytes, the cap exactly; nine are over it.
        text = assistant_text(await turn(conv, sink, f"read {lines} 3 8"))
        assert text == "content: " + "".join(f"{n:0127d}\n" for n in range(3, 11))
        code, reason = refusal(assistant_text(await turn(conv, sink, f"read {lines} 3 9")))
        assert (code, reason) == (
            INVALID_PARAMS,
            f"the requested part of '{lines}' is over the bridge's max_file_bytes (1024); "
            "ask for fewer lines",
        )


PIDS = "sleep 60 & echo $$ $!; wait"
"""A shell and its background child, both printed: a kill that misses the group leaves one."""

Spawn = Callable[[Any, RecordingSink, int], Awaitable[dict[str, Any]]]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """``spawn(conv, sink, n)``: the test agent's ``spawn n PIDS``, what it said plus ``pids``.

    Whatever it started is killed at teardown, so a failing test leaves no process behind.
    """
    started: list[int] = []

    async def run(conv: Any, sink: RecordingSink, count: int) -> dict[str, Any]:
        said: dict[str, Any] = json.loads(
            assistant_text(await turn(conv, sink, f"spawn {count} {PIDS}"))
        )
        said["pids"] = [int(p) for line in said["started"] for p in line.split()]
        started.extend(said["pids"])
        return said

    yield run
    for pid in started:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


async def gone(pids: list[int]) -> None:
    """Wait up to a second for every process to be gone (the OS gives no event for another
    process's end)."""
    with trio.move_on_after(1):
        while any(alive(p) for p in pids):
            await trio.sleep(0.01)
    assert [p for p in pids if alive(p)] == []


async def test_exactly_max_terminals_run_and_the_next_is_refused_naming_the_key(
    tmp_path: Path, workdir: Path, spawn: Spawn
) -> None:
    async with started(tmp_path, max_terminals=3) as provider:
        conv, sink = await open_conv(provider, workdir)
        said = await spawn(conv, sink, 4)
        pids = said["pids"]
        assert len(said["started"]) == 3 and len(pids) == 6 and all(alive(p) for p in pids)
        assert said["refused"] == {
            "code": INVALID_PARAMS,
            "data": {
                "reason": "this session already holds 3 terminals (the bridge's max_terminals); "
                "release one first"
            },
        }
        await conv.close()
        await gone(pids)


async def test_terminals_die_when_their_conversation_closes(
    tmp_path: Path, workdir: Path, spawn: Spawn
) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        other, other_sink = await open_conv(provider, workdir)
        pids = (await spawn(conv, sink, 2))["pids"]
        kept = (await spawn(other, other_sink, 1))["pids"]
        assert len(pids) == 4 and all(alive(p) for p in pids + kept)
        procs = [t.proc for t in conv.terminals._terminals.values()]
        await conv.close()
        # Reaped by the time close returns: a process the bridge never saw exit would keep its
        # asyncio transport open past the provider (reported unclosed when collected).
        assert procs and all(p is not None and p.returncode is not None for p in procs)
        await gone(pids)
        assert all(alive(p) for p in kept)  # another conversation's terminals are its own
    await gone(kept)


async def test_terminals_die_when_the_provider_closes(
    tmp_path: Path, workdir: Path, spawn: Spawn
) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        pids = (await spawn(conv, sink, 2))["pids"]
        assert len(pids) == 4 and all(alive(p) for p in pids)
    await gone(pids)
