"""Durable sessions through the real CLI: SIGKILL mid-turn, restart on the same data directory.

Each bridge is a real `python -m ahp_bridge.cli` process serving the fake provider, which keeps
its conversation records under `<data_dir>/providers/fake`. The test script has a quick answer
and a turn that waits a minute, so the kill always lands while that turn runs.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from ahp_bridge.engine.chats import NOTICE
from ahp_bridge.host.durable.catalog import Catalog
from ahp_bridge.protocol.models import wire_adapter
from tests.support.ahp_client import AhpClient, open_client

ROOT = "ahp-root://"
REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
display_name = "Durable test agent"

[defaults]
chunk_size = 64
delay = 0

[[prompts]]
text = "slow"
[[prompts.steps]]
kind = "text"
text = "Starting the long job."
[[prompts.steps]]
kind = "tool"
name = "shell"
title = "Long job"
input = '{"command": "sleep 60"}'
duration = 60

[[prompts]]
[[prompts.steps]]
kind = "reasoning"
text = "Thinking it over."
[[prompts.steps]]
kind = "tool"
name = "shell"
title = "List files"
input = '{"command": "ls"}'
output = "a.txt\\nb.txt\\n"
exit_code = 0
[[prompts.steps]]
kind = "text"
text = "Here is the answer."
[[prompts.steps]]
kind = "title"
title = "Durable demo"
"""


class BridgeProcess:
    def __init__(self, process: trio.Process, url: str) -> None:
        self.process = process
        self.url = url


def bridge_env(tmp_path: Path) -> dict[str, str]:
    script = tmp_path / "durable.toml"
    script.write_text(SCRIPT)
    env = dict(os.environ)
    env["AHP_BRIDGE__PROVIDERS__FAKE__SCRIPT"] = str(script)
    env["PYTHONPATH"] = os.pathsep.join(str(REPO / d) for d in ("src", "adapters", "."))
    env.pop("AHP_BRIDGE__BRIDGE__DATA_DIR", None)
    return env


def cli_command(data_dir: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "ahp_bridge.cli",
        "--provider",
        "fake",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        str(data_dir),
        "--log-level",
        "warning",
    ]


@asynccontextmanager
async def running_bridge(tmp_path: Path, data_dir: Path) -> AsyncIterator[BridgeProcess]:
    """Start the CLI, read its listening line, and SIGKILL it at the end if still alive."""
    process = await trio.lowlevel.open_process(
        cli_command(data_dir),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=bridge_env(tmp_path),
        cwd=tmp_path,
    )
    try:
        assert process.stdout is not None
        buffer = b""
        with trio.fail_after(30):
            while b"\n" not in buffer:
                chunk = await process.stdout.receive_some(4096)
                assert chunk, "the bridge exited before listening"
                buffer += chunk
        line = buffer.split(b"\n", 1)[0].decode()
        assert line.startswith("ahp-bridge listening on ws://127.0.0.1:"), line
        yield BridgeProcess(process, line.rsplit(" ", 1)[1])
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
        if process.stdout is not None:
            await process.stdout.aclose()


async def connect(nursery: trio.Nursery, bridge: BridgeProcess, name: str) -> AhpClient:
    client = await open_client(nursery, bridge.url, name)
    await client.initialize([ROOT])
    return client


async def start_turn(client: AhpClient, chat: str, text: str) -> str:
    return await client.start_turn(chat, text)


async def finished(client: AhpClient, chat: str, turn_id: str) -> dict[str, Any]:
    def find() -> dict[str, Any] | None:
        return next((t for t in client.states[chat]["turns"] if t["id"] == turn_id), None)

    return await client.wait_for(find)


async def new_session(client: AhpClient) -> tuple[str, str]:
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request("createSession", {"channel": uri, "provider": "fake"})
    await client.subscribe(uri)
    await client.wait_for(lambda: client.states[uri].get("lifecycle") == "ready")
    chat = client.states[uri]["defaultChat"]
    await client.subscribe(chat)
    return uri, chat


async def wait_catalog(data_dir: Path, predicate: Any) -> Any:
    """Poll the catalog file (read-only, as an operator would) until `predicate` holds."""
    with trio.fail_after(10):
        while True:
            catalog = Catalog.open(data_dir, read_only=True)
            try:
                value = predicate(catalog.sessions())
            finally:
                catalog.close()
            if value:
                return value
            await trio.sleep(0.01)


