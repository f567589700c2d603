"""Claude Agent as an AHP agent end to end: the real CLI command, claude-agent-acp, offline.

The bridge runs as ``python -m ahp_bridge.cli`` with a named ACP instance (``[providers.claude]
kind = "acp"``) whose agent is claude-agent-acp (Claude Code inside), pointed at the scripted
Anthropic server on 127.0.0.1. Claude Code runs commands and edits files itself (it uses neither
``terminal/*`` nor ``fs/*``), asking first through ``session/request_permission``. An AHP client
over WebSocket sees: doctor's report; a streamed answer; a command approved (it runs) and one
denied (it does not); an edit approved, whose ``fileEdit`` before and after sides
``resourceRead`` serves; a turn cancelled and the next one started at once (answered on its
own); the agent killed mid-turn (the turn fails, the next prompt restarts the agent and reloads
the session); and, after a bridge restart on the same data dir, the session listed, its turns
rebuilt from Claude Code's own record through ``session/load`` (no injected ``/model`` text),
and a new turn that carries the earlier exchange to the model.
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
from tests.e2e.test_startup_warnings import warnings_at_start
from tests.support.acp_agents import CLAUDE_ACP, claude_options, requires_claude
from tests.support.ahp_client import open_client, ready_chat
from tests.support.anthropic_server import AnthropicServer, Exchange
from tests.support.model_server import Hold, Text, ToolCall

pytestmark = requires_claude

HELLO = "Hello from Claude, streamed in pieces."
BEFORE, AFTER = "first line\nold line\nlast line\n", "first line\nnew line\nlast line\n"
TURN_TIMEOUT = 60


@pytest.fixture(scope="module")
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # release any held model call


@pytest.fixture(scope="module")
def anthropic(gate: threading.Event) -> Iterator[AnthropicServer]:
    with AnthropicServer() as srv:
        srv.script("e2e hello", [Text(HELLO, chunks=4)])
        srv.script(
            "e2e approve",
            [
                ToolCall(
                    "Bash", {"command": "echo approved > ran.txt && pwd", "description": "Echo"}
                )
            ],
            [Text("Ran it.")],
        )
        srv.script(
            "e2e deny",
            [ToolCall("Bash", {"command": "echo denied > denied.txt", "description": "Echo"})],
            [Text("Did not run it.")],
        )
        srv.script("e2e long", [Text("Starting"), Hold(gate, timeout=60.0)])
        srv.script("e2e again", [Text("Back again.")])
        yield srv


def script_edit(anthropic: AnthropicServer, workdir: Path) -> None:
    """Claude Code edits only a file it has read: Read, then Edit (absolute paths)."""
    path = str(workdir / "notes.txt")
    anthropic.script(
        "e2e edit",
        [ToolCall("Read", {"file_path": path})],
        [ToolCall("Edit", {"file_path": path, "old_string": "old line", "new_string": "new line"})],
        [Text("Edited it.")],
    )


def write_config(path: Path, anthropic: AnthropicServer, home: Path, *, key: bool = True) -> Path:
    opts = claude_options(anthropic.base_url, home)
    if not key:
        del opts["env"]["ANTHROPIC_API_KEY"]  # type: ignore[attr-defined]
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
    """The claude-agent-acp processes the bridge started (its node children running it)."""
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


async def confirm(s: Session, turn_id: str, approved: bool) -> dict[str, Any]:
    """Answer the turn's one pending permission; the request as the host showed it."""
    request = await s.pending_request()
    answer: dict[str, Any] = {
        "type": "chat/toolCallConfirmed",
        "turnId": turn_id,
        "toolCallId": request["toolCall"]["toolCallId"],
        "approved": approved,
    }
    answer.update({"confirmed": "user-action"} if approved else {"reason": "denied"})
    await s.answer(answer)
    return request


async def read(s: Session, uri: str) -> str:
    result = await s.client.request("resourceRead", {"channel": ROOT, "uri": uri})
    assert result["encoding"] == "utf-8"
    text: str = result["data"]
    return text


