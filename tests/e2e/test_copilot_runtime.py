"""The provider's own runtime handling: starting and stopping the CLI it spawns (stdio), and the
faults the real CLI cannot produce on demand, through a small fake runtime
(tests/fixtures/copilot/fault_cli.py): the process dying mid-turn, a protocol version mismatch
and malformed events.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_copilot import create_provider

from ahp_bridge.agentapi import (
    AgentAPIError,
    CLIIncompatible,
    Closed,
    EventKind,
    ItemKind,
    OpenRequest,
    Prompt,
    SubmissionUncertain,
    TurnState,
)
from tests.support.copilot_cli import (
    CLI_PATH,
    RecordingSink,
    cli_server,
    offline_env,
    requires_cli,
)
from tests.support.model_server import Hold, ModelServer, Text

FAULT_CLI = Path(__file__).resolve().parents[1] / "fixtures" / "copilot" / "fault_cli.py"


def fault_options(mode: str, home: Path) -> dict[str, Any]:
    return {"cli_path": str(FAULT_CLI), "env": {"AHP_FAULT_MODE": mode}, "workdir": str(home)}


async def test_protocol_mismatch_is_reported_plainly(tmp_path: Path) -> None:
    async with create_provider(fault_options("protocol", tmp_path)) as provider:
        with pytest.raises(CLIIncompatible, match="protocol version mismatch"):
            await provider.check()
        with pytest.raises(CLIIncompatible):
            await provider.open(OpenRequest(workdir=str(tmp_path), events=RecordingSink()))


@pytest.mark.parametrize("reader", ["as is", "held back"])
async def test_runtime_dying_mid_turn_emits_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reader: str
) -> None:
    """The CLI answers the send, starts the turn and exits at once. The provider may see the
    exit before the SDK's reader has dispatched the answer (under load it did, and the send
    came back uncertain): "held back" delays the reader 0.3 s a message, so that it always
    does, and keeps the SDK's loop busy as each answer reaches it, so that the provider's
    reaction is queued before the task the answer wakes. Either way the send returns, and the
    turn fails with the exit."""
    if reader == "held back":
        import copilot._jsonrpc as jsonrpc

        handle = jsonrpc.JsonRpcClient._handle_message

        def slow(self: Any, message: dict[str, Any]) -> None:
            time.sleep(0.3)
            if "result" in message and self._loop is not None:
                # The SDK's loop is busy when the answer reaches it, so the provider's reaction
                # to the exit is queued there too, before the task the answer wakes.
                self._loop.call_soon_threadsafe(time.sleep, 0.3)
            handle(self, message)

        monkeypatch.setattr(jsonrpc.JsonRpcClient, "_handle_message", slow)
    async with create_provider(fault_options("die", tmp_path)) as provider:
        sink = RecordingSink()
        conv = await provider.open(OpenRequest(workdir=str(tmp_path), events=sink))
        await conv.send(Prompt(text="hello"))
        exit_event = await sink.wait_for(lambda e: e.kind is EventKind.EXIT)
        assert "exited unexpectedly (exit code 3)" in exit_event.error
        states = [t.state for t in sink.turns()]
        assert states == [TurnState.WORKING, TurnState.FAILED]
        assert sink.snapshot()[-1].kind is EventKind.EXIT  # nothing after the exit
        with pytest.raises(Closed, match="exited"):
            await conv.send(Prompt(text="again"))
        # The next open starts a fresh runtime.
        sink2 = RecordingSink()
        conv2 = await provider.open(OpenRequest(workdir=str(tmp_path), events=sink2))
        assert conv2.id() and conv2.id() != conv.id()
        await conv2.close()


async def test_malformed_event_is_dropped_and_the_turn_goes_on(tmp_path: Path) -> None:
    async with create_provider(fault_options("malformed", tmp_path)) as provider:
        sink = RecordingSink()
        conv = await provider.open(OpenRequest(workdir=str(tmp_path), events=sink))
        await conv.send(Prompt(text="hello"))
        assert (await sink.turn_end()).state is TurnState.COMPLETED
        (answer,) = sink.items(ItemKind.ASSISTANT)
        assert answer.text == "fine"
        assert sink.deltas(answer) == "fine"  # the malformed delta (42) never arrived
        await conv.close()


async def test_missing_cli_is_reported_with_a_fix(tmp_path: Path) -> None:
    async with create_provider({"cli_path": str(tmp_path / "nope")}) as provider:
        with pytest.raises(Exception, match=r"install-copilot-cli\.sh"):
            await provider.check()


@requires_cli
async def test_spawned_cli_lifecycle(tmp_path: Path) -> None:
    """Stdio mode: the provider starts the real CLI on first use and stops it on shutdown."""
    with ModelServer() as models:
        models.script("stdio hello", [Text("stdio answer")])
        env = offline_env(tmp_path)
        opts = {
            "cli_path": str(CLI_PATH),
            "env": {"HOME": env["HOME"]},
            "data_dir": env["COPILOT_HOME"],
            "workdir": str(tmp_path),
            "byok": {"base_url": models.base_url, "model": "fake-model"},
        }
        async with create_provider(opts) as provider:
            await provider.check()
            process = provider._process
            assert process is not None and process.poll() is None
            sink = RecordingSink()
            conv = await provider.open(OpenRequest(workdir=str(tmp_path), events=sink))
            await conv.send(Prompt(text="stdio hello"))
            assert (await sink.turn_end()).state is TurnState.COMPLETED
            assert [i.text for i in sink.items(ItemKind.ASSISTANT)] == ["stdio answer"]
            conv_id = conv.id()
        # Leaving the provider detached the conversation and stopped the CLI it started.
        assert process.poll() is not None
        with pytest.raises(Closed):
            await conv.send(Prompt(text="after shutdown"))
        # State went to data_dir, and the conversation was kept, not deleted.
        assert (Path(env["COPILOT_HOME"]) / "session-state" / conv_id).is_dir()


@requires_cli
async def test_lost_connection_to_a_running_cli_emits_exit(tmp_path: Path) -> None:
    """cli_url mode: the CLI server the provider connected to goes away mid-turn."""
    hold = Hold(threading.Event())
    with ModelServer() as models:
        models.script("lost hello", [Text("partial"), hold])
        with cli_server(tmp_path) as cli:
            async with create_provider(cli.options(models.base_url)) as provider:
                sink = RecordingSink()
                conv = await provider.open(OpenRequest(workdir=str(tmp_path), events=sink))
                await conv.send(Prompt(text="lost hello"))
                await trio.to_thread.run_sync(hold.started.wait, 30)
                cli.stop()
                exit_event = await sink.wait_for(lambda e: e.kind is EventKind.EXIT)
                hold.gate.set()
                assert "connection to the Copilot CLI" in exit_event.error
                assert [t.state for t in sink.turns()] == [TurnState.WORKING, TurnState.FAILED]
                with pytest.raises(Closed):
                    await conv.send(Prompt(text="again"))


async def test_send_outcome_unknown_when_the_runtime_dies_before_answering(tmp_path: Path) -> None:
    async with create_provider(fault_options("die_on_send", tmp_path)) as provider:
        sink = RecordingSink()
        conv = await provider.open(OpenRequest(workdir=str(tmp_path), events=sink))
        with pytest.raises(SubmissionUncertain, match=r"exited|lost"):
            await conv.send(Prompt(text="hello"))
        await sink.wait_for(lambda e: e.kind is EventKind.EXIT)
        assert all(t.state is not TurnState.WORKING for t in sink.turns())


async def test_a_send_the_runtime_died_on_returns_even_when_its_output_outlives_it(
    tmp_path: Path,
) -> None:
    """The CLI exits while its output stays open a while longer (a child holds it): the
    provider sees the exit first and stops the client, and the SDK then drops the request it
    was waiting on without failing it. The send must still come back, uncertain, at once."""
    async with create_provider(fault_options("die_on_send_output_open", tmp_path)) as provider:
        sink = RecordingSink()
        conv = await provider.open(OpenRequest(workdir=str(tmp_path), events=sink))
        with trio.fail_after(3), pytest.raises(SubmissionUncertain, match="exited"):
            await conv.send(Prompt(text="hello"))
        await sink.wait_for(lambda e: e.kind is EventKind.EXIT)
        assert sink.snapshot()[-1].kind is EventKind.EXIT  # nothing after the exit


async def test_send_refused_by_the_runtime_is_a_plain_error(tmp_path: Path) -> None:
    async with create_provider(fault_options("reject_send", tmp_path)) as provider:
        sink = RecordingSink()
        conv = await provider.open(OpenRequest(workdir=str(tmp_path), events=sink))
        with pytest.raises(AgentAPIError, match="could not send the prompt: nope") as info:
            await conv.send(Prompt(text="hello"))
        assert not isinstance(info.value, SubmissionUncertain)
        assert sink.turns() == []  # no turn started
        await conv.close()
