"""Tool calls of the running turn: the provider's tool items and the calls of client tools.

``ToolCalls`` keeps the turn's table of tool calls as emitted; interactions and subagents use
it to show a permission's tool call and a subagent's content on its parent call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ahp_bridge.agentapi import FileEdit, Item, ToolCall, ToolStatus

from .._parts import tool_result
from .._wire import META_PREFIX, Emitted, drop_none
from ..host_tools import execution_input_id
from .context import ChatContext
from .inputs import InputRequests
from .text import TextParts
from .turns import PerTurn, Turn, TurnLifecycle

_TERMINAL = frozenset({"completed", "cancelled"})


@dataclass
class Tool:
    """What the translator emitted for one tool call (mirrors the reducer's status)."""

    call_id: str
    base: dict[str, Any]
    status: str = "streaming"
    invocation: str = ""
    tool_input: str | None = None
    content: list[dict[str, Any]] = field(default_factory=list)
    interaction: str | None = None
    """The pending permission interaction confirming this call, if any."""

    @property
    def finished(self) -> bool:
        """Completed or cancelled: AHP cannot change the call any more."""
        return self.status in _TERMINAL

    @property
    def client_contributed(self) -> bool:
        contributor = self.base.get("contributor")
        return isinstance(contributor, dict) and contributor.get("kind") == "client"


@dataclass
class _Table:
    by_key: dict[tuple[str, str], Tool] = field(default_factory=dict)
    """By (agent id, item id) of the provider's tool item."""
    by_call: dict[str, Tool] = field(default_factory=dict)
    """By AHP toolCallId."""


class ToolCalls:
    """Tool items as ``chat/toolCall*`` actions, and client tools run by their client.

    ``file_edits`` is the host's hook: (turn id, a completed call's edits) -> its ``fileEdit``
    contents.
    """

    def __init__(
        self,
        ctx: ChatContext,
        turns: TurnLifecycle,
        text: TextParts,
        inputs: InputRequests,
        *,
        file_edits: Callable[[str, list[FileEdit]], list[dict[str, Any]]] | None,
    ) -> None:
        self._ctx = ctx
        self._turns = turns
        self._text = text
        self._inputs = inputs
        self._file_edits = file_edits
        self._table = PerTurn(_Table)
        self._orphans: dict[str, list[dict[str, Any]]] = {}
        """Content for tool calls not seen yet (subagents first): parent item id -> content."""
        self._client_tools: dict[str, tuple[str, str]] = {}
        """Client tools registered in the conversation: name -> (client id, display name)."""

    # ----------------------------------------------------------------- the turn's table

    def get(self, turn: Turn, key: tuple[str, str]) -> Tool | None:
        """The tool call of the (agent id, item id) key, if shown in the turn."""
        return self._table.of(turn).by_key.get(key)

    def by_call(self, turn: Turn, call_id: str) -> Tool | None:
        """The tool call with AHP toolCallId ``call_id``, if shown in the turn."""
        return self._table.of(turn).by_call.get(call_id)

    def new(
        self,
        turn: Turn,
        key: tuple[str, str],
        name: str,
        display: str,
        *,
        invocation: str,
        intention: str = "",
    ) -> Tool:
        """A tool call entered in the turn's table (``start`` shows it).

        Another agent's call gets the id ``<agent_id>/<item id>`` and its agent in ``_meta``.
        """
        agent_id, item_id = key
        own = agent_id == self._ctx.agent_id
        call_id = item_id if own else f"{agent_id}/{item_id}"
        base = drop_none(
            {
                "toolCallId": call_id,
                "toolName": name or display or "tool",
                "displayName": display or name or "Tool",
                "intention": intention or None,
                "_meta": None if own else {f"{META_PREFIX}agentId": agent_id},
            }
        )
        tool = Tool(call_id=call_id, base=base, invocation=invocation or base["displayName"])
        tool.content = self._orphans.pop(item_id, []) if own else []
        table = self._table.of(turn)
        table.by_key[key] = tool
        table.by_call[call_id] = tool
        return tool

    def start(self, turn: Turn, tool: Tool) -> list[Emitted]:
        self._text.close(turn)
        return [self._ctx.chat({"type": "chat/toolCallStart", "turnId": turn.id, **tool.base})]

    def ready(self, turn: Turn, tool: Tool, *, confirmed: str) -> Emitted:
        ready = drop_none(
            {
                "type": "chat/toolCallReady",
                "turnId": turn.id,
                "toolCallId": tool.call_id,
                "invocationMessage": tool.invocation,
                "toolInput": tool.tool_input,
                "confirmed": confirmed,
            }
        )
        return self._ctx.chat(ready)

    def hold_content(self, item_id: str, content: dict[str, Any]) -> None:
        """Content for this agent's tool call ``item_id``, which has not been shown yet."""
        self._orphans.setdefault(item_id, []).append(content)

    # ----------------------------------------------------------------- provider tool items

    def on_tool(self, item: Item) -> list[Emitted]:
        call = item.tool
        turn = self._turns.content_turn()
        if call is None or turn is None:
            return []
        key = (item.agent_id, item.id)
        tool = self.get(turn, key)
        out: list[Emitted] = []
        if tool is None:
            if item.agent_id != self._ctx.agent_id:
                return []  # other agents' tool calls stay out of this transcript
            owner = None if self._ctx.agent_id else self._client_tools.get(call.name)
            display = owner[1] if owner is not None else call.title or call.name
            tool = self.new(turn, key, call.name, display, invocation=display)
            if owner is not None:
                tool.base["contributor"] = {"kind": "client", "clientId": owner[0]}
            out += self.start(turn, tool)
        if call.input:
            tool.tool_input = call.input
        if call.status == ToolStatus.PENDING:
            return out
        if call.status == ToolStatus.RUNNING and tool.client_contributed:
            return out  # a client's tool runs once the host waits for it (client_call)
        if tool.status == "streaming":
            out.append(self.ready(turn, tool, confirmed="not-needed"))
            tool.status = "running"
        if call.status == ToolStatus.RUNNING or tool.finished:
            return out
        return out + self._complete(turn, tool, item, call)

    def _complete(self, turn: Turn, tool: Tool, item: Item, call: ToolCall) -> list[Emitted]:
        content = tool.content
        if call.file_edits and self._file_edits is not None:
            content = [*content, *self._file_edits(turn.id, list(call.file_edits))]
        result, facts = tool_result(item, call, tool.base["displayName"], content)
        complete: dict[str, Any] = {
            "type": "chat/toolCallComplete",
            "turnId": turn.id,
            "toolCallId": tool.call_id,
            "result": result,
        }
        meta = {**tool.base.get("_meta", {}), **facts}
        if meta:
            complete["_meta"] = meta
        tool.status = "completed"
        out = [self._ctx.chat(complete)]
        out += self._inputs.release_interaction(tool.interaction or "")
        tool.interaction = None
        # the provider may end a call its client was running
        return out + self._inputs.release_execution(tool.call_id)

    # ----------------------------------------------------------------- client tools

    def set_client_tools(self, owners: Mapping[str, tuple[str, str]]) -> None:
        """The client tools the conversation registers: name -> (client id, display name)."""
        self._client_tools = dict(owners)

    def client_call(
        self, call_id: str, name: str, agent_id: str, tool_input: str
    ) -> tuple[list[Emitted], str]:
        """A provider's host tool call: the running tool call its client is asked to run.

        Returns the actions and "" when the client is now waited for, or a reason the call
        cannot reach its client (no turn, an unknown tool, a call that already ended).
        """
        turn = self._turns.content_turn()
        owner = self._client_tools.get(name)
        if turn is None:
            return [], "no turn is running in the chat"
        if owner is None:
            return [], f"no client tool named {name!r} is registered"
        client_id, display = owner
        contributor = {"kind": "client", "clientId": client_id}
        key = (agent_id, call_id)
        tool = self.get(turn, key)
        out: list[Emitted] = []
        if tool is None:
            tool = self.new(turn, key, name, display, invocation=display)
            tool.base["contributor"] = contributor
            out += self.start(turn, tool)
        if tool.base.get("contributor") != contributor:
            return out, "the tool call was shown before its client tool was registered"
        if tool_input:
            tool.tool_input = tool_input
        if tool.status == "streaming":
            out.append(self.ready(turn, tool, confirmed="not-needed"))
            tool.status = "running"
        if tool.status != "running":
            return out, f"the tool call is already {tool.status}"
        if not self._inputs.has_execution(tool.call_id):
            out.append(self._wait_for_client(turn, tool, client_id))
        return out, ""

    def _wait_for_client(self, turn: Turn, tool: Tool, client_id: str) -> Emitted:
        input_id = execution_input_id(self._ctx.chat_uri, tool.call_id)
        self._inputs.add_execution(tool.call_id, input_id)
        state = drop_none(
            {
                **tool.base,
                "status": "running",
                "invocationMessage": tool.invocation,
                "toolInput": tool.tool_input,
                "confirmed": "not-needed",
            }
        )
        request = {
            "kind": "toolClientExecution",
            "id": input_id,
            "chat": self._ctx.chat_uri,
            "turnId": turn.id,
            "clientId": client_id,
            "toolCall": state,
        }
        return self._ctx.session({"type": "session/inputNeededSet", "request": request})

    def client_call_failed(self, tool_call_id: str, result: Mapping[str, Any]) -> list[Emitted]:
        """End a client tool call on the host's side (timeout, the client left, a cancel)."""
        out: list[Emitted] = []
        turn = self._turns.current
        tool = self.by_call(turn, tool_call_id) if turn is not None else None
        if turn is not None and tool is not None and tool.status == "running":
            tool.status = "completed"
            complete = {"type": "chat/toolCallComplete", "turnId": turn.id}
            out.append(self._ctx.chat({**complete, "toolCallId": tool_call_id, "result": result}))
        return out + self._inputs.release_execution(tool_call_id)

    def client_finished(self, action: Mapping[str, Any]) -> list[Emitted]:
        """The client completed its tool call (or a person confirmed its result)."""
        turn = self._turns.current
        call_id = str(action.get("toolCallId"))
        tool = self.by_call(turn, call_id) if turn is not None else None
        if tool is not None and action.get("type") == "chat/toolCallResultConfirmed":
            if tool.status == "pending-result-confirmation":
                tool.status = "completed" if action.get("approved") is True else "cancelled"
            return []
        if tool is not None and tool.status == "running":
            confirm = action.get("requiresResultConfirmation") is True
            tool.status = "pending-result-confirmation" if confirm else "completed"
        return self._inputs.release_execution(call_id)
