"""The fake provider's host tools: `host_tool` steps call OpenRequest.call_tool as a model would,
and an open whose host tools clash with the script's own tools fails with HostToolClash."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest
import trio
from ahp_bridge_fake import FakeProvider, parse_script
from ahp_bridge_fake.testing import EventLog

from ahp_bridge.agentapi import (
    MAX_HOST_TOOL_ARGUMENTS,
    AgentAPIError,
    Event,
    HostTool,
    HostToolCall,
    HostToolClash,
    HostToolResult,
    ItemKind,
    OpenRequest,
    Prompt,
    ToolStatus,
    TurnState,
    UtilityRequest,
    UtilityRunner,
)

BIG = json.dumps({"q": "x" * MAX_HOST_TOOL_ARGUMENTS})
SCRIPT = f"""
[[prompts]]
text = "call"
[[prompts.steps]]
kind = "host_tool"
name = "usages"
title = "Usages"
arguments = {{ symbol = "main" }}
reply = "got {{text}}"
[[prompts.steps.on.ok]]
kind = "text"
text = "ok branch"
[[prompts.steps.on.failed]]
kind = "text"
text = "failed branch"
[[prompts.steps.on.missing]]
kind = "text"
text = "missing branch"

[[prompts]]
text = "big"
[[prompts.steps]]
kind = "host_tool"
name = "usages"
arguments_json = {json.dumps(BIG)}

[[prompts]]
text = "shell"
[[prompts.steps]]
kind = "tool"
name = "shell"

[[prompts]]
text = "ask"
[[prompts.steps]]
kind = "permission"
title = "Run it?"
[[prompts.steps.on.allow]]
kind = "text"
text = "allowed"
[[prompts.steps.on.reject]]
kind = "text"
text = "rejected"
"""
USAGES = HostTool(name="usages", description="Find usages", parameters={"type": "object"})


@pytest.fixture
async def provider() -> AsyncIterator[FakeProvider]:
    async with FakeProvider(parse_script(SCRIPT, "tools.toml"), time_scale=0.0) as fake:
        yield fake


class Tools:
    """A call_tool that records its calls and answers with ``result`` (or waits forever)."""

    def __init__(self, result: HostToolResult | None) -> None:
        self.result = result
        self.calls: list[HostToolCall] = []
        self.cancelled = trio.Event()

    async def __call__(self, call: HostToolCall) -> HostToolResult:
        self.calls.append(call)
        if self.result is not None:
            return self.result
        try:
            await trio.sleep_forever()
        finally:
            self.cancelled.set()
        raise AssertionError("unreachable")


async def turn(provider: FakeProvider, tools: Tools | None, text: str) -> list[Event]:
    log = EventLog()
    request = OpenRequest(session_id="task-1", events=log)
    if tools is not None:
        request = request.model_copy(update={"tools": [USAGES], "call_tool": tools})
    conversation = await provider.open(request)
    await conversation.send(Prompt(text=text))
    await log.turn_end()
    await conversation.close()
    return log.events


def tool_items(events: list[Event]) -> list[tuple[str, ToolStatus, str]]:
    return [
        (e.item.id, e.item.tool.status, e.item.tool.output)
        for e in events
        if e.item is not None and e.item.kind is ItemKind.TOOL and e.item.tool is not None
    ]


def texts(events: list[Event]) -> list[str]:
    return [e.item.text for e in events if e.item is not None and e.item.kind is ItemKind.ASSISTANT]


async def test_a_host_tool_step_calls_call_tool_and_the_item_carries_the_result(
    provider: FakeProvider,
) -> None:
    assert provider.capabilities().host_tools
    tools = Tools(HostToolResult(text="main.py:1", payload=b'{"shown": true}'))
    events = await turn(provider, tools, "call")
    [call] = tools.calls
    assert call.name == "usages" and call.task_id == "task-1" and call.agent_id == ""
    assert json.loads(call.arguments) == {"symbol": "main"}
    [(item_id, running, _), (same, done, output)] = tool_items(events)
    assert call.call_id == item_id == same
    assert (running, done, output) == (ToolStatus.RUNNING, ToolStatus.COMPLETED, "main.py:1")
    assert texts(events) == ["got main.py:1", "ok branch"]


async def test_a_failed_result_fails_the_item_and_takes_the_failed_branch(
    provider: FakeProvider,
) -> None:
    events = await turn(provider, Tools(HostToolResult(text="no symbol", failed=True)), "call")
    assert tool_items(events)[-1][1:] == (ToolStatus.FAILED, "no symbol")
    assert texts(events) == ["got no symbol", "failed branch"]


async def test_an_unregistered_tool_or_oversized_arguments_never_reach_call_tool(
    provider: FakeProvider,
) -> None:
    events = await turn(provider, None, "call")
    assert tool_items(events)[-1][1:] == (ToolStatus.FAILED, "There is no tool named usages.")
    assert texts(events) == ["got There is no tool named usages.", "missing branch"]
    tools = Tools(HostToolResult(text="never"))
    events = await turn(provider, tools, "big")
    assert tools.calls == []
    assert tool_items(events)[-1][1:] == (
        ToolStatus.FAILED,
        f"The call's arguments exceed {MAX_HOST_TOOL_ARGUMENTS} bytes.",
    )


async def test_cancel_cancels_the_waiting_call(provider: FakeProvider) -> None:
    tools = Tools(None)
    log = EventLog()
    request = OpenRequest(events=log, tools=[USAGES], call_tool=tools)
    conversation = await provider.open(request)
    await conversation.send(Prompt(text="call"))
    await log.wait_for(lambda e: e.item is not None and e.item.kind is ItemKind.TOOL)
    while not tools.calls:
        await trio.sleep(0)
    await conversation.cancel()
    with trio.fail_after(5):
        await tools.cancelled.wait()
    end = await log.turn_end()
    assert end.turn is not None and end.turn.state is TurnState.CANCELLED
    await conversation.close()


async def test_host_tools_named_like_the_scripts_own_tools_fail_the_open(
    provider: FakeProvider,
) -> None:
    shell = HostTool(name="shell")
    with pytest.raises(HostToolClash) as info:
        await provider.open(OpenRequest(events=EventLog(), tools=[USAGES, shell]))
    assert info.value.tools == ("shell",)
    assert "shell" in info.value.message


async def test_a_utility_call_uses_only_host_tools_and_rejects_permissions(
    provider: FakeProvider,
) -> None:
    assert isinstance(provider, UtilityRunner)
    tools = Tools(HostToolResult(text="util.py:9"))
    request = UtilityRequest(prompt="call", tools=[USAGES], call_tool=tools, system="be brief")
    assert await provider.run_utility(request) == "ok branch"
    [call] = tools.calls
    assert call.task_id == "" and call.name == "usages"  # a utility call belongs to no Task
    assert await provider.run_utility(UtilityRequest(prompt="ask")) == "rejected"
    with pytest.raises(AgentAPIError, match="no script rule matches"):
        await provider.run_utility(UtilityRequest(prompt="unknown prompt"))
