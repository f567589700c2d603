"""`ahp-bridge --provider copilot` end to end: the real CLI command, the real Copilot CLI, offline.

Each test starts the bridge as a subprocess with a `[providers.copilot]` section that makes the
provider spawn the Copilot CLI itself (HOME in a temp dir, no GitHub account) with a
bring-your-own-model provider pointing at the scripted model server on 127.0.0.1. An AHP client
creates a session, starts a turn whose model asks for a shell command that needs permission,
answers the permission over AHP, and checks: the exact actions on the chat channel, what the model
was sent back, that its locally reduced state equals the host's snapshot, and that SIGTERM stops
the bridge (exit 0) together with the CLI it started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from ahp_bridge.state import status as st
from tests.e2e.test_host_core import comparable
from tests.support.ahp_client import AhpClient, open_client, ready_chat
from tests.support.copilot_cli import CLI_PATH, offline_env, requires_cli
from tests.support.model_server import ModelServer, Reasoning, RecordedRequest, Text, ToolCall

pytestmark = requires_cli

ROOT = "ahp-root://"
READY = b"ahp-bridge listening on "
STARTED_AT = "2026-01-01T00:00:00.000Z"
TURN_TIMEOUT = 60  # the first turn includes the CLI's own start-up


@pytest.fixture(scope="module")
def models() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv


def write_config(path: Path, *, home: Path, workdir: Path, model_url: str) -> Path:
    """The offline `[providers.copilot]` options: spawn the CLI with an isolated HOME and a
    bring-your-own-model provider (no GitHub sign-in)."""
    q = json.dumps  # a JSON string literal is a valid TOML basic string
    path.write_text(
        "[log]\n"
        'level = "info"\n'
        "[providers.copilot]\n"
        f"cli_path = {q(str(CLI_PATH))}\n"
        f"workdir = {q(str(workdir))}\n"
        f"env = {{ HOME = {q(str(home))} }}\n"
        "[providers.copilot.byok]\n"
        f"base_url = {q(model_url)}\n"
        'model = "fake-model"\n'
    )
    return path


def child_pids(pid: int) -> list[int]:
    """Direct children of `pid`, from /proc."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # exited while we looked
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting to be reaped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@dataclass
class BridgeProcess:
    """The running `ahp-bridge` subprocess, its URL and everything it wrote to stderr."""

    process: trio.Process
    url: str = ""
    stderr: bytearray = field(default_factory=bytearray)
    stderr_closed: trio.Event = field(default_factory=trio.Event)

    def copilot_cli_pids(self) -> list[int]:
        """The Copilot CLI processes the bridge started (its children running CLI_PATH)."""
        pids = []
        for pid in child_pids(self.process.pid):
            try:
                exe = Path(f"/proc/{pid}/exe").resolve()
            except OSError:
                continue
            if exe == CLI_PATH.resolve():
                pids.append(pid)
        return pids

    async def drain_stderr(self, stream: trio.abc.ReceiveStream) -> None:
        try:
            while chunk := await stream.receive_some(65536):
                self.stderr += chunk
        finally:
            self.stderr_closed.set()

    async def terminate(self) -> int:
        """SIGTERM; the exit code once the process ended and its stderr is read to the end."""
        self.process.send_signal(signal.SIGTERM)
        with trio.fail_after(30):
            code = await self.process.wait()
            await self.stderr_closed.wait()
        return code

    async def until_ready(self, nursery: trio.Nursery, timeout: float) -> None:
        """Read the ready line (its URL is `url`), then discard the rest of stdout."""
        stdout = self.process.stdout
        assert stdout is not None
        with trio.fail_after(timeout):
            line = await _read_line(stdout)
        assert line.startswith(READY + b"ws://127.0.0.1:"), (line, bytes(self.stderr))
        self.url = line.decode().strip().removeprefix(READY.decode())
        nursery.start_soon(_discard, stdout)

    async def kill(self) -> None:
        """SIGKILL the bridge, if it still runs, and every Copilot CLI it had started."""
        if self.process.returncode is not None:
            return
        leftovers = self.copilot_cli_pids()
        self.process.kill()
        with trio.CancelScope(shield=True):
            await self.process.wait()
        for pid in leftovers:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def _discard(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some(65536):
        pass


@pytest.fixture
async def bridge(
    nursery: trio.Nursery, tmp_path: Path, models: ModelServer
) -> AsyncIterator[BridgeProcess]:
    """`python -m ahp_bridge.cli --provider copilot` on an ephemeral port, started the way an
    operator would; killed (with any CLI it started) if a test leaves it running."""
    home = tmp_path / "home"
    workdir = tmp_path / "work"
    home.mkdir()
    workdir.mkdir()
    config = write_config(
        tmp_path / "bridge.toml", home=home, workdir=workdir, model_url=models.base_url
    )
    args = ["--provider", "copilot", "--listen", "127.0.0.1:0", "--config", str(config)]
    args += ["--data-dir", str(tmp_path / "data")]
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "ahp_bridge.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=offline_env(home),
        cwd=workdir,
    )
    assert process.stdout is not None and process.stderr is not None
    started = BridgeProcess(process)
    try:
        nursery.start_soon(started.drain_stderr, process.stderr)
        await started.until_ready(nursery, 30)
        yield started
    finally:
        await started.kill()


