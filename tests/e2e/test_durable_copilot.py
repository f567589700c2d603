"""The Copilot provider's history rebuild after a bridge crash, against the real CLI, offline.

A real `python -m ahp_bridge.cli --provider copilot` serves a session whose default chat completes
two turns (streamed text; a shell call that needs permission, approved). The bridge is then
SIGKILLed, and the Copilot CLI it started must go down with it. A new bridge on the same
`--data-dir` lists the session from its catalog, and subscribing rebuilds both turns from the
CLI's own persisted record of the conversation. A third prompt then runs on the conversation
resumed by its id: the scripted model server sees the earlier exchange in that request.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from ahp_bridge.host.durable.catalog import Catalog, SessionRecord
from ahp_bridge.protocol.models import wire_adapter
from ahp_bridge.state import status as st
from tests.e2e.test_copilot_bridge import (
    ROOT,
    BridgeProcess,
    Session,
    alive,
    copilot_session,
    write_config,
)
from tests.support.ahp_client import open_client
from tests.support.copilot_cli import offline_env, requires_cli
from tests.support.model_server import ModelServer, Text, ToolCall, message_text

pytestmark = requires_cli

FIRST = "durable-one: say hello"
SECOND = "durable-two: run echo"
THIRD = "durable-three: what did we do?"
HELLO = "Hello from the first turn, streamed in pieces."
DONE = "The command printed durable-output; done."
RECALLED = "We said hello and ran echo."
CALL_ID = "call_durable_echo"
COMMAND = "echo durable-output"
PRIVATE = (FIRST, SECOND, THIRD, HELLO, DONE, RECALLED, "durable-output")


@pytest.fixture
def models() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        srv.script("durable-one", [Text(HELLO, chunks=4)])
        srv.script(
            "durable-two",
            [ToolCall("bash", {"command": COMMAND, "description": "Echo"}, CALL_ID)],
            [Text(DONE, chunks=3)],
        )
        srv.script("durable-three", [Text(RECALLED, chunks=2)])
        yield srv


@asynccontextmanager
async def running_bridge(tmp_path: Path, models: ModelServer) -> AsyncIterator[BridgeProcess]:
    """`python -m ahp_bridge.cli --provider copilot --data-dir <tmp>/data`, started the way an
    operator would; SIGKILLed at the end (with any Copilot CLI it started) if still running."""
    home, workdir = tmp_path / "home", tmp_path / "work"
    home.mkdir(exist_ok=True)
    workdir.mkdir(exist_ok=True)
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
        async with trio.open_nursery() as nursery:
            nursery.start_soon(started.drain_stderr, process.stderr)
            await started.until_ready(nursery, 30)
            yield started
            if process.returncode is not None:
                with trio.move_on_after(5):
                    await started.stderr_closed.wait()  # all it wrote, for the log checks
            nursery.cancel_scope.cancel()
    finally:
        await started.kill()


async def wait_catalog(data_dir: Path, predicate: Callable[[list[SessionRecord]], Any]) -> Any:
    """Poll the catalog read-only (as `ahp-bridge sessions list` does) until `predicate` holds.

    The host writes it off the trio thread, so what a crash keeps is what was written by then.
    """
    with trio.fail_after(10):
        while True:
            catalog = Catalog.open(data_dir, read_only=True)
            try:
                value = predicate(catalog.sessions())
            finally:
                catalog.close()
            if value:
                return value
            await trio.sleep(0.02)


async def gone_within(pid: int, seconds: float) -> bool:
    """Whether process `pid` stopped running within `seconds`."""
    with trio.move_on_after(seconds):
        while alive(pid):
            await trio.sleep(0.05)
        return True
    return False


def parts(turn: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [p for p in turn["responseParts"] if p["kind"] == kind]


def as_rebuilt(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn without what a rebuild from the provider's record cannot reproduce: ids the host
    made up (turn and part ids), the times and token usage the client or the live stream gave,
    and what only the permission request said (the approval, the command as its message)."""
    out = {k: v for k, v in turn.items() if k not in ("id", "startedAt", "duration", "usage")}
    shown = []
    for part in turn["responseParts"]:
        part = {k: v for k, v in part.items() if k != "id"}
        if "toolCall" in part:
            call = part["toolCall"]
            part["toolCall"] = {
                k: v for k, v in call.items() if k not in ("confirmed", "invocationMessage")
            }
        shown.append(part)
    out["responseParts"] = shown
    return out


