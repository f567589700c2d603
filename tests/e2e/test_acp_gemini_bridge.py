"""Gemini CLI as an AHP agent end to end: the real CLI command, ``gemini --acp`` from npm, offline.

The bridge runs as ``python -m ahp_bridge.cli`` with a named ACP instance (``[providers.gemini]
kind = "acp"``) whose agent is Gemini CLI, pointed at the scripted Gemini API server on
127.0.0.1. An AHP client over WebSocket sees: a streamed answer; a file edit that Gemini CLI asks
permission for and writes through the bridge's ``fs/write_text_file`` (its after side readable);
a new file it cannot create that way (its bug, pinned here); a shell command approved (it runs
it itself, in the working directory) and one denied; a cancelled turn and a new turn started at
once; the agent killed mid-turn (the turn fails, the next prompt restarts the agent and reloads
the session); after a bridge restart on the same data dir, the session listed, its turns
rebuilt from Gemini CLI's own record through ``session/load`` and a new turn that carries the
earlier exchange to the model; and, with the agent's record gone, the chat healed on a new
session. One bridge and one agent serve the flows in turn, to keep the module cheap.
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
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio

from ahp_bridge.engine.chats import NOTICE
from tests.e2e.test_copilot_bridge import ROOT, BridgeProcess, Session, child_pids
from tests.support.acp_agents import GEMINI_CLI, gemini_options, gemini_version, requires_gemini
from tests.support.ahp_client import open_client, ready_chat
from tests.support.gemini_server import Exchange, GeminiServer
from tests.support.model_server import Hold, Text, ToolCall

pytestmark = requires_gemini

HELLO = "Hello from Gemini CLI, streamed in pieces."
BEFORE, AFTER = "first line\nsecond line\n", "first line\nchanged by gemini\n"
TURN_TIMEOUT = 60
ASKED = ("hello", "edit", "create", "approve", "deny", "long", "again", "long", "again")


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "notes.txt").write_text(BEFORE)
    return path


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # release any held model call


@pytest.fixture
def gemini_api(workdir: Path, gate: threading.Event) -> Iterator[GeminiServer]:
    def shell(command: str) -> ToolCall:
        return ToolCall("run_shell_command", {"command": command, "description": "Run it"})

    with GeminiServer() as srv:
        srv.script("e2e hello", [Text(HELLO, chunks=4)])
        srv.script(
            "e2e edit",
            [ToolCall("write_file", {"file_path": str(workdir / "notes.txt"), "content": AFTER})],
            [Text("Edited it.")],
        )
        srv.script(
            "e2e create",
            [ToolCall("write_file", {"file_path": str(workdir / "new.txt"), "content": "new\n"})],
            [Text("Could not create it.")],
        )
        srv.script("e2e approve", [shell("echo shell-output > ran.txt && pwd")], [Text("Ran it.")])
        srv.script("e2e deny", [shell("touch denied.txt")], [Text("Not run.")])
        srv.script("e2e long", [Text("Starting"), Hold(gate, timeout=60.0)])
        srv.script("e2e again", [Text("Back again.")])
        yield srv


def write_config(path: Path, gemini_api: GeminiServer, home: Path) -> Path:
    opts = gemini_options(gemini_api.base_url, home)
    q = json.dumps  # a JSON string literal is a valid TOML basic string
    env = ", ".join(f"{k} = {q(v)}" for k, v in opts["env"].items())  # type: ignore[attr-defined]
    command = ", ".join(q(c) for c in opts["command"])  # type: ignore[attr-defined]
    path.write_text(
        "[bridge]\n"
        'providers = ["gemini"]\n'
        "[providers.gemini]\n"
        'kind = "acp"\n'
        f"command = [{command}]\n"
        f"env = {{ {env} }}\n"
        "inherit_env = false\n"
    )
    return path


def agent_pids(bridge: BridgeProcess) -> list[int]:
    """The Gemini CLI processes the bridge started (its node children running gemini.js)."""
    out = []
    for pid in child_pids(bridge.process.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(GEMINI_CLI).encode() in cmdline:
            out.append(pid)
    return out


@asynccontextmanager
async def running_bridge(tmp_path: Path, gemini_api: GeminiServer) -> AsyncIterator[BridgeProcess]:
    """``python -m ahp_bridge.cli --config <gemini> --data-dir <tmp>/data`` on an ephemeral port."""
    config = write_config(tmp_path / "bridge.toml", gemini_api, tmp_path / "home")
    args = ["--listen", "127.0.0.1:0", "--config", str(config)]
    args += ["--data-dir", str(tmp_path / "data")]
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
async def gemini_session(url: str, session: str = "") -> AsyncIterator[Session]:
    """Connect; create a session of the ``gemini`` agent (or subscribe to ``session``)."""
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "acp-e2e")
        try:
            await client.initialize([ROOT])
            session, chat = await ready_chat(client, "gemini", TURN_TIMEOUT, session)
            yield Session(client, session, chat)
        finally:
            await client.close()
            nursery.cancel_scope.cancel()


def text_of(turn: dict[str, Any]) -> str:
    return "".join(p["content"] for p in turn["responseParts"] if p["kind"] == "markdown")


def text_of_active(s: Session) -> str:
    active = s.client.states[s.chat].get("activeTurn")
    return text_of(active) if active else ""


def tool_parts(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]


async def decide(s: Session, turn_id: str, approved: bool) -> dict[str, Any]:
    """Approve or deny the turn's one pending permission; the request as the host showed it."""
    request = await s.pending_request()
    await s.answer(
        {
            "type": "chat/toolCallConfirmed",
            "turnId": turn_id,
            "toolCallId": request["toolCall"]["toolCallId"],
            "approved": approved,
            **({"confirmed": "user-action"} if approved else {"reason": "denied"}),
        }
    )
    return request


