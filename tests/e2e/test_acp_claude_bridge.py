"""Claude Code as an AHP agent end to end: the real CLI command, claude-code-acp from npm, offline.

The bridge runs as ``python -m ahp_bridge.cli`` with a named ACP instance (``[providers.claude]
kind = "acp"``) whose agent is claude-code-acp, pointed at the scripted Anthropic server on
127.0.0.1. An AHP client over WebSocket sees: a streamed answer; a file edit that Claude Code asks
permission for and writes through the bridge's ``fs/write_text_file``; a shell command it runs
through the bridge's ``terminal/create`` in the working directory; a cancelled turn; the agent
killed mid-turn (the turn fails, the next prompt restarts the agent and reloads the session);
and, after a bridge restart on the same data dir, the session listed, its turns rebuilt from
Claude Code's own record through ``session/load``, and a new turn that carries the earlier
exchange to the model.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.e2e.test_copilot_bridge import ROOT, BridgeProcess, Session, child_pids
from tests.support.acp_agents import CLAUDE_ACP, claude_options, requires_claude
from tests.support.ahp_client import open_client, ready_chat
from tests.support.anthropic_server import AnthropicServer, Exchange
from tests.support.model_server import Hold, Text, ToolCall

pytestmark = requires_claude

HELLO = "Hello from Claude Code, streamed in pieces."
TURN_TIMEOUT = 60


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # release any held model call


@pytest.fixture
def anthropic(workdir: Path, gate: threading.Event) -> Iterator[AnthropicServer]:
    with AnthropicServer() as srv:
        srv.script("e2e hello", [Text(HELLO, chunks=4)])
        srv.script(
            "e2e write",
            [
                ToolCall(
                    "mcp__acp__Write",
                    {"file_path": str(workdir / "notes.txt"), "content": "written by claude\n"},
                )
            ],
            [Text("Wrote it.")],
        )
        srv.script(
            "e2e terminal",
            [
                ToolCall(
                    "mcp__acp__Bash",
                    {
                        "command": "echo terminal-output > ran.txt && pwd",
                        "description": "Echo",
                        "timeout": 60000,
                    },
                )
            ],
            [Text("Ran it.")],
        )
        srv.script("e2e long", [Text("Starting"), Hold(gate, timeout=60.0)])
        srv.script("e2e again", [Text("Back again.")])
        yield srv


def write_config(path: Path, anthropic: AnthropicServer, home: Path) -> Path:
    opts = claude_options(anthropic.base_url, home)
    q = json.dumps  # a JSON string literal is a valid TOML basic string
    env = ", ".join(f"{k} = {q(v)}" for k, v in opts["env"].items())  # type: ignore[attr-defined]
    command = ", ".join(q(c) for c in opts["command"])  # type: ignore[attr-defined]
    path.write_text(
        "[bridge]\n"
        'providers = ["claude"]\n'
        "[providers.claude]\n"
        'kind = "acp"\n'
        f"command = [{command}]\n"
        f"env = {{ {env} }}\n"
        "inherit_env = false\n"
    )
    return path


def agent_pids(bridge: BridgeProcess) -> list[int]:
    """The claude-code-acp processes the bridge started (its node children running it)."""
    out = []
    for pid in child_pids(bridge.process.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(CLAUDE_ACP).encode() in cmdline:
            out.append(pid)
    return out


@asynccontextmanager
async def running_bridge(
    tmp_path: Path, anthropic: AnthropicServer
) -> AsyncIterator[BridgeProcess]:
    """``python -m ahp_bridge.cli --config <claude> --data-dir <tmp>/data`` on an ephemeral port."""
    config = write_config(tmp_path / "bridge.toml", anthropic, tmp_path / "home")
    args = [
        "--listen",
        "127.0.0.1:0",
        "--config",
        str(config),
        "--data-dir",
        str(tmp_path / "data"),
    ]
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "ahp_bridge.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        cwd=tmp_path / "work",
    )
    assert process.stdout is not None and process.stderr is not None
    started = BridgeProcess(process)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(started.drain_stderr, process.stderr)
            await started.until_ready(nursery, 60)
            yield started
            nursery.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            leftovers = agent_pids(started)
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
            for pid in leftovers:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)


@asynccontextmanager
async def claude_session(url: str, session: str = "") -> AsyncIterator[Session]:
    """Connect; create a session of the ``claude`` agent (or subscribe to ``session``)."""
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "acp-e2e")
        try:
            await client.initialize([ROOT])
            session, chat = await ready_chat(client, "claude", TURN_TIMEOUT, session)
            yield Session(client, session, chat)
        finally:
            await client.close()
            nursery.cancel_scope.cancel()


def text_of(turn: dict[str, Any]) -> str:
    return "".join(p["content"] for p in turn["responseParts"] if p["kind"] == "markdown")


def tool_parts(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]


async def approve(s: Session, turn_id: str) -> dict[str, Any]:
    """Approve the turn's one pending permission; the request as the host showed it."""
    request = await s.pending_request()
    call_id = request["toolCall"]["toolCallId"]
    await s.answer(
        {
            "type": "chat/toolCallConfirmed",
            "turnId": turn_id,
            "toolCallId": call_id,
            "approved": True,
            "confirmed": "user-action",
        }
    )
    return request