async def _read_line(stream: trio.abc.ReceiveStream) -> bytes:
    line = b""
    while not line.endswith(b"\n"):
        chunk = await stream.receive_some(1)
        if not chunk:
            break
        line += chunk
    return line


@dataclass
class Session:
    """One AHP client with a ready copilot session and its default chat subscribed."""

    client: AhpClient
    session: str
    chat: str

    def actions(self, channel: str) -> list[dict[str, Any]]:
        return self.client.actions(channel)

    def mark(self) -> tuple[int, int]:
        """Where the chat's and the session's action lists end now."""
        return len(self.actions(self.chat)), len(self.actions(self.session))

    async def start_turn(self, turn_id: str, text: str) -> None:
        action = {
            "type": "chat/turnStarted",
            "turnId": turn_id,
            "startedAt": STARTED_AT,
            "message": {"text": text, "origin": {"kind": "user"}},
        }
        echo = await self.client.echo_of(await self.client.dispatch(self.chat, action))
        assert "rejectionReason" not in echo, echo

    async def pending_request(self) -> dict[str, Any]:
        """The session's one open input request, once the host announced it."""
        queue = await self.client.wait_for(
            lambda: self.client.states[self.session].get("inputNeeded"), TURN_TIMEOUT
        )
        assert len(queue) == 1, queue
        request: dict[str, Any] = queue[0]
        return request

    async def answer(self, action: dict[str, Any]) -> None:
        echo = await self.client.echo_of(await self.client.dispatch(self.chat, action))
        assert "rejectionReason" not in echo, echo

    async def ended(self, turn_id: str) -> dict[str, Any]:
        """The finished turn `turn_id`, once the chat has no active turn."""

        def done() -> dict[str, Any] | None:
            state = self.client.states[self.chat]
            if state.get("activeTurn"):
                return None
            return next((t for t in state["turns"] if t["id"] == turn_id), None)

        turn: dict[str, Any] = await self.client.wait_for(done, TURN_TIMEOUT)
        # The host answers in order: whatever it sent with the turn's end is reduced by now.
        assert await self.client.request("ping", {"channel": ROOT}) is None
        return turn

    async def assert_mirrors_host(self) -> None:
        """The locally reduced session and chat equal fresh host snapshots (modulo modifiedAt)."""
        for channel in (self.session, self.chat):
            snap = await self.client.request("subscribe", {"channel": channel})
            host = snap["snapshot"]["state"]
            assert comparable(self.client.states[channel]) == comparable(host), channel


@asynccontextmanager
async def copilot_session(url: str) -> AsyncIterator[Session]:
    """Connect, initialize, create a copilot session and wait until it is ready."""
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "copilot-e2e")
        try:
            await client.initialize([ROOT])
            session, chat = await ready_chat(client, "copilot", TURN_TIMEOUT)
            yield Session(client, session, chat)
        finally:
            await client.close()
            nursery.cancel_scope.cancel()


