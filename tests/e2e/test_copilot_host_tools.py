"""Host tools through the real Copilot CLI, offline: the SDK's custom tools run the host's
call_tool, and through the bridge an AHP client runs the tool the scripted model asks for.

One CLI (server mode) and one scripted model server serve the module; each test scripts the
model with its own trigger. The model's requests are the ground truth of what the model saw.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_copilot import CopilotProvider, create_provider

from ahp_bridge.agentapi import (
    HostTool,
    HostToolCall,
    HostToolClash,
    HostToolResult,
    ItemKind,
    OpenRequest,
    Prompt,
    ToolStatus,
    TurnState,
)
from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge
from tests.e2e.test_host_core import comparable, new_session_uri
from tests.support.copilot_cli import CliServer, RecordingSink, cli_server, requires_cli
from tests.support.model_server import ModelServer, Text, ToolCall

pytestmark = requires_cli

USAGES = HostTool(
    name="usages",
    description="Find all usages of a code symbol.",
    parameters={"type": "object", "properties": {"symbol": {"type": "string"}}},
)


@pytest.fixture(scope="module")
def models() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServer]:
    with cli_server(tmp_path_factory.mktemp("copilot-cli")) as srv:
        yield srv


@pytest.fixture
async def provider(cli: CliServer, models: ModelServer) -> AsyncIterator[CopilotProvider]:
    async with create_provider(cli.options(models.base_url)) as p:
        yield p


class Tools:
    """call_tool that records each call and answers with ``answer(call)`` (None: wait)."""

    def __init__(self, answer: Callable[[HostToolCall], HostToolResult | None]) -> None:
        self.answer = answer
        self.calls: list[HostToolCall] = []
        self.cancelled = trio.Event()

    async def __call__(self, call: HostToolCall) -> HostToolResult:
        self.calls.append(call)
        result = self.answer(call)
        if result is not None:
            return result
        try:
            await trio.sleep_forever()
        finally:
            self.cancelled.set()
        raise AssertionError("unreachable")


def tool_messages(models: ModelServer, trigger: str) -> list[dict[str, Any]]:
    return [m for r in models.chat_requests(trigger) for m in r.messages if m["role"] == "tool"]


async def test_the_model_calls_a_host_tool_and_sees_its_result(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    assert provider.capabilities().host_tools
    models.script(
        "ht-call", [ToolCall("usages", {"symbol": "main"}, "call_ht_1")], [Text("Found them.")]
    )
    tools = Tools(lambda call: HostToolResult(text="main.py:1, app.py:7", payload=b'{"n":2}'))
    sink = RecordingSink()
    conv = await provider.open(
        OpenRequest(
            session_id="task-7", workdir=str(tmp_path), events=sink, tools=[USAGES], call_tool=tools
        )
    )
    await conv.send(Prompt(text="ht-call please"))
    turn = await sink.turn_end()
    assert turn.state is TurnState.COMPLETED
    [call] = tools.calls
    assert (call.name, call.call_id, call.task_id, call.agent_id) == (
        "usages",
        "call_ht_1",
        "task-7",
        "",
    )
    assert json.loads(call.arguments) == {"symbol": "main"}
    [item] = [i for i in sink.items(ItemKind.TOOL)]
    assert item.id == "call_ht_1" and item.tool is not None
    assert item.tool.name == "usages" and item.tool.status is ToolStatus.COMPLETED
    # The model saw the text, never the payload.
    [message] = tool_messages(models, "ht-call")
    assert message["tool_call_id"] == "call_ht_1" and message["content"] == "main.py:1, app.py:7"
    # The tool was offered as given.
    first = models.chat_requests("ht-call")[0]
    [offered] = [t for t in first.body["tools"] if t["function"]["name"] == "usages"]
    assert offered["function"]["parameters"] == USAGES.parameters
    await conv.close()


async def test_a_failed_result_reaches_the_model_as_a_failure(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    models.script("ht-fail", [ToolCall("usages", {"symbol": "x"}, "call_ht_2")], [Text("Sorry.")])
    tools = Tools(lambda call: HostToolResult(text="The editor has no symbol x.", failed=True))
    sink = RecordingSink()
    conv = await provider.open(
        OpenRequest(workdir=str(tmp_path), events=sink, tools=[USAGES], call_tool=tools)
    )
    await conv.send(Prompt(text="ht-fail now"))
    assert (await sink.turn_end()).state is TurnState.COMPLETED
    [item] = sink.items(ItemKind.TOOL)
    assert item.tool is not None and item.tool.status is ToolStatus.FAILED
    [message] = tool_messages(models, "ht-fail")
    assert "The editor has no symbol x." in message["content"]
    await conv.close()


async def test_cancel_ends_a_waiting_host_tool_call(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    models.script("ht-cancel", [ToolCall("usages", {"symbol": "y"}, "call_ht_3")], [Text("x")])
    tools = Tools(lambda call: None)
    sink = RecordingSink()
    conv = await provider.open(
        OpenRequest(workdir=str(tmp_path), events=sink, tools=[USAGES], call_tool=tools)
    )
    await conv.send(Prompt(text="ht-cancel"))
    with trio.fail_after(60):
        while not tools.calls:
            await trio.sleep(0.05)
    await conv.cancel()
    with trio.fail_after(30):
        await tools.cancelled.wait()
    assert (await sink.turn_end()).state is TurnState.CANCELLED
    await conv.close()


async def test_host_tools_named_like_the_clis_own_fail_the_open(
    provider: CopilotProvider, cli: CliServer, tmp_path: Path
) -> None:
    state = cli.home / "copilot-home" / "session-state"
    state.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in state.iterdir() if not p.name.startswith(".")}
    grep = HostTool(name="grep", description="the client's grep")
    with pytest.raises(HostToolClash) as info:
        await provider.open(
            OpenRequest(workdir=str(tmp_path), events=RecordingSink(), tools=[USAGES, grep])
        )
    assert info.value.tools == ("grep",)
    assert "grep" in info.value.message
    assert {p.name for p in state.iterdir() if not p.name.startswith(".")} == before, (
        "the refused session was deleted"
    )


async def test_reopening_by_id_registers_new_host_tools_and_keeps_the_transcript(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    models.script("ht-before", [Text("No tools yet.")])
    models.script("ht-after", [ToolCall("usages", {"symbol": "z"}, "call_ht_4")], [Text("ok")])
    sink = RecordingSink()
    conv = await provider.open(OpenRequest(workdir=str(tmp_path), events=sink))
    await conv.send(Prompt(text="ht-before"))
    await sink.turn_end()
    conversation_id = conv.id()
    await conv.close()
    tools = Tools(lambda call: HostToolResult(text="z.py:3"))
    sink = RecordingSink()
    reopened = await provider.open(
        OpenRequest(
            conversation_id=conversation_id,
            workdir=str(tmp_path),
            events=sink,
            tools=[USAGES],
            call_tool=tools,
        )
    )
    assert reopened.id() == conversation_id
    await reopened.send(Prompt(text="ht-after"))
    assert (await sink.turn_end()).state is TurnState.COMPLETED
    assert [c.call_id for c in tools.calls] == ["call_ht_4"]
    first = models.chat_requests("ht-after")[0]
    assert "No tools yet." in json.dumps(first.messages)  # the earlier exchange is still there
    await reopened.close()


async def test_a_utility_call_has_only_the_host_tools_and_a_replaced_system_message(
    provider: CopilotProvider, models: ModelServer, cli: CliServer, tmp_path: Path
) -> None:
    from ahp_bridge.agentapi import UtilityRequest, UtilityRunner, UtilityUsage

    assert isinstance(provider, UtilityRunner)
    models.script(
        "ht-utility", [ToolCall("usages", {"symbol": "u"}, "call_ht_5")], [Text("Two usages.")]
    )
    tools = Tools(lambda call: HostToolResult(text="u.py:1, v.py:2"))
    seen: list[UtilityUsage] = []
    state = cli.home / "copilot-home" / "session-state"
    state.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in state.iterdir() if not p.name.startswith(".")}
    reply = await provider.run_utility(
        UtilityRequest(
            model="fake-model",
            workdir=str(tmp_path),
            purpose="usages",
            system="You count usages with the usages tool.",
            prompt="ht-utility: how often is u used?",
            tools=[USAGES],
            call_tool=tools,
            on_usage=seen.append,
        )
    )
    assert reply == "Two usages."
    [call] = tools.calls
    assert call.task_id == "" and call.call_id == "call_ht_5"  # a utility call has no Task
    first = models.chat_requests("ht-utility")[0]
    assert first.tool_names == ["usages"]  # no provider tools
    system = [m for m in first.messages if m["role"] == "system"]
    assert system and "You count usages" in json.dumps(system)
    [message] = tool_messages(models, "ht-utility")
    assert message["content"] == "u.py:1, v.py:2"
    assert seen and seen[-1].tokens
    assert {p.name for p in state.iterdir() if not p.name.startswith(".")} == before, (
        "the throwaway session was deleted"
    )


# -- through the bridge ------------------------------------------------------------------------


@pytest.fixture
def copilot_settings(
    make_settings: Callable[..., Settings], cli: CliServer, models: ModelServer, tmp_path: Path
) -> Settings:
    settings = make_settings()
    settings.bridge.providers = ["copilot"]
    settings.bridge.workdir = tmp_path
    settings.providers = {"copilot": cli.options(models.base_url, workdir=str(tmp_path))}
    return settings


@pytest.mark.parametrize("versions", [("1.0.0", "0.9.0"), ("0.7.0",)], ids=["1.0", "0.7"])
async def test_an_ahp_client_runs_the_tool_the_copilot_model_asks_for(
    start_bridge: StartBridge,
    copilot_settings: Settings,
    models: ModelServer,
    versions: tuple[str, ...],
) -> None:
    trigger = f"ht-bridge-{versions[0]}"
    models.script(
        trigger,
        [ToolCall("usages", {"symbol": "main", "lineContent": "def main():"}, f"call_{trigger}")],
        [Text("The editor found two usages.")],
    )
    bridge = await start_bridge(copilot_settings)
    editor = await bridge.client("editor", versions=versions)
    other = await bridge.client("other", versions=("1.0.0", "0.9.0"))
    session = new_session_uri()
    tool = {
        "name": "usages",
        "title": "List Code Usages",
        "description": "Find all usages of a code symbol across the workspace.",
        "inputSchema": {
            "type": "object",
            "properties": {"symbol": {"type": "string"}, "lineContent": {"type": "string"}},
            "required": ["symbol", "lineContent"],
        },
    }
    await editor.request(
        "createSession",
        {
            "channel": session,
            "provider": "copilot",
            "activeClient": {"clientId": "editor", "tools": [tool]},
        },
    )
    await editor.subscribe(session)
    await editor.wait_for(lambda: editor.states[session].get("lifecycle") == "ready", timeout=60)
    chat = editor.states[session]["defaultChat"]
    await editor.subscribe(chat)
    for channel in (session, chat):
        await other.subscribe(channel)
    meta = editor.states[session]["_meta"]["ahpBridge.hostTools"]
    assert meta == {"registered": [{"name": "usages", "clientId": "editor"}], "refused": []}

    turn_id = str(uuid.uuid4())
    started = {
        "type": "chat/turnStarted",
        "turnId": turn_id,
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": {"text": f"{trigger}: where is main used?", "origin": {"kind": "user"}},
    }
    assert "rejectionReason" not in await editor.echo_of(await editor.dispatch(chat, started))

    def execution() -> dict[str, Any] | None:
        requests = editor.states[session].get("inputNeeded") or []
        return next((r for r in requests if r["kind"] == "toolClientExecution"), None)

    request = await editor.wait_for(execution, timeout=60)
    call = request["toolCall"]
    assert request["clientId"] == "editor" and call["toolCallId"] == f"call_{trigger}"
    assert call["contributor"] == {"kind": "client", "clientId": "editor"}
    assert json.loads(call["toolInput"]) == {"symbol": "main", "lineContent": "def main():"}
    complete = {
        "type": "chat/toolCallComplete",
        "turnId": turn_id,
        "toolCallId": call["toolCallId"],
        "result": {
            "success": True,
            "pastTenseMessage": "Found 2 usages",
            "content": [{"type": "text", "text": "main.py:1, app.py:7"}],
        },
    }
    refused = await other.echo_of(await other.dispatch(chat, complete))
    assert refused["rejectionReason"] == f"tool call {call['toolCallId']} belongs to another client"
    assert "rejectionReason" not in await editor.echo_of(await editor.dispatch(chat, complete))

    def ended() -> dict[str, Any] | None:
        state = editor.states[chat]
        return None if state.get("activeTurn") else next(iter(state["turns"][-1:]), None)

    turn = await editor.wait_for(ended, timeout=60)
    assert turn["id"] == turn_id and turn["state"] == "complete"
    [done] = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert done["success"] is True and done["content"][0]["text"] == "main.py:1, app.py:7"
    text = "".join(p["content"] for p in turn["responseParts"] if p["kind"] == "markdown")
    assert text == "The editor found two usages."
    [message] = tool_messages(models, trigger)
    assert message["content"] == "main.py:1, app.py:7"
    assert not editor.states[session].get("inputNeeded")
    for client in (editor, other):
        await client.request("ping", {"channel": "ahp-root://"})
        for channel in (session, chat):
            snapshot = (await client.request("subscribe", {"channel": channel}))["snapshot"]
            assert comparable(client.states[channel]) == comparable(snapshot["state"])