def saw(exchanges: list[Exchange], text: str) -> bool:
    return any(text in json.dumps(e.messages) for e in exchanges)


async def test_claude_code_over_websocket(
    tmp_path: Path, workdir: Path, anthropic: AnthropicServer, gate: threading.Event
) -> None:
    async with running_bridge(tmp_path, anthropic) as bridge, claude_session(bridge.url) as s:
        root = s.client.states[ROOT]
        (agent,) = [a for a in root["agents"] if a["provider"] == "claude"]
        assert agent["displayName"] == "Claude Code"
        assert {m["id"] for m in agent["models"]} >= {"default", "haiku"}

        # A streamed answer.
        await s.start_turn("t-hello", "e2e hello")
        hello = await s.ended("t-hello")
        assert hello["state"] == "complete" and text_of(hello) == HELLO
        deltas = [a for a in s.actions(s.chat) if a["type"] == "chat/delta"]
        assert deltas, "the answer was not streamed"

        # A file edit: permission asked, then written through fs/write_text_file.
        await s.start_turn("t-write", "e2e write")
        request = await approve(s, "t-write")
        assert "notes.txt" in json.dumps(request)
        wrote = await s.ended("t-write")
        assert wrote["state"] == "complete" and text_of(wrote) == "Wrote it."
        assert (workdir / "notes.txt").read_text() == "written by claude\n"
        (edit,) = tool_parts(wrote)
        assert edit["status"] == "completed"

        # A shell command: permission asked, run by the bridge as a terminal in the workdir.
        await s.start_turn("t-term", "e2e terminal")
        await approve(s, "t-term")
        ran = await s.ended("t-term")
        assert ran["state"] == "complete" and text_of(ran) == "Ran it."
        assert (workdir / "ran.txt").read_text() == "terminal-output\n"
        (shell,) = tool_parts(ran)
        assert shell["status"] == "completed"
        assert str(workdir) in json.dumps(shell["content"])  # the terminal's output (pwd)

        # The agent killed mid-turn: the turn fails; the next prompt restarts it and works.
        (pid,) = agent_pids(bridge)
        await s.start_turn("t-kill", "e2e long")
        await s.client.wait_for(lambda: text_of_active(s) == "Starting", TURN_TIMEOUT)
        os.killpg(pid, signal.SIGKILL)
        killed = await s.ended("t-kill")
        assert killed["state"] == "error", killed
        assert "SIGKILL" in json.dumps(killed["error"])
        await s.start_turn("t-again", "e2e again")
        again = await s.ended("t-again")
        assert again["state"] == "complete" and text_of(again) == "Back again."
        (new_pid,) = agent_pids(bridge)
        assert new_pid != pid
        # The reloaded session carried the conversation so far to the model.
        assert saw(anthropic.main_requests("e2e again"), HELLO)
        # Cancel a running turn. (Last: Claude Code 2.x may hand the next prompt the
        # interrupted turn's late result, which ends that prompt at once.)
        await s.start_turn("t-cancel", "e2e long")
        await s.client.wait_for(lambda: text_of_active(s) == "Starting", TURN_TIMEOUT)
        echo = await s.client.echo_of(
            await s.client.dispatch(
                s.chat, {"type": "chat/turnCancelled", "turnId": "t-cancel", "duration": 0}
            )
        )
        assert "rejectionReason" not in echo, echo
        cancelled = await s.ended("t-cancel")
        assert cancelled["state"] == "cancelled"

        await s.assert_mirrors_host()
    assert b"written by claude" not in bridge.stderr and HELLO.encode() not in bridge.stderr