def types(actions: list[dict[str, Any]]) -> list[str]:
    """Action types, each run of streamed deltas once: the bridge may merge a burst of the
    CLI's deltas into one action, so their number depends on timing (the text is checked)."""
    out: list[str] = []
    for action in actions:
        kind = action["type"]
        if not (out and kind == out[-1] and kind in ("chat/delta", "chat/reasoning")):
            out.append(kind)
    return out


def tool_messages(request: RecordedRequest) -> list[dict[str, Any]]:
    return [m for m in request.messages if m.get("role") == "tool"]


def permission_prefix(actions: list[dict[str, Any]], turn_id: str, call_id: str) -> None:
    """The chat actions up to the request for permission, shared by both outcomes.

    The Copilot CLI reports the shell call as started before it asks for permission, so the
    translator first marks it running (`confirmed: "not-needed"`) and then, as the spec allows
    for a running call, back to pending-confirmation with the provider's options.
    """
    started, usage, start, running, ready = actions[:5]
    assert started["turnId"] == turn_id
    assert usage["type"] == "chat/usage"
    assert (usage["usage"]["inputTokens"], usage["usage"]["outputTokens"]) == (11, 7)
    assert usage["usage"]["model"] == "fake-model"
    assert start == {
        "type": "chat/toolCallStart",
        "turnId": turn_id,
        "toolCallId": call_id,
        "toolName": "bash",
        "displayName": "Running command",
    }
    assert running["toolCallId"] == call_id and running["confirmed"] == "not-needed"
    assert ready["toolCallId"] == call_id
    assert "confirmed" not in ready
    assert ready["confirmationTitle"] == "Run a shell command"
    assert [(o["id"], o["kind"]) for o in ready["options"]] == [
        ("approve-once", "approve"),
        ("reject", "deny"),
    ]
    for action in (usage, start, running, ready):
        assert action["turnId"] == turn_id


SESSION_TYPES = [
    "session/chatUpdated",  # in progress
    "session/titleChanged",  # the first message becomes the title
    "session/chatUpdated",  # ... of the chat too
    "session/chatUpdated",  # input needed
    "session/inputNeededSet",
    "session/chatUpdated",  # in progress again once answered
    "session/inputNeededRemoved",
    "session/chatUpdated",  # idle
]


def session_flow(actions: list[dict[str, Any]]) -> list[str]:
    """Session actions of a turn, without the context-window `_meta` updates (their number is
    the CLI's business)."""
    return [a["type"] for a in actions if a["type"] != "session/metaChanged"]