async def test_copilot_turns_are_rebuilt_after_sigkill_and_the_conversation_resumes(
    tmp_path: Path, models: ModelServer
) -> None:
    data_dir = tmp_path / "data"

    # -- first run: two completed turns, then a crash ------------------------------------------
    async with running_bridge(tmp_path, models) as first, copilot_session(first.url) as s:
        (cli_pid,) = first.copilot_cli_pids()
        try:
            await s.start_turn("turn-one", FIRST)
            one = await s.ended("turn-one")
            await s.start_turn("turn-two", SECOND)
            request = await s.pending_request()
            assert request["toolCall"]["toolCallId"] == CALL_ID
            await s.answer(
                {
                    "type": "chat/toolCallConfirmed",
                    "turnId": "turn-two",
                    "toolCallId": CALL_ID,
                    "approved": True,
                    "confirmed": "user-action",
                }
            )
            two = await s.ended("turn-two")
            assert [t["state"] for t in (one, two)] == ["complete", "complete"]
            assert s.client.states[s.session]["title"] == FIRST  # the CLI's own title
            session, chat = s.session, s.chat

            # What the crash must not lose: the session, its title, the conversation id,
            # and no turn recorded as running.
            records = await wait_catalog(
                data_dir,
                lambda rs: (
                    rs
                    if len(rs) == 1
                    and rs[0].title == FIRST
                    and all(not c.active_turn for c in rs[0].chats)
                    else None
                ),
            )
            (record,) = records
            assert (record.uri, record.provider, record.default_chat) == (
                session,
                "copilot",
                chat,
            )
            (chat_record,) = record.chats
            conversation_id = chat_record.conversation_id
            assert chat_record.uri == chat and conversation_id

            first.process.send_signal(signal.SIGKILL)
            assert await first.process.wait() == -signal.SIGKILL
            # The CLI it started (stdio child) ends with it instead of lingering.
            assert await gone_within(cli_pid, 10), "the Copilot CLI outlived a killed bridge"
        finally:
            if alive(cli_pid):
                os.kill(cli_pid, signal.SIGKILL)
    assert len(models.chat_requests()) == 3  # turn one; turn two before and after the command
    # The CLI persisted the conversation under the bridge's data dir, under the recorded id.
    state_dir = data_dir / "providers" / "copilot" / "session-state"
    assert [p.name for p in state_dir.iterdir() if not p.name.startswith(".")] == [conversation_id]

    # -- second run on the same data dir: listed, rebuilt, resumed ------------------------------
    async with running_bridge(tmp_path, models) as second, trio.open_nursery() as nursery:
        client = await open_client(nursery, second.url, "after-crash")
        try:
            await client.initialize([ROOT])
            listed = await client.request("listSessions", {"channel": ROOT})
            (summary,) = listed["items"]
            assert summary["resource"] == session
            assert (summary["provider"], summary["title"]) == ("copilot", FIRST)
            assert summary["status"] == st.IDLE

            session_state = (await client.subscribe(session))["state"]
            assert session_state["lifecycle"] == "ready", session_state
            assert session_state["title"] == FIRST
            assert session_state["defaultChat"] == chat
            (entry,) = session_state["chats"]
            assert (entry["resource"], entry["title"]) == (chat, FIRST)

            chat_state = (await client.subscribe(chat))["state"]
            assert "activeTurn" not in chat_state
            rebuilt = chat_state["turns"]
            for turn in rebuilt:
                wire_adapter("Turn").validate_python(turn)
            assert [t["state"] for t in rebuilt] == ["complete", "complete"]
            assert [t["message"] for t in rebuilt] == [
                {"text": FIRST, "origin": {"kind": "user"}},
                {"text": SECOND, "origin": {"kind": "user"}},
            ]
            r_one, r_two = rebuilt
            assert r_one["responseParts"] == [
                {"kind": "markdown", "id": r_one["responseParts"][0]["id"], "content": HELLO}
            ]
            tool_part, text_part = r_two["responseParts"]
            assert (text_part["kind"], text_part["content"]) == ("markdown", DONE)
            call = tool_part["toolCall"]
            assert (call["toolCallId"], call["toolName"]) == (CALL_ID, "bash")
            assert (call["status"], call["success"]) == ("completed", True)
            assert json.loads(call["toolInput"])["command"] == COMMAND
            (content,) = call["content"]
            assert content["type"] == "text" and content["text"].startswith("durable-output\n")
            assert call["_meta"]["ahpBridge.exitCode"] == 0
            assert len({t["id"] for t in rebuilt}) == 2 and all(t["id"] for t in rebuilt)
            # The rebuilt chat reads as the live one did, but for what the record cannot hold.
            assert [as_rebuilt(t) for t in rebuilt] == [as_rebuilt(t) for t in (one, two)]
            # Restoring reread the record; it asked the model nothing.
            assert len(models.chat_requests()) == 3

            # A new prompt runs on the conversation reopened by its id, in a new CLI.
            s2 = Session(client, session, chat)
            await s2.start_turn("turn-three", THIRD)
            three = await s2.ended("turn-three")
            assert three["state"] == "complete"
            assert [(p["kind"], p["content"]) for p in three["responseParts"]] == [
                ("markdown", RECALLED)
            ]
            assert [t["id"] for t in client.states[chat]["turns"]] == [
                r_one["id"],
                r_two["id"],
                "turn-three",
            ]
            (cli_pid_2,) = second.copilot_cli_pids()
            assert cli_pid_2 != cli_pid

            # The model saw the whole earlier exchange, in order, before the new message.
            (followup,) = models.chat_requests("durable-three")
            convo = [m for m in followup.messages if m.get("role") != "system"]
            assert [m["role"] for m in convo] == [
                "user",
                "assistant",
                "user",
                "assistant",
                "tool",
                "assistant",
                "user",
            ]
            u1, a1, u2, a2, tool, a3, u3 = convo
            assert message_text(u1).endswith(FIRST)
            assert message_text(a1) == HELLO
            assert message_text(u2).endswith(SECOND)
            (asked,) = a2["tool_calls"]
            assert (asked["id"], asked["function"]["name"]) == (CALL_ID, "bash")
            assert json.loads(asked["function"]["arguments"])["command"] == COMMAND
            assert tool["tool_call_id"] == CALL_ID
            assert message_text(tool).startswith("durable-output\n")
            assert message_text(a3) == DONE
            assert message_text(u3).endswith(THIRD)

            await s2.assert_mirrors_host()
            # Still the same conversation: no second one recorded or created.
            await wait_catalog(
                data_dir,
                lambda rs: [c.conversation_id for r in rs for c in r.chats] == [conversation_id],
            )
            assert [p.name for p in state_dir.iterdir() if not p.name.startswith(".")] == [
                conversation_id
            ]
        finally:
            await client.close()

        assert await second.terminate() == 0, bytes(second.stderr).decode()
        assert not alive(cli_pid_2), "the bridge left the Copilot CLI it started running"
        nursery.cancel_scope.cancel()

    assert b"session restored" in second.stderr
    for bridge in (first, second):
        for text in PRIVATE:
            assert text.encode() not in bridge.stderr, "prompt or output text in the logs"