def saw(exchanges: list[Exchange], text: str) -> bool:
    return any(text in json.dumps(e.messages) for e in exchanges)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


async def test_claude_agent_over_websocket(
    tmp_path: Path, workdir: Path, anthropic: AnthropicServer, gate: threading.Event
) -> None:
    (workdir / "notes.txt").write_text(BEFORE)
    script_edit(anthropic, workdir)
    async with running_bridge(tmp_path, anthropic) as bridge, claude_session(bridge.url) as s:
        root = s.client.states[ROOT]
        (agent,) = [a for a in root["agents"] if a["provider"] == "claude"]
        assert agent["displayName"] == "Claude Agent"
        # The agent's own model first: the default a session shows, and runs on unswitched.
        assert [m["id"] for m in agent["models"]][:1] == ["default"]
        assert s.client.states[s.session]["config"]["values"]["model"] == "default"

        # A streamed answer.
        await s.start_turn("t-hello", "e2e hello")
        hello = await s.ended("t-hello")
        assert hello["state"] == "complete" and text_of(hello) == HELLO
        assert [a for a in s.actions(s.chat) if a["type"] == "chat/delta"], "not streamed"

        # A command Claude Code asks to run: approved, it runs (Claude Code's own, in the workdir).
        await s.start_turn("t-approve", "e2e approve")
        request = await confirm(s, "t-approve", approved=True)
        assert "echo approved > ran.txt" in json.dumps(request)
        ran = await s.ended("t-approve")
        assert ran["state"] == "complete" and text_of(ran) == "Ran it."
        assert (workdir / "ran.txt").read_text() == "approved\n"
        (shell,) = tool_parts(ran)
        assert shell["status"] == "completed"
        assert str(workdir) in json.dumps(shell)  # its output: pwd

        # Denied: the command never runs; the model hears the refusal and answers.
        await s.start_turn("t-deny", "e2e deny")
        await confirm(s, "t-deny", approved=False)
        denied = await s.ended("t-deny")
        assert not (workdir / "denied.txt").exists()
        assert denied["state"] == "complete" and text_of(denied) == "Did not run it.", denied
        assert [e.reply_index for e in anthropic.main_requests("e2e deny")] == [0, 1]

        # An edit: read (no question), then asked, applied by Claude Code; both sides read back.
        await s.start_turn("t-edit", "e2e edit")
        await confirm(s, "t-edit", approved=True)
        edited = await s.ended("t-edit")
        assert edited["state"] == "complete" and text_of(edited) == "Edited it."
        assert (workdir / "notes.txt").read_text() == AFTER
        edit_tool = [t for t in tool_parts(edited) if "Edit" in json.dumps(t)][-1]
        (edit,) = [c for c in edit_tool["content"] if c.get("type") == "fileEdit"]
        uri = (workdir / "notes.txt").as_uri()
        assert edit["before"]["uri"] == edit["after"]["uri"] == uri
        assert edit["diff"] == {"added": 1, "removed": 1}
        # Claude Agent's diff is the edited hunk with its context lines (the whole of a file
        # this short), its last newline dropped.
        assert await read(s, edit["before"]["content"]["uri"]) == BEFORE.rstrip("\n")
        assert await read(s, edit["after"]["content"]["uri"]) == AFTER.rstrip("\n")

        # Cancel a running turn and start the next one at once: it answers on its own.
        await s.start_turn("t-cancel", "e2e long")
        await s.client.wait_for(lambda: text_of_active(s) == "Starting", TURN_TIMEOUT)
        echo = await s.client.echo_of(
            await s.client.dispatch(
                s.chat, {"type": "chat/turnCancelled", "turnId": "t-cancel", "duration": 0}
            )
        )
        assert "rejectionReason" not in echo, echo
        await s.start_turn("t-next", "e2e again")
        following = await s.ended("t-next")
        assert following["state"] == "complete" and text_of(following) == "Back again."
        (cancelled,) = [t for t in s.client.states[s.chat]["turns"] if t["id"] == "t-cancel"]
        assert cancelled["state"] == "cancelled"
        await s.start_turn("t-after", "e2e hello")
        after = await s.ended("t-after")
        assert text_of(after) == HELLO  # nothing of the turn before leaked into it

        # The agent killed mid-turn: the turn fails; the next prompt restarts it and works.
        (pid,) = agent_pids(bridge)
        await s.start_turn("t-kill", "e2e long")
        await s.client.wait_for(lambda: text_of_active(s) == "Starting", TURN_TIMEOUT)
        os.killpg(pid, signal.SIGKILL)
        killed = await s.ended("t-kill")
        assert killed["state"] == "error", killed
        assert "SIGKILL" in json.dumps(killed["error"])
        before = len(anthropic.main_requests("e2e again"))
        await s.start_turn("t-again", "e2e again")
        again = await s.ended("t-again")
        assert again["state"] == "complete" and text_of(again) == "Back again."
        (new_pid,) = agent_pids(bridge)
        assert new_pid != pid
        # The reloaded session carried the conversation so far to the model.
        (reloaded,) = anthropic.main_requests("e2e again")[before:]
        assert saw([reloaded], HELLO)

        await s.assert_mirrors_host()
    assert HELLO.encode() not in bridge.stderr
    # Every request was the agent loop's or a side request of Claude Code's; none unscripted.
    assert [e.rule for e in anthropic.main_requests() if e.rule is None] == []


