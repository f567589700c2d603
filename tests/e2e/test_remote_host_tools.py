"""Host tools across gRPC: the fake served in-process over a unix socket calls the tools the
remote client was opened with, and through a bridge an AHP client runs them.

Each call crosses twice (HostToolCalls to the client, HostToolReturn back); a cancel on the
provider's side crosses as a HostToolRequest with ``cancel``; a clash crosses as HostToolClash
with its tool names (ErrorInfo.host_tools).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_fake import FakeProvider, create_provider
from ahp_bridge_remote import RemoteProvider

from ahp_bridge import agentapi
from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge
from tests.e2e.test_host_core import comparable, new_session_uri

from .test_remote_helpers import DEADLINE, Recorder, serving, socket_address

SCRIPT = Path(__file__).parent / "scripts" / "client_tools.toml"
USAGES = agentapi.HostTool(
    name="usages", description="Find usages", parameters={"type": "object", "properties": {}}
)


def _fake() -> FakeProvider:
    return create_provider({"script": str(SCRIPT), "time_scale": 0.0})


@asynccontextmanager
async def remote_fake() -> AsyncIterator[tuple[RemoteProvider, str]]:
    async with (
        serving(_fake(), socket_address()) as (address, _),
        RemoteProvider(address) as remote,
    ):
        yield remote, address


class Tools:
    """call_tool recording its calls; answers with ``answer`` (None: waits until cancelled)."""

    def __init__(self, answer: agentapi.HostToolResult | None) -> None:
        self.answer = answer
        self.calls: list[agentapi.HostToolCall] = []
        self.cancelled = trio.Event()

    async def __call__(self, call: agentapi.HostToolCall) -> agentapi.HostToolResult:
        self.calls.append(call)
        if self.answer is not None:
            return self.answer
        try:
            await trio.sleep_forever()
        finally:
            self.cancelled.set()
        raise AssertionError("unreachable")


def _tools(sink: Recorder) -> list[agentapi.Item]:
    return [
        e.item
        for e in sink.snapshot()
        if e.item is not None and e.item.kind == agentapi.ItemKind.TOOL
    ]


async def test_host_tool_calls_cross_the_wire_both_ways() -> None:
    async with remote_fake() as (remote, _):
        assert remote.capabilities().host_tools
        tools = Tools(agentapi.HostToolResult(text="main.py:1", payload=b'{"shown":1}'))
        sink = Recorder()
        request = agentapi.OpenRequest(
            session_id="task-3", events=sink, tools=[USAGES], call_tool=tools
        )
        conv = await remote.open(request)
        await conv.send(agentapi.Prompt(text="find usages"))
        end = await sink.wait_turn_end()
        assert end.turn is not None and end.turn.state == agentapi.TurnState.COMPLETED
        [call] = tools.calls
        assert (call.name, call.task_id) == ("usages", "task-3")
        assert json.loads(call.arguments) == {"symbol": "main", "lineContent": "def main():"}
        done = _tools(sink)[-1]
        assert done.id == call.call_id and done.tool is not None
        assert (done.tool.status, done.tool.output) == (agentapi.ToolStatus.COMPLETED, "main.py:1")
        assert sink.text() == "The client said: main.py:1"
        await conv.close()


async def test_a_cancelled_turn_cancels_the_call_on_the_client_side() -> None:
    async with remote_fake() as (remote, _):
        tools = Tools(None)
        sink = Recorder()
        conv = await remote.open(agentapi.OpenRequest(events=sink, tools=[USAGES], call_tool=tools))
        await conv.send(agentapi.Prompt(text="find usages"))
        with trio.fail_after(DEADLINE):
            while not tools.calls:
                await trio.sleep(0.005)
        await conv.cancel()
        with trio.fail_after(DEADLINE):
            await tools.cancelled.wait()
        end = await sink.wait_turn_end()
        assert end.turn is not None and end.turn.state == agentapi.TurnState.CANCELLED
        await conv.close()


async def test_closing_fails_a_waiting_call_and_a_clash_crosses_with_its_names() -> None:
    async with remote_fake() as (remote, _):
        tools = Tools(None)
        sink = Recorder()
        conv = await remote.open(agentapi.OpenRequest(events=sink, tools=[USAGES], call_tool=tools))
        await conv.send(agentapi.Prompt(text="find usages"))
        with trio.fail_after(DEADLINE):
            while not tools.calls:
                await trio.sleep(0.005)
        await conv.close()  # the served conversation closes; the client's call is cancelled
        with trio.fail_after(DEADLINE):
            await tools.cancelled.wait()
        shell = agentapi.HostTool(name="shell")
        with pytest.raises(agentapi.HostToolClash) as info:
            await remote.open(agentapi.OpenRequest(events=Recorder(), tools=[USAGES, shell]))
        assert info.value.tools == ("shell",)
        assert "shell" in info.value.message


async def test_a_utility_call_crosses_with_its_host_tool_calls() -> None:
    async with remote_fake() as (remote, _):
        assert isinstance(remote, agentapi.UtilityRunner)
        tools = Tools(agentapi.HostToolResult(text="util.py:2"))
        request = agentapi.UtilityRequest(
            prompt="find usages", system="count usages", tools=[USAGES], call_tool=tools
        )
        assert await remote.run_utility(request) == "The client said: util.py:2"
        [call] = tools.calls
        assert call.task_id == "" and call.name == "usages"
        with pytest.raises(agentapi.AgentAPIError, match="scripted failure"):
            await remote.run_utility(agentapi.UtilityRequest(prompt="fail please"))


# -- through a bridge --------------------------------------------------------------------------


@pytest.fixture
async def remote_address() -> AsyncIterator[str]:
    async with serving(_fake(), socket_address()) as (address, _):
        yield address


@pytest.fixture
def remote_settings(make_settings: Callable[..., Settings], remote_address: str) -> Settings:
    settings = make_settings()
    settings.bridge.providers = ["remote"]
    settings.providers = {"remote": {"address": remote_address}}
    return settings


async def test_an_ahp_client_runs_its_tool_for_a_remote_provider(
    start_bridge: StartBridge, remote_settings: Settings
) -> None:
    bridge = await start_bridge(remote_settings)
    editor = await bridge.client("editor", versions=("1.0.0", "0.9.0"))
    session = new_session_uri()
    tool = {"name": "usages", "title": "List Code Usages", "description": "Find usages"}
    await editor.request(
        "createSession",
        {
            "channel": session,
            "provider": "remote",
            "activeClient": {"clientId": "editor", "tools": [tool]},
        },
    )
    await editor.subscribe(session)
    await editor.wait_for(lambda: editor.states[session].get("lifecycle") == "ready")
    chat = editor.states[session]["defaultChat"]
    await editor.subscribe(chat)
    turn_id = str(uuid.uuid4())
    started = {
        "type": "chat/turnStarted",
        "turnId": turn_id,
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": {"text": "find usages", "origin": {"kind": "user"}},
    }
    assert "rejectionReason" not in await editor.echo_of(await editor.dispatch(chat, started))

    def execution() -> dict[str, Any] | None:
        requests = editor.states[session].get("inputNeeded") or []
        return next((r for r in requests if r["kind"] == "toolClientExecution"), None)

    request = await editor.wait_for(execution)
    assert request["toolCall"]["contributor"] == {"kind": "client", "clientId": "editor"}
    complete = {
        "type": "chat/toolCallComplete",
        "turnId": turn_id,
        "toolCallId": request["toolCall"]["toolCallId"],
        "result": {
            "success": True,
            "pastTenseMessage": "Found",
            "content": [{"type": "text", "text": "remote.py:4"}],
        },
    }
    assert "rejectionReason" not in await editor.echo_of(await editor.dispatch(chat, complete))

    def ended() -> dict[str, Any] | None:
        state = editor.states[chat]
        return None if state.get("activeTurn") else next(iter(state["turns"][-1:]), None)

    turn = await editor.wait_for(ended)
    text = "".join(p["content"] for p in turn["responseParts"] if p["kind"] == "markdown")
    assert text == "The client said: remote.py:4"
    await editor.request("ping", {"channel": "ahp-root://"})
    for channel in (session, chat):
        snapshot = (await editor.request("subscribe", {"channel": channel}))["snapshot"]
        assert comparable(editor.states[channel]) == comparable(snapshot["state"])