def parts(turn: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [p for p in turn["responseParts"] if p["kind"] == kind]


async def test_sigkill_mid_turn_then_restart_loses_no_session(
    tmp_path: Path, nursery: trio.Nursery
) -> None:
    data_dir = tmp_path / "data"
    async with running_bridge(tmp_path, data_dir) as first:
        client = await connect(nursery, first, "before")
        session, chat = await new_session(client)
        done_id = await start_turn(client, chat, "hello")
        done = await finished(client, chat, done_id)
        assert done["state"] == "complete"
        await client.wait_for(lambda: client.states[session]["title"] == "Durable demo")
        # The model is changed mid-session (between turns); the catalog records the choice.
        change = {"type": "session/configChanged", "config": {"model": "fake-deep"}}
        echo = await client.echo_of(await client.dispatch(session, change))
        assert "rejectionReason" not in echo, echo
        deep = {"model": "fake-deep", "effort": "high"}
        await client.dispatch(session, {"type": "session/configChanged", "config": deep})
        gone_session, _ = await new_session(client)
        slow_id = await start_turn(client, chat, "slow")
        await client.wait_for(
            lambda: any(
                p.get("kind") == "toolCall"
                for p in (client.states[chat].get("activeTurn") or {}).get("responseParts", [])
            )
        )
        records = await wait_catalog(
            data_dir,
            lambda rs: (
                rs
                if any(c.active_turn for r in rs for c in r.chats)
                and any(r.title == "Durable demo" for r in rs)
                and any((r.settings or {}).get("effort") == "high" for r in rs)
                else None
            ),
        )
        first.process.send_signal(signal.SIGKILL)
        await first.process.wait()
        assert first.process.returncode == -signal.SIGKILL
        await client.close()

    # The conversation of the second session disappears from the provider while it is down.
    gone = next(r for r in records if r.uri == gone_session)
    (data_dir / "providers" / "fake" / f"{gone.chats[0].conversation_id}.jsonl").unlink()

    async with running_bridge(tmp_path, data_dir) as second:
        client = await connect(nursery, second, "after")
        listed = await client.request("listSessions", {"channel": ROOT})
        by_uri = {s["resource"]: s for s in listed["items"]}
        assert set(by_uri) == {session, gone_session}
        assert by_uri[session]["title"] == "Durable demo"
        assert by_uri[session]["provider"] == "fake"

        # Subscribing to the chat directly restores its session and rebuilds the turns.
        snap = await client.subscribe(chat)
        turns = snap["state"]["turns"]
        assert [t["state"] for t in turns] == ["complete", "error"]
        for turn in turns:
            wire_adapter("Turn").validate_python(turn)
        first_turn, interrupted = turns
        assert first_turn["message"]["text"] == "hello"
        assert [p["content"] for p in parts(first_turn, "reasoning")] == ["Thinking it over."]
        assert [p["content"] for p in parts(first_turn, "markdown")] == ["Here is the answer."]
        (tool,) = parts(first_turn, "toolCall")
        assert tool["toolCall"]["status"] == "completed"
        assert tool["toolCall"]["success"] is True
        assert tool["toolCall"]["content"] == [{"type": "text", "text": "a.txt\nb.txt\n"}]
        assert interrupted["id"] == slow_id
        assert interrupted["message"]["text"] == "slow"
        assert interrupted["error"]["errorType"] == "interrupted"
        assert [p["content"] for p in parts(interrupted, "markdown")] == ["Starting the long job."]
        (cut,) = parts(interrupted, "toolCall")
        assert cut["toolCall"]["status"] == "cancelled"
        assert "activeTurn" not in snap["state"]

        session_state = (await client.subscribe(session))["state"]
        assert session_state["lifecycle"] == "ready"
        values = session_state["config"]["values"]  # the settings survived the SIGKILL
        assert (values["model"], values["effort"]) == ("fake-deep", "high")
        assert session_state["defaultChat"] == chat
        assert session_state["title"] == "Durable demo"
        (entry,) = session_state["chats"]
        assert (entry["resource"], entry["title"]) == (chat, "Durable demo")

        # A new prompt works on the reopened conversation.
        again = await start_turn(client, chat, "and again")
        turn = await finished(client, chat, again)
        assert turn["state"] == "complete"
        assert [p["content"] for p in parts(turn, "markdown")] == ["Here is the answer."]
        assert client.states[chat]["turns"][-1]["id"] == again
        ends = [a for a in client.actions(chat) if a["type"] == "chat/turnComplete"]
        assert ends[-1]["_meta"]["ahpBridge.model"] == "fake-deep"

        # The session whose conversation the provider lost gets a new one (host/healing.py),
        # says so in its chat, records it, and runs turns again.
        lost = gone.chats[0].conversation_id
        gone_state = (await client.subscribe(gone_session))["state"]
        assert gone_state["lifecycle"] == "ready"
        gone_chat = gone_state["defaultChat"]
        (notice_turn,) = (await client.subscribe(gone_chat))["state"]["turns"]
        assert notice_turn["message"]["origin"] == {"kind": "systemNotification"}
        (notice,) = parts(notice_turn, "systemNotification")
        assert notice["content"] == NOTICE
        assert notice["_meta"]["ahpBridge.conversationReplaced"]["lost"] == lost
        new_id = notice["_meta"]["ahpBridge.conversationReplaced"]["conversation"]
        assert new_id and new_id != lost
        await wait_catalog(
            data_dir,
            lambda rs: any(
                r.uri == gone_session and r.chats[0].conversation_id == new_id for r in rs
            ),
        )
        healed = await finished(client, gone_chat, await start_turn(client, gone_chat, "hi"))
        assert healed["state"] == "complete"
        listed = await client.request("listSessions", {"channel": ROOT})
        assert {s["resource"] for s in listed["items"]} == {session, gone_session}

        # The catalog no longer says a turn is running (it ended as interrupted).
        await wait_catalog(
            data_dir, lambda rs: all(not c.active_turn for r in rs for c in r.chats) or None
        )
        await client.close()
        second.process.send_signal(signal.SIGTERM)
        with trio.fail_after(20):
            await second.process.wait()
        assert second.process.returncode == 0


# -- startup errors ----------------------------------------------------------------------------


def run_cli(tmp_path: Path, data_dir: Path) -> subprocess.CompletedProcess[str]:
    """Run the bridge CLI to completion (it must refuse to start)."""
    return subprocess.run(
        cli_command(data_dir),
        capture_output=True,
        text=True,
        env=bridge_env(tmp_path),
        cwd=tmp_path,
        timeout=60,
    )


def test_a_corrupt_catalog_stops_the_bridge_and_is_left_alone(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    db = data_dir / "catalog.sqlite3"
    garbage = b"this is not an sqlite database, but it is somebody's data\n" * 200
    db.write_bytes(garbage)
    result = run_cli(tmp_path, data_dir)
    assert result.returncode == 1
    assert "listening" not in result.stdout
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ahp-bridge: the session catalog ")
    assert "is corrupt" in last
    assert db.read_bytes() == garbage


def test_a_catalog_from_a_newer_schema_stops_the_bridge(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    Catalog.open(data_dir).close()
    with sqlite3.connect(data_dir / "catalog.sqlite3") as conn:
        conn.execute("UPDATE schema_version SET version = 99")
    with sqlite3.connect(data_dir / "catalog.sqlite3") as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    before = (data_dir / "catalog.sqlite3").read_bytes()
    result = run_cli(tmp_path, data_dir)
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("ahp-bridge: the session catalog ")
    assert "schema version 99" in last and "newer ahp-bridge" in last
    assert (data_dir / "catalog.sqlite3").read_bytes() == before


async def test_a_second_bridge_on_the_same_data_dir_refuses_to_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    async with running_bridge(tmp_path, data_dir) as first:
        result = await trio.to_thread.run_sync(run_cli, tmp_path, data_dir)
        assert result.returncode == 1
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("ahp-bridge: the session catalog ")
        assert f"in use by another ahp-bridge (pid {first.process.pid})" in last
        assert first.process.returncode is None  # the first one keeps serving


@pytest.mark.parametrize("command", [["list"], ["forget", "ahp-session:/nope"]])
def test_sessions_commands_on_an_empty_data_dir(tmp_path: Path, command: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ahp_bridge.cli", "sessions", "--data-dir", str(tmp_path), *command],
        capture_output=True,
        text=True,
        env=bridge_env(tmp_path),
        timeout=60,
    )
    if command[0] == "list":
        assert result.returncode == 0, result.stderr
        assert result.stdout == "no sessions\n"
    else:
        assert result.returncode == 1
        assert result.stderr.strip().endswith(
            f"no session ahp-session:/nope in the catalog {tmp_path / 'catalog.sqlite3'}"
        )