def text_of_active(s: Session) -> str:
    active = s.client.states[s.chat].get("activeTurn")
    return text_of(active) if active else ""


async def test_a_bridge_restart_reopens_the_session(
    tmp_path: Path, workdir: Path, anthropic: AnthropicServer
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
            # Exactly what was said: no /model command of a model switch, nothing injected.
            assert [t["message"]["text"] for t in turns] == ["e2e hello"]
            assert text_of(turns[0]) == HELLO
        finally:
            await client.close()
            nursery.cancel_scope.cancel()
        before = len(anthropic.main_requests("e2e again"))
        async with claude_session(second.url, session) as s2:
            await s2.start_turn("t-two", "e2e again")
            two = await s2.ended("t-two")
            assert two["state"] == "complete" and text_of(two) == "Back again."
        (after,) = anthropic.main_requests("e2e again")[before:]
        assert saw([after], HELLO)


def test_doctor_on_claude_agent(tmp_path: Path, anthropic: AnthropicServer) -> None:
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
    assert "it answers initialize: Claude Agent 0.23.1, ACP 1" in result.stdout
    assert "it can reopen sessions (session/load); images in prompts: yes" in result.stdout
    assert "it offers no sign-in methods" in result.stdout
    assert "ok    credentials for Claude: ANTHROPIC_API_KEY is set" in lines
    assert "a session opens; 4 models offered" in result.stdout


def test_doctor_warns_of_claude_without_credentials(
    tmp_path: Path, anthropic: AnthropicServer
) -> None:
    config = write_config(tmp_path / "bridge.toml", anthropic, tmp_path / "home", key=False)
    argv = ["doctor", "--config", str(config), "--provider", "claude"]
    result = subprocess.run(
        [sys.executable, "-m", "ahp_bridge.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr  # a warning, not a failure
    lines = result.stdout.splitlines()
    at = lines.index("WARN  Claude has no credentials it can use (every prompt will fail)")
    assert lines[at + 1].startswith("      fix: set ANTHROPIC_API_KEY in the provider's env")


async def test_claude_without_credentials_is_said_at_start(
    tmp_path: Path, anthropic: AnthropicServer
) -> None:
    """Doctor's credentials check, at the bridge's start too: before a first prompt fails."""
    config = write_config(tmp_path / "claude.toml", anthropic, tmp_path / "home", key=False)
    found = await warnings_at_start(tmp_path, config.read_text(), "claude", expect=1)
    [warning] = found
    assert (warning["event"], warning["provider"]) == (
        "Claude has no credentials it can use (every prompt will fail)",
        "claude",
    )
    assert warning["fix"].startswith("set ANTHROPIC_API_KEY in the provider's env")


async def test_claude_agent_lists_its_sessions_for_import(
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