def text_of_active(s: Session) -> str:
    active = s.client.states[s.chat].get("activeTurn")
    return text_of(active) if active else ""


async def test_a_bridge_restart_reopens_the_session(
    tmp_path: Path, anthropic: AnthropicServer
) -> None:
    async with running_bridge(tmp_path, anthropic) as first, claude_session(first.url) as s:
        await s.start_turn("t-one", "e2e hello")
        one = await s.ended("t-one")
        assert one["state"] == "complete"
        session, chat = s.session, s.chat
        assert await first.terminate() == 0

    async with running_bridge(tmp_path, anthropic) as second, trio.open_nursery() as nursery:
        client = await open_client(nursery, second.url, "after-restart")
        try:
            await client.initialize([ROOT])
            listed = await client.request("listSessions", {"channel": ROOT})
            assert [i["resource"] for i in listed["items"]] == [session]
            state = (await client.subscribe(session))["state"]
            assert state["lifecycle"] == "ready", state
            turns = (await client.subscribe(chat))["state"]["turns"]
            assert [t["message"]["text"] for t in turns] == ["e2e hello"]
            assert text_of(turns[0]) == HELLO
        finally:
            await client.close()
            nursery.cancel_scope.cancel()
        async with claude_session(second.url, session) as s2:
            await s2.start_turn("t-two", "e2e again")
            two = await s2.ended("t-two")
            assert two["state"] == "complete" and text_of(two) == "Back again."
        assert saw(anthropic.main_requests("e2e again"), HELLO)


def test_doctor_on_claude_code(tmp_path: Path, anthropic: AnthropicServer) -> None:
    config = write_config(tmp_path / "bridge.toml", anthropic, tmp_path / "home")
    argv = ["doctor", "--config", str(config), "--provider", "claude"]
    result = subprocess.run(
        [sys.executable, "-m", "ahp_bridge.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ok    the agent command is /") and lines[0].endswith("/node")
    assert "it answers initialize: Claude Code 0.16.2, ACP 1" in result.stdout
    assert "it can reopen sessions (session/load); images in prompts: yes" in result.stdout
    assert "sign-in methods it offers: claude-login" in result.stdout
    assert "a session opens; 4 models offered" in result.stdout


async def test_claude_code_lists_its_sessions_for_import(
    tmp_path: Path, workdir: Path, anthropic: AnthropicServer
) -> None:
    from ahp_bridge_acp import create_provider

    from ahp_bridge.agentapi import OpenRequest, Prompt
    from ahp_bridge.conformance import RecordingSink

    async with create_provider(claude_options(anthropic.base_url, tmp_path / "home")) as provider:
        assert provider.capabilities().import_
        sink = RecordingSink()
        conv = await provider.open(OpenRequest(workdir=str(workdir), events=sink))
        await conv.send(Prompt(text="e2e hello"))
        with trio.fail_after(TURN_TIMEOUT):
            await sink.wait_for(
                lambda evs: next((e for e in evs if e.turn and e.turn.state != "working"), None)
            )
        with trio.fail_after(10):
            while not (listed := await provider.previous(str(workdir))):
                await trio.sleep(0.1)  # Claude Code writes its record just after the turn
        assert [(p.id, p.title, p.workdir) for p in listed] == [
            (conv.id(), "e2e hello", str(workdir))
        ]