async def test_permission_approved_then_streamed_answer(
    bridge: BridgeProcess, models: ModelServer, tmp_path: Path
) -> None:
    call_id = "call_bridge_approve"
    thought = "The echo worked; report its output."
    answer = "The command printed approved-output, all done."
    models.script(
        "e2e-approve",
        [ToolCall("bash", {"command": "echo approved-output", "description": "Echo"}, call_id)],
        [Reasoning(thought, chunks=3), Text(answer, chunks=4)],
    )
    async with copilot_session(bridge.url) as s:
        (cli_pid,) = bridge.copilot_cli_pids()  # the provider spawned exactly one CLI
        chat_mark, session_mark = s.mark()

        await s.start_turn("turn-approve", "e2e-approve: run echo")
        request = await s.pending_request()
        assert request["kind"] == "toolConfirmation"
        assert request["turnId"] == "turn-approve"
        assert request["toolCall"]["toolCallId"] == call_id
        assert request["toolCall"]["status"] == "pending-confirmation"
        assert request["toolCall"]["invocationMessage"] == "echo approved-output"
        assert s.client.states[s.chat]["status"] == st.INPUT_NEEDED
        assert len(models.chat_requests("e2e-approve")) == 1  # nothing ran before the answer

        approve = {
            "type": "chat/toolCallConfirmed",
            "turnId": "turn-approve",
            "toolCallId": call_id,
            "approved": True,
            "confirmed": "user-action",
        }
        await s.answer(approve)
        turn = await s.ended("turn-approve")

        chat = s.actions(s.chat)[chat_mark:]
        assert types(chat) == [
            "chat/turnStarted",
            "chat/usage",
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/toolCallReady",
            "chat/toolCallConfirmed",
            "chat/toolCallComplete",
            "chat/responsePart",  # reasoning
            "chat/reasoning",
            "chat/responsePart",  # the answer
            "chat/delta",
            "chat/usage",
            "chat/turnComplete",
        ]
        assert chat[0]["message"] == {"text": "e2e-approve: run echo", "origin": {"kind": "user"}}
        permission_prefix(chat, "turn-approve", call_id)
        assert chat[5] == approve
        complete, usage, end = chat[6], chat[-2], chat[-1]
        assert complete["toolCallId"] == call_id
        assert complete["result"]["success"] is True
        (content,) = complete["result"]["content"]
        assert content["type"] == "text" and content["text"].startswith("approved-output\n")
        assert complete["_meta"]["ahpBridge.exitCode"] == 0
        # The reasoning streams into a reasoning part and the answer into a markdown part: the
        # answer's text holds none of the reasoning, and each streamed action names its own part.
        streamed = chat[7:-2]
        thinking, part = [a["part"] for a in streamed if a["type"] == "chat/responsePart"]
        assert (thinking["kind"], part["kind"]) == ("reasoning", "markdown")
        reasoning = [a for a in streamed if a["type"] == "chat/reasoning"]
        deltas = [a for a in streamed if a["type"] == "chat/delta"]
        assert {a["partId"] for a in reasoning} == {thinking["id"]}
        assert {d["partId"] for d in deltas} == {part["id"]}
        assert thinking["content"] + "".join(a["content"] for a in reasoning) == thought
        assert part["content"] + "".join(d["content"] for d in deltas) == answer
        # the turn's token counts, summed over its two model calls
        assert (usage["usage"]["inputTokens"], usage["usage"]["outputTokens"]) == (22, 14)
        assert end["turnId"] == "turn-approve"
        assert all(a["turnId"] == "turn-approve" for a in chat)

        session = s.actions(s.session)[session_mark:]
        assert session_flow(session) == SESSION_TYPES
        assert statuses(session) == [st.IN_PROGRESS, st.INPUT_NEEDED, st.IN_PROGRESS, st.IDLE]
        assert session[session_flow_index(session, "session/inputNeededSet")]["request"] == request
        removed = session[session_flow_index(session, "session/inputNeededRemoved")]
        assert removed["id"] == request["id"]
        title = session[session_flow_index(session, "session/titleChanged")]
        assert title["title"] == "e2e-approve: run echo"

        assert turn["state"] == "complete"
        tool_part, thinking_part, text_part = turn["responseParts"]
        assert tool_part["toolCall"]["status"] == "completed"
        assert tool_part["toolCall"]["confirmed"] == "user-action"
        assert (thinking_part["kind"], thinking_part["content"]) == ("reasoning", thought)
        assert (text_part["kind"], text_part["content"]) == ("markdown", answer)
        markdown = [p["content"] for p in turn["responseParts"] if p["kind"] == "markdown"]
        assert not any(thought in text for text in markdown), "reasoning shown as answer text"

        # The model was asked twice: the prompt, then again with the command's real output.
        first, second = models.chat_requests("e2e-approve")
        assert first.last_user_text.endswith("e2e-approve: run echo")
        assert "bash" in first.tool_names
        assert not tool_messages(first)
        (result,) = tool_messages(second)
        assert result["tool_call_id"] == call_id
        assert result["content"].startswith("approved-output\n")

        await s.assert_mirrors_host()

    await assert_clean_shutdown(bridge, cli_pid)
    for secret in (b"e2e-approve", b"approved-output", answer.encode(), thought.encode()):
        assert secret not in bridge.stderr, "prompt or output text in the bridge's logs"
    # The provider kept the conversation under the bridge's --data-dir (its default data_dir).
    state = tmp_path / "data" / "providers" / "copilot" / "session-state"
    kept = [p for p in state.iterdir() if not p.name.startswith(".")]
    assert len(kept) == 1 and kept[0].is_dir()


