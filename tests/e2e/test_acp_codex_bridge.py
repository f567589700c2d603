"""Codex as an AHP agent end to end: the real CLI command, codex-acp from npm, offline.

The bridge runs as ``python -m ahp_bridge.cli`` with a named ACP instance (``[providers.codex]
kind = "acp"``) whose agent is codex-acp, its ``CODEX_HOME/config.toml`` pointing a custom model
provider at the scripted Responses API server on 127.0.0.1. Codex runs commands and applies
patches itself (it uses neither ``terminal/*`` nor ``fs/*``), asking first through
``session/request_permission``. An AHP client over WebSocket sees: a streamed answer; a command
approved (it runs) and one denied (it does not); a patch approved, whose ``fileEdit`` before and
after sides ``resourceRead`` serves; a turn cancelled and the next one started at once; the
agent killed mid-turn (the turn fails, the next prompt restarts the agent and reloads the
session); and, after a bridge restart on the same data dir, the session listed, its turns
rebuilt from Codex's own record through ``session/load`` (nothing else in them), and a new turn
that carries the earlier exchange to the model.
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

from tests.e2e.test_acp_claude_bridge import text_of, text_of_active, tool_parts
from tests.e2e.test_copilot_bridge import ROOT, BridgeProcess, Session, child_pids
from tests.support.acp_agents import CODEX_ACP, CODEX_MODEL, codex_options, requires_codex
from tests.support.ahp_client import open_client, ready_chat
from tests.support.model_server import Hold, Text, ToolCall
from tests.support.openai_responses_server import CustomToolCall, ResponsesServer, input_text

pytestmark = requires_codex

HELLO = "Hello from Codex, streamed in pieces."
BEFORE, AFTER = "first line\nold line\n", "first line\nnew line\n"
PATCH = (
    "*** Begin Patch\n*** Update File: notes.txt\n@@\n first line\n-old line\n+new line\n"
    "*** End Patch\n"
)
TURN_TIMEOUT = 60


@pytest.fixture(scope="module")
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # release any held model call


@pytest.fixture(scope="module")
def responses(gate: threading.Event) -> Iterator[ResponsesServer]:
    with ResponsesServer() as srv:
        srv.script("e2e hello", [Text(HELLO, chunks=4)])
        srv.script(
            "e2e approve",
            [ToolCall("exec_command", {"cmd": "echo approved > ran.txt && pwd"})],
            [Text("Ran it.")],
        )
        srv.script(
            "e2e deny",
            [ToolCall("exec_command", {"cmd": "echo denied > denied.txt"})],
            [Text("Did not run it.")],
        )
        srv.script("e2e edit", [CustomToolCall("apply_patch", PATCH)], [Text("Edited it.")])
        srv.script("e2e long", [Text("Starting"), Hold(gate, timeout=60.0)])
        srv.script("e2e again", [Text("Back again.")])
        yield srv


def write_config(path: Path, responses: ResponsesServer, home: Path, *, key: bool = True) -> Path:
    opts = codex_options(responses.base_url, home)
    if not key:
        del opts["env"]["CODEX_LOCAL_API_KEY"]  # type: ignore[attr-defined]
    q = json.dumps  # a JSON string literal is a valid TOML basic string
    env = ", ".join(f"{k} = {q(v)}" for k, v in opts["env"].items())  # type: ignore[attr-defined]
    command = ", ".join(q(c) for c in opts["command"])  # type: ignore[attr-defined]
    path.write_text(
        "[bridge]\n"
        'providers = ["codex"]\n'
        "[providers.codex]\n"
        'kind = "acp"\n'
        f"command = [{command}]\n"
        f"env = {{ {env} }}\n"
        "inherit_env = false\n"
        f"stop_grace = {opts['stop_grace']}\n"
    )
    return path


def agent_pids(bridge: BridgeProcess) -> list[int]:
    """The codex-acp processes the bridge started."""
    out = []
    for pid in child_pids(bridge.process.pid):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/exe").resolve() == CODEX_ACP.resolve():
                out.append(pid)
    return out


@asynccontextmanager
async def running_bridge(
    tmp_path: Path, responses: ResponsesServer
) -> AsyncIterator[BridgeProcess]:
    """``python -m ahp_bridge.cli --config <codex> --data-dir <tmp>/data`` on an ephemeral port."""
    config = write_config(tmp_path / "bridge.toml", responses, tmp_path / "home")
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
async def codex_session(url: str, session: str = "") -> AsyncIterator[Session]:
    """Connect; create a session of the ``codex`` agent (or subscribe to ``session``)."""
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "codex-e2e")
        try:
            await client.initialize([ROOT])
            session, chat = await ready_chat(client, "codex", TURN_TIMEOUT, session)
            yield Session(client, session, chat)
        finally:
            await client.close()
            nursery.cancel_scope.cancel()


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


def saw(responses: ResponsesServer, trigger: str, text: str) -> bool:
    return any(text in input_text(e.body) for e in responses.requests(trigger))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


async def test_codex_over_websocket(
    tmp_path: Path, workdir: Path, responses: ResponsesServer, gate: threading.Event
) -> None:
    (workdir / "notes.txt").write_text(BEFORE)
    async with running_bridge(tmp_path, responses) as bridge, codex_session(bridge.url) as s:
        root = s.client.states[ROOT]
        (agent,) = [a for a in root["agents"] if a["provider"] == "codex"]
        assert agent["displayName"] == "Codex"
        assert [m["id"] for m in agent["models"]][:1] == [CODEX_MODEL]  # its own, first

        # A streamed answer, without a warning (Codex knows the model).
        asked = len(responses.requests("e2e hello"))
        await s.start_turn("t-hello", "e2e hello")
        hello = await s.ended("t-hello")
        assert hello["state"] == "complete" and text_of(hello) == HELLO
        assert [a for a in s.actions(s.chat) if a["type"] == "chat/delta"], "not streamed"
        # No client chose a model: the session shows Codex's configured one, and Codex was
        # asked for it (not switched to the first of its list).
        assert s.client.states[s.session]["config"]["values"]["model"] == CODEX_MODEL
        assert [e.body["model"] for e in responses.requests("e2e hello")[asked:]] == [CODEX_MODEL]

        # A command Codex asks to run: approved, it runs (Codex's own process, in the workdir).
        await s.start_turn("t-approve", "e2e approve")
        request = await confirm(s, "t-approve", approved=True)
        assert "echo approved > ran.txt" in json.dumps(request)
        ran = await s.ended("t-approve")
        assert ran["state"] == "complete" and text_of(ran) == "Ran it."
        assert (workdir / "ran.txt").read_text() == "approved\n"
        (shell,) = tool_parts(ran)
        assert shell["status"] == "completed"
        assert str(workdir) in json.dumps(shell)  # its output: pwd

        # Denied: the command never runs. Codex's only "no" is "abort" ("No, and tell Codex
        # what to do differently"): it ends the turn cancelled, without asking the model again.
        await s.start_turn("t-deny", "e2e deny")
        await confirm(s, "t-deny", approved=False)
        denied = await s.ended("t-deny")
        assert not (workdir / "denied.txt").exists()
        assert denied["state"] == "cancelled", denied
        assert [t["status"] for t in tool_parts(denied)] == ["cancelled"]
        assert [e.reply_index for e in responses.requests("e2e deny")] == [0]

        # A patch: asked, applied by Codex; both sides of the fileEdit can be read.
        await s.start_turn("t-edit", "e2e edit")
        await confirm(s, "t-edit", approved=True)
        edited = await s.ended("t-edit")
        assert edited["state"] == "complete" and text_of(edited) == "Edited it."
        assert (workdir / "notes.txt").read_text() == AFTER
        (patch,) = tool_parts(edited)
        (edit,) = [c for c in patch["content"] if c.get("type") == "fileEdit"]
        uri = (workdir / "notes.txt").as_uri()
        assert edit["before"]["uri"] == edit["after"]["uri"] == uri
        assert edit["diff"] == {"added": 1, "removed": 1}
        assert await read(s, edit["before"]["content"]["uri"]) == BEFORE
        assert await read(s, edit["after"]["content"]["uri"]) == AFTER

        # Cancel a running turn and start the next one at once.
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

        # The agent killed mid-turn: the turn fails; the next prompt restarts it and works.
        (pid,) = agent_pids(bridge)
        await s.start_turn("t-kill", "e2e long")
        await s.client.wait_for(lambda: text_of_active(s) == "Starting", TURN_TIMEOUT)
        os.killpg(pid, signal.SIGKILL)
        killed = await s.ended("t-kill")
        assert killed["state"] == "error", killed
        assert "SIGKILL" in json.dumps(killed["error"])
        before = len(responses.requests("e2e again"))
        await s.start_turn("t-again", "e2e again")
        again = await s.ended("t-again")
        assert again["state"] == "complete" and text_of(again) == "Back again."
        (new_pid,) = agent_pids(bridge)
        assert new_pid != pid
        # The reloaded session carried the conversation so far to the model.
        (reloaded,) = responses.requests("e2e again")[before:]
        assert HELLO in input_text(reloaded.body)

        await s.assert_mirrors_host()
    assert HELLO.encode() not in bridge.stderr
    assert responses.other == []  # nothing but /v1/responses was asked of the model server
    # and every request was a turn's: no titles, summaries or memories of Codex's own
    assert [e.rule for e in responses.requests() if e.rule is None] == []


async def test_a_bridge_restart_reopens_the_session(
    tmp_path: Path, workdir: Path, responses: ResponsesServer
) -> None:
    async with running_bridge(tmp_path, responses) as first, codex_session(first.url) as s:
        await s.start_turn("t-one", "e2e hello")
        one = await s.ended("t-one")
        assert one["state"] == "complete"
        session, chat = s.session, s.chat
        assert await first.terminate() == 0

    async with running_bridge(tmp_path, responses) as second, trio.open_nursery() as nursery:
        client = await open_client(nursery, second.url, "after-restart")
        try:
            await client.initialize([ROOT])
            listed = await client.request("listSessions", {"channel": ROOT})
            assert [i["resource"] for i in listed["items"]] == [session]
            state = (await client.subscribe(session))["state"]
            assert state["lifecycle"] == "ready", state
            turns = (await client.subscribe(chat))["state"]["turns"]
            # Exactly what was said: no injected text, no context message of Codex's own.
            assert [t["message"]["text"] for t in turns] == ["e2e hello"]
            assert text_of(turns[0]) == HELLO
        finally:
            await client.close()
            nursery.cancel_scope.cancel()
        before = len(responses.requests("e2e again"))
        async with codex_session(second.url, session) as s2:
            await s2.start_turn("t-two", "e2e again")
            two = await s2.ended("t-two")
            assert two["state"] == "complete" and text_of(two) == "Back again."
        (after,) = responses.requests("e2e again")[before:]
        assert HELLO in input_text(after.body)


def test_doctor_on_codex(tmp_path: Path, responses: ResponsesServer) -> None:
    config = write_config(tmp_path / "bridge.toml", responses, tmp_path / "home")
    argv = ["doctor", "--config", str(config), "--provider", "codex"]
    result = subprocess.run(
        [sys.executable, "-m", "ahp_bridge.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"ok    the agent command is {CODEX_ACP}", lines
    assert "it answers initialize: Codex 0.16.0, ACP 1" in result.stdout
    assert "it can reopen sessions (session/load); images in prompts: yes" in result.stdout
    assert "sign-in methods it offers: chatgpt, codex-api-key, openai-api-key" in result.stdout
    assert "a session opens; 5 models offered" in result.stdout
    assert (
        "ok    credentials for Codex's model provider 'local': CODEX_LOCAL_API_KEY is set" in lines
    )


def test_doctor_warns_of_codex_without_its_providers_key(
    tmp_path: Path, responses: ResponsesServer
) -> None:
    config = write_config(tmp_path / "bridge.toml", responses, tmp_path / "home", key=False)
    argv = ["doctor", "--config", str(config), "--provider", "codex"]
    result = subprocess.run(
        [sys.executable, "-m", "ahp_bridge.cli", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr  # a warning, not a failure
    lines = result.stdout.splitlines()
    at = lines.index(
        "WARN  Codex's model provider 'local' has no key: CODEX_LOCAL_API_KEY is not set "
        "(every prompt will fail)"
    )
    assert lines[at + 1].startswith("      fix: set CODEX_LOCAL_API_KEY in the provider's env")


async def test_codex_lists_its_sessions_for_import(
    tmp_path: Path, workdir: Path, responses: ResponsesServer
) -> None:
    from ahp_bridge_acp import create_provider

    from ahp_bridge.agentapi import OpenRequest, Prompt
    from ahp_bridge.conformance import RecordingSink

    async with create_provider(codex_options(responses.base_url, tmp_path / "home")) as provider:
        assert provider.capabilities().import_
        sink = RecordingSink()
        conv = await provider.open(OpenRequest(workdir=str(workdir), events=sink))
        await conv.send(Prompt(text="e2e hello"))
        with trio.fail_after(TURN_TIMEOUT):
            await sink.wait_for(
                lambda evs: next((e for e in evs if e.turn and e.turn.state != "working"), None)
            )
        listed = await provider.previous(str(workdir))
        assert [(p.id, p.title, p.workdir) for p in listed] == [
            (conv.id(), "e2e hello", str(workdir))
        ]
