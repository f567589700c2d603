"""The fake served by a real subprocess (python -m ahp_bridge_remote.server): turns, a kill
mid-turn with reopen after restart, and the token on a TCP listener."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
from ahp_bridge_fake import CONFORMANCE_SCRIPT
from ahp_bridge_remote import RemoteAuthError, RemoteProvider
from ahp_bridge_remote.server import TOKEN_ENV

from ahp_bridge import agentapi

from .test_remote_fake import _permission_and_question_turns
from .test_remote_helpers import DEADLINE, Recorder, socket_address


@asynccontextmanager
async def server_process(
    listen: str, data_dir: Path, token: str | None = None
) -> AsyncIterator[tuple[trio.Process, str]]:
    """Start the server process; yield it and the address it printed once listening."""
    env = dict(os.environ)
    env.pop(TOKEN_ENV, None)
    if token is not None:
        env[TOKEN_ENV] = token
    argv = [
        sys.executable, "-m", "ahp_bridge_remote.server", "--provider", "fake",
        "--listen", listen,
        "--option", f"script={CONFORMANCE_SCRIPT}",
        "--option", "time_scale=0.05",
        "--option", f"data_dir={data_dir}",
    ]  # fmt: skip
    proc = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None
        line = b""
        with trio.fail_after(DEADLINE):
            while not line.endswith(b"\n"):
                chunk = await proc.stdout.receive_some(1)
                assert chunk, "the server exited before listening"
                line += chunk
        prefix = "listening on "
        text = line.decode().strip()
        assert text.startswith(prefix), text
        yield proc, text[len(prefix) :]
    finally:
        if proc.returncode is None:
            proc.kill()
        with trio.CancelScope(shield=True):
            await proc.wait()
            if proc.stdout is not None:
                await proc.stdout.aclose()


async def test_a_subprocess_fake_completes_turns_with_permission_and_question(
    tmp_path: Path,
) -> None:
    async with (
        server_process(socket_address(), tmp_path) as (_, address),
        RemoteProvider(address) as remote,
    ):
        await remote.check()
        assert remote.display_name().startswith("Fake agent")
        sink = Recorder()
        await _permission_and_question_turns(remote, sink)
        assert sink.of(agentapi.EventKind.EXIT) == []


async def test_server_killed_mid_turn_is_exit_then_reopen_after_restart(tmp_path: Path) -> None:
    listen = socket_address()
    sink = Recorder()
    async with server_process(listen, tmp_path) as (proc, address):
        remote = RemoteProvider(address, connect_timeout=DEADLINE)
        await remote.__aenter__()
        try:
            conv = await remote.open(agentapi.OpenRequest(workdir="/tmp", events=sink))
            idle_sink = Recorder()
            await remote.open(agentapi.OpenRequest(workdir="/tmp", events=idle_sink))
            await conv.send(agentapi.Prompt(text="conformance: slow"))
            await sink.wait_for(lambda e: e.kind == agentapi.EventKind.DELTA)
            proc.kill()  # SIGKILL mid-turn: no goodbye on the wire
            for recorder in (sink, idle_sink):  # every open conversation learns of it
                exits = await recorder.wait_for(lambda e: e.kind == agentapi.EventKind.EXIT)
                assert "lost the connection" in exits[0].error
            with pytest.raises(agentapi.Closed):
                await conv.send(agentapi.Prompt(text="conformance: plain"))
        except BaseException:
            await remote.__aexit__(None, None, None)
            raise
    try:
        async with server_process(listen, tmp_path):
            again = Recorder()
            reopened = await remote.open(
                agentapi.OpenRequest(conversation_id=conv.id(), workdir="/tmp", events=again)
            )
            history = await reopened.history()
            assert [i.text for i in history.items if i.kind == agentapi.ItemKind.USER] == [
                "conformance: slow"
            ]
            await reopened.send(agentapi.Prompt(text="conformance: plain"))
            end = await again.wait_turn_end()
            assert end.turn is not None and end.turn.state == agentapi.TurnState.COMPLETED
            assert "Hello from the conformance script." in again.text()
            await reopened.close()
    finally:
        await remote.__aexit__(None, None, None)
    assert len(sink.of(agentapi.EventKind.EXIT)) == 1
    assert len(idle_sink.of(agentapi.EventKind.EXIT)) == 1


async def test_sigterm_stops_the_server_cleanly_and_clients_see_exit(tmp_path: Path) -> None:
    sink = Recorder()
    async with (
        server_process(socket_address(), tmp_path) as (proc, address),
        RemoteProvider(address) as remote,
    ):
        conv = await remote.open(agentapi.OpenRequest(workdir="/tmp", events=sink))
        await conv.send(agentapi.Prompt(text="conformance: plain"))
        await sink.wait_turn_end()
        proc.send_signal(signal.SIGTERM)
        with trio.fail_after(DEADLINE):
            assert await proc.wait() == 0
        exits = await sink.wait_for(lambda e: e.kind == agentapi.EventKind.EXIT)
        assert exits[0].error == "the provider server closed the conversation"


def test_the_server_command_refuses_bad_arguments_clearly() -> None:
    base = [sys.executable, "-m", "ahp_bridge_remote.server", "--provider", "fake"]
    cases = [
        (["--listen", "0.0.0.0:0"], "without a token"),
        (["--listen", "unix:/tmp/x.sock", "--option", "novalue"], "KEY=VALUE"),
        (["--listen", "unix:/tmp/x.sock", "--option", "bogus=1"], "unknown fake provider option"),
    ]
    env = {k: v for k, v in os.environ.items() if k != TOKEN_ENV}
    for extra, message in cases:
        done = subprocess.run(base + extra, capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 2, (extra, done.stderr)
        assert message in done.stderr, (extra, done.stderr)


async def test_a_tcp_listener_checks_the_token_from_the_environment(tmp_path: Path) -> None:
    async with server_process("127.0.0.1:0", tmp_path, token="tok-123") as (_, address):
        host, _, port = address.rpartition(":")
        assert host == "127.0.0.1" and int(port) > 0
        with pytest.raises(RemoteAuthError):
            async with RemoteProvider(address, token="nope"):
                pass
        async with RemoteProvider(address, token="tok-123") as remote:
            await remote.check()
            assert [m.id for m in await remote.models()]