async def test_permission_denied(
    bridge: BridgeProcess, models: ModelServer, tmp_path: Path
) -> None:
    call_id = "call_bridge_deny"
    marker = tmp_path / "work" / "must-not-exist"
    models.script(
        "e2e-deny",
        [ToolCall("bash", {"command": f"touch {marker}", "description": "Touch"}, call_id)],
        [Text("never asked for: the CLI ends the turn on a rejection")],
    )
    models.script("e2e-after-deny", [Text("Understood.", chunks=2)])
    async with copilot_session(bridge.url) as s:
        (cli_pid,) = bridge.copilot_cli_pids()
        chat_mark, session_mark = s.mark()

        await s.start_turn("turn-deny", "e2e-deny: touch a file")
        request = await s.pending_request()
        assert request["toolCall"]["toolCallId"] == call_id
        assert request["toolCall"]["invocationMessage"] == f"touch {marker}"
        deny = {
            "type": "chat/toolCallConfirmed",
            "turnId": "turn-deny",
            "toolCallId": call_id,
            "approved": False,
            "reason": "denied",
        }
        await s.answer(deny)
        turn = await s.ended("turn-deny")

        chat = s.actions(s.chat)[chat_mark:]
        assert types(chat) == [
            "chat/turnStarted",
            "chat/usage",
            "chat/toolCallStart",
            "chat/toolCallReady",
            "chat/toolCallReady",
            "chat/toolCallConfirmed",
            "chat/turnComplete",  # no toolCallComplete: the denied call is already cancelled
        ]
        permission_prefix(chat, "turn-deny", call_id)
        assert chat[5] == deny
        session = s.actions(s.session)[session_mark:]
        assert session_flow(session) == SESSION_TYPES
        assert statuses(session) == [st.IN_PROGRESS, st.INPUT_NEEDED, st.IN_PROGRESS, st.IDLE]

        assert turn["state"] == "complete"
        (tool_part,) = turn["responseParts"]
        assert tool_part["toolCall"]["toolCallId"] == call_id
        assert tool_part["toolCall"]["status"] == "cancelled"
        assert tool_part["toolCall"]["reason"] == "denied"
        assert not marker.exists()
        # After a rejection the CLI hands the turn back to the user without another model call;
        # the denial reaches the model as the tool's result with the next message.
        assert len(models.chat_requests("e2e-deny")) == 1

        await s.start_turn("turn-after", "e2e-after-deny: what now?")
        after = await s.ended("turn-after")
        assert after["state"] == "complete"
        assert [(p["kind"], p["content"]) for p in after["responseParts"]] == [
            ("markdown", "Understood.")
        ]
        (followup,) = models.chat_requests("e2e-after-deny")
        (denial,) = tool_messages(followup)
        assert denial["tool_call_id"] == call_id
        assert "rejected" in denial["content"].lower()
        calls = [c for m in followup.messages for c in m.get("tool_calls") or []]
        assert [c["id"] for c in calls] == [call_id]

        await s.assert_mirrors_host()

    await assert_clean_shutdown(bridge, cli_pid)
    assert not marker.exists()


def statuses(session_actions: list[dict[str, Any]]) -> list[int]:
    """The chat statuses the session's catalog went through."""
    return [
        a["changes"]["status"]
        for a in session_actions
        if a["type"] == "session/chatUpdated" and "status" in a["changes"]
    ]


def session_flow_index(session_actions: list[dict[str, Any]], action_type: str) -> int:
    (index,) = [i for i, a in enumerate(session_actions) if a["type"] == action_type]
    return index


async def assert_clean_shutdown(bridge: BridgeProcess, cli_pid: int) -> None:
    """SIGTERM ends the bridge with exit code 0, and the Copilot CLI it started with it."""
    assert await bridge.terminate() == 0, bytes(bridge.stderr).decode()
    assert b"shutting down" in bridge.stderr
    assert not alive(cli_pid), "the bridge left the Copilot CLI it started running"