async def read(s: Session, uri: str) -> str:
    result = await s.client.request("resourceRead", {"channel": ROOT, "uri": uri})
    text: str = result["data"]
    return text


def records(home: Path, first_prompt: str) -> list[Path]:
    """Gemini CLI's records (``session-<minute>-<id8>.jsonl``) that hold ``first_prompt``."""
    chats = home / ".gemini" / "tmp" / "work" / "chats"
    return [r for r in chats.glob("session-*.jsonl") if first_prompt in r.read_text()]


def backdate_record(home: Path, first_prompt: str) -> None:
    """Give Gemini CLI's record of the session that began with ``first_prompt`` an older name.

    Its session/load first starts a fresh record named after the current minute and the session
    id, and only then reads the session: a reload within the minute the session began appends
    that fresh start to the session's own record, which wipes it (and the load then answers
    'Invalid session identifier'). Renamed while the agent is stopped, the record is found by
    this test's reloads, seconds after the start, whatever the clock says.
    """
    (record,) = records(home, first_prompt)
    chats = record.parent
    began = datetime.strptime(record.name[len("session-") :][:16], "%Y-%m-%dT%H-%M")
    earlier = (began - timedelta(hours=1)).strftime("%Y-%m-%dT%H-%M")
    record.rename(chats / f"session-{earlier}{record.name[len('session-') + 16 :]}")


def saw(exchanges: list[Exchange], text: str) -> bool:
    return any(text in json.dumps(e.contents) for e in exchanges)


