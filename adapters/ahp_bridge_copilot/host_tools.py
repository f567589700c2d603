"""Host tools (agentapi OpenRequest.tools) as the SDK's custom tools, each call run in trio.

The SDK runs a custom tool's handler on its asyncio thread when the model calls the tool
(``external_tool.requested``, after ``tool.execution_start``). The handler hands the call to
the host's ``call_tool`` on the trio thread (a task in the provider's nursery, started through
the run's token) and waits for it on asyncio; an asyncio cancel cancels the trio task, and a
conversation whose turn ended or that closed cancels every call still waiting (``cancel_all``),
so ``call_tool`` always sees its context end. The tools are registered as given: no permission
prompt (``skip_permission``), never deferred, never overriding a built-in tool. A name that
clashes with a built-in or MCP tool fails the open with HostToolClash: the CLI reports the
clash when the session's tools are initialized (``session.tools.initializeAndValidate``),
which the adapter asks for at open.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import threading
from typing import Any

import trio

from ahp_bridge.agentapi import (
    MAX_HOST_TOOL_ARGUMENTS,
    CallTool,
    HostTool,
    HostToolCall,
    HostToolClash,
    HostToolResult,
)

log = logging.getLogger(__name__)

_CLASH = re.compile(r'tool "([^"]+)" conflicts with')
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class HostToolRunner:
    """One conversation's host tools: the SDK tools to register, and their calls in flight."""

    def __init__(
        self,
        tools: list[HostTool],
        call_tool: CallTool | None,
        task_id: str,
        token: trio.lowlevel.TrioToken,
        nursery: trio.Nursery,
    ) -> None:
        self.tools = list(tools)
        self._call_tool = call_tool
        self._task_id = task_id
        self._token = token
        self._nursery = nursery
        self._lock = threading.Lock()
        self._scopes: set[trio.CancelScope] = set()

    def sdk_tools(self) -> list[Any]:
        """The SDK ``Tool``s for ``create_session``/``resume_session``."""
        from copilot.tools import Tool

        return [
            Tool(
                name=tool.name,
                description=tool.description or tool.name,
                handler=self._handle,
                parameters=dict(tool.parameters) or dict(_EMPTY_SCHEMA),
                skip_permission=True,
                defer="never",
            )
            for tool in self.tools
        ]

    async def _handle(self, invocation: Any) -> Any:
        """The SDK handler (asyncio thread): the host's result as the SDK's ToolResult."""
        from copilot.tools import ToolResult

        arguments = json.dumps(
            invocation.arguments if invocation.arguments is not None else {},
            ensure_ascii=False,
        ).encode("utf-8")
        if len(arguments) > MAX_HOST_TOOL_ARGUMENTS:
            text = f"The call's arguments exceed {MAX_HOST_TOOL_ARGUMENTS} bytes."
            result = HostToolResult(text=text, failed=True)
        elif self._call_tool is None:
            result = HostToolResult(text="This conversation runs no host tools.", failed=True)
        else:
            call = HostToolCall(
                name=str(invocation.tool_name),
                call_id=str(invocation.tool_call_id or ""),
                task_id=self._task_id,
                agent_id=str(invocation.agent_id or ""),
                arguments=arguments,
            )
            result = await self._in_trio(call)
        if result.failed:  # the payload is the host's, never the model's
            return ToolResult(
                text_result_for_llm=result.text, result_type="failure", error=result.text
            )
        return ToolResult(text_result_for_llm=result.text, result_type="success")

    async def _in_trio(self, call: HostToolCall) -> HostToolResult:
        """Run call_tool in trio and wait for it here; a cancel on either side ends it."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[HostToolResult] = loop.create_future()
        scope = trio.CancelScope()
        call_tool = self._call_tool
        assert call_tool is not None

        def settle(result: HostToolResult) -> None:
            if not done.done():
                done.set_result(result)

        async def run() -> None:
            result = HostToolResult(text="The tool call was cancelled.", failed=True)
            try:
                with scope:
                    result = await call_tool(call)
            except Exception as exc:  # the host's own failure: the model hears a sentence
                log.warning("copilot: host tool call failed: %s", type(exc).__name__)
                result = HostToolResult(text="The host could not run the tool.", failed=True)
            finally:
                with self._lock:
                    self._scopes.discard(scope)
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(settle, result)

        def start() -> None:
            with self._lock:
                self._scopes.add(scope)
            self._nursery.start_soon(run)

        try:
            self._token.run_sync_soon(start)
        except trio.RunFinishedError:
            return HostToolResult(text="The host is shutting down.", failed=True)
        try:
            return await done
        except asyncio.CancelledError:
            self._cancel(scope)
            raise

    def _cancel(self, scope: trio.CancelScope) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(scope.cancel)

    def cancel_all(self) -> None:
        """End every call still waiting (the turn ended, the conversation closed); any thread."""
        with self._lock:
            scopes = list(self._scopes)
        for scope in scopes:
            self._cancel(scope)


def clash_names(error: Exception, tools: list[HostTool]) -> list[str]:
    """The host tools the CLI's tool initialization refused as clashing, from its error."""
    named = set(_CLASH.findall(str(error)))
    return [tool.name for tool in tools if tool.name in named]


def clash_error(names: list[str], error: str) -> HostToolClash:
    shown = ", ".join(names)
    return HostToolClash(
        f"host tools clash with the Copilot CLI's own tools: {shown} ({error})", names
    )