async def test_gemini_cli_over_websocket_and_a_bridge_restart(
    tmp_path: Path, workdir: Path, gemini_api: GeminiServer, gate: threading.Event
) -> None:
    async with running_bridge(tmp_path, gemini_api) as bridge, gemini_session(bridge.url) as s:
        root = s.client.states[ROOT]
        (agent,) = [a for a in root["agents"] if a["provider"] == "gemini"]
        assert agent["displayName"] == "Gemini CLI"
        assert {m["id"] for m in agent["models"]} >= {"auto", "gemini-2.5-pro"}

        # A streamed answer.
        await s.start_turn("t-hello", "e2e hello")
        hello = await s.ended("t-hello")
        assert hello["state"] == "complete" and text_of(hello) == HELLO
        deltas = [a for a in s.actions(s.chat) if a["type"] == "chat/delta"]
        assert deltas, "the answer was not streamed"

        # A file edit: permission asked, written through fs/write_text_file, both sides readable.
        await s.start_turn("t-edit", "e2e edit")
        request = await decide(s, "t-edit", approved=True)
        assert "notes.txt" in json.dumps(request)
        edited = await s.ended("t-edit")
        assert edited["state"] == "complete" and text_of(edited) == "Edited it."
        assert (workdir / "notes.txt").read_text() == AFTER
        (edit,) = tool_parts(edited)
        assert edit["status"] == "completed" and edit["success"] is True
        (change,) = [c for c in edit.get("content") or [] if c.get("type") == "fileEdit"]
        assert change["after"]["uri"] == (workdir / "notes.txt").as_uri()
        assert change["diff"] == {"added": 1, "removed": 1}
        assert await read(s, change["after"]["content"]["uri"]) == AFTER
        # The before side comes from the ACP diff's oldText (the bridge keeps the agent's diffs).
        assert await read(s, change["before"]["content"]["uri"]) == BEFORE

        # A new file: Gemini CLI first reads it through fs/read_text_file, takes the bridge's
        # "does not exist" JSON-RPC error for a failure (not ENOENT), and gives up unasked.
        await s.start_turn("t-create", "e2e create")
        created = await s.ended("t-create")
        assert created["state"] == "complete" and text_of(created) == "Could not create it."
        (create,) = tool_parts(created)
        assert create["confirmed"] == "not-needed" and create["success"] is False
        assert create["error"]["message"] == (
            f"Error checking existing file: the file '{workdir / 'new.txt'}' does not exist"
        )
        assert not (workdir / "new.txt").exists()

        # A shell command approved: Gemini CLI runs it itself, in the working directory.
        await s.start_turn("t-approve", "e2e approve")
        await decide(s, "t-approve", approved=True)
        ran = await s.ended("t-approve")
        assert ran["state"] == "complete" and text_of(ran) == "Ran it."
        assert (workdir / "ran.txt").read_text() == "shell-output\n"
        (shell,) = tool_parts(ran)
        assert shell["status"] == "completed" and shell["success"] is True

        # A shell command denied: not run, and the model hears so.
        await s.start_turn("t-deny", "e2e deny")
        await decide(s, "t-deny", approved=False)
        denied = await s.ended("t-deny")
        (refused,) = tool_parts(denied)
        assert (refused["status"], refused["reason"]) == ("cancelled", "denied")
        assert denied["state"] == "complete" and text_of(denied) == "Not run."
        assert gemini_api.main_requests("e2e deny")[-1].reply_index == 1  # the model was told
        assert not (workdir / "denied.txt").exists()

        # Cancel a running turn and start the next one at once: the new turn completes.
        await s.start_turn("t-cancel", "e2e long")
        await s.client.wait_for(lambda: text_of_active(s) == "Starting", TURN_TIMEOUT)
        echo = await s.client.echo_of(
            await s.client.dispatch(
                s.chat, {"type": "chat/turnCancelled", "turnId": "t-cancel", "duration": 0}
            )
        )
        assert "rejectionReason" not in echo, echo
        await s.start_turn("t-next", "e2e again")
        after_cancel = await s.ended("t-next")
        assert after_cancel["state"] == "complete" and text_of(after_cancel) == "Back again."
        cancelled = next(t for t in s.client.states[s.chat]["turns"] if t["id"] == "t-cancel")
        assert cancelled["state"] == "cancelled"

        # The agent killed mid-turn: the turn fails; the next prompt restarts it and works.
        (pid,) = agent_pids(bridge)
        await s.start_turn("t-kill", "e2e long")
        await s.client.wait_for(lambda: text_of_active(s) == "Starting", TURN_TIMEOUT)
        os.killpg(pid, signal.SIGKILL)
        killed = await s.ended("t-kill")
        assert killed["state"] == "error", killed
        assert "SIGKILL" in json.dumps(killed["error"])
        backdate_record(tmp_path / "home", "e2e hello")
        await s.start_turn("t-again", "e2e again")
        again = await s.ended("t-again")
        assert again["state"] == "complete" and text_of(again) == "Back again."
        (new_pid,) = agent_pids(bridge)
        assert new_pid != pid
        # The reloaded session carried the conversation so far to the model.
        assert saw(gemini_api.main_requests("e2e again")[-1:], HELLO)
        await s.assert_mirrors_host()
        session, chat = s.session, s.chat
        asked = [t["message"]["text"] for t in s.client.states[chat]["turns"]]
        assert asked == [f"e2e {t}" for t in ASKED]
    assert b"changed by gemini" not in bridge.stderr and HELLO.encode() not in bridge.stderr
    assert bridge.process.returncode is not None or await bridge.terminate() == 0

    # A bridge restart on the same data dir: listed, reopened, transcript intact, and on.
    async with running_bridge(tmp_path, gemini_api) as second:
        async with trio.open_nursery() as nursery:
            client = await open_client(nursery, second.url, "after-restart")
            await client.initialize([ROOT])
            listed = await client.request("listSessions", {"channel": ROOT})
            assert [i["resource"] for i in listed["items"]] == [session]
            state = (await client.subscribe(session))["state"]
            assert state["lifecycle"] == "ready", state
            turns = (await client.subscribe(chat))["state"]["turns"]
            await client.close()
            nursery.cancel_scope.cancel()
        # Rebuilt from Gemini CLI's record, which keeps no cancelled prompt and no tool call
        # (it replays none), and a prompt whose agent was killed unanswered: ACP's replay cannot
        # tell that one from the next prompt's first chunk, so the two read as one.
        rebuilt = [(t["message"]["text"], text_of(t), t["state"]) for t in turns]
        assert rebuilt == [
            ("e2e hello", HELLO, "complete"),
            ("e2e edit", "Edited it.", "complete"),
            ("e2e create", "Could not create it.", "complete"),
            ("e2e approve", "Ran it.", "complete"),
            ("e2e deny", "Not run.", "complete"),
            ("e2e again", "Back again.", "complete"),
            ("e2e longe2e again", "Back again.", "complete"),
        ]
        async with gemini_session(second.url, session) as s2:
            await s2.start_turn("t-restarted", "e2e again")
            two = await s2.ended("t-restarted")
            assert two["state"] == "complete" and text_of(two) == "Back again."
            last = gemini_api.main_requests("e2e again")[-1]
            assert saw([last], HELLO) and saw([last], "Edited it.")
            assert "/model" not in json.dumps(last.contents)

            # The agent's record lost (killed, then its data gone): its answer to the reopen,
            # 'Invalid session identifier', is not-found, so the chat heals on a new session.
            (pid,) = agent_pids(second)
            await s2.start_turn("t-lost", "e2e long")
            await s2.client.wait_for(lambda: text_of_active(s2) == "Starting", TURN_TIMEOUT)
            os.killpg(pid, signal.SIGKILL)
            assert (await s2.ended("t-lost"))["state"] == "error"
            for record in records(tmp_path / "home", "e2e hello"):
                record.unlink()
            await s2.start_turn("t-healed", "e2e again")
            healed = await s2.ended("t-healed")
            assert healed["state"] == "complete" and text_of(healed) == "Back again."
            notices = [p for p in healed["responseParts"] if p["kind"] == "systemNotification"]
            assert [p["content"] for p in notices] == [NOTICE]
            assert not saw(gemini_api.main_requests("e2e again")[-1:], HELLO)
        assert b"conversation replaced" in second.stderr


def test_doctor_on_gemini_cli(tmp_path: Path, workdir: Path, gemini_api: GeminiServer) -> None:
    config = write_config(tmp_path / "bridge.toml", gemini_api, tmp_path / "home")
    argv = ["doctor", "--config", str(config), "--provider", "gemini"]
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
    assert f"it answers initialize: Gemini CLI {gemini_version()}, ACP 1" in result.stdout
    assert "it can reopen sessions (session/load); images in prompts: yes" in result.stdout
    assert "sign-in methods it offers: oauth-personal, gemini-api-key, vertex-ai, gateway" in (
        result.stdout
    )
    assert "a session opens; 4 models offered" in result.stdout
