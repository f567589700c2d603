"""One chat's client tools: which the conversation registers, and its calls in flight.

An AHP client that is an active client of a session offers tools it runs itself (VS Code's
``usages``, ``rename``, ``toolSearch``). They become the conversation's agentapi host tools
(``OpenRequest.tools``), and ``call_tool`` (``OpenRequest.call_tool``) turns each call the model
makes into an AHP tool call contributed by that client: running, with a
``session/inputNeededSet{kind:"toolClientExecution"}`` naming the client. The client's
``chat/toolCallComplete`` (only that client's: ``state/validate.py`` refuses the others) is the
result the provider gets. Every other end is a failed result with a sentence for the model,
which the chat shows as a failed completion:

- the client leaves the session (``session/activeClientRemoved``, dispatched by the client or
  by the host after the active-client grace period of a disconnected client),
- the turn ends or is cancelled first (the reducer cancels the tool call; the input request is
  removed with the turn's other requests),
- the provider cancels the call (its context ended),
- the client does not answer within ``client_tools.timeout`` seconds.

A call repeated with the same call id gets the first one's result without reaching the client
again; arguments over ``MAX_HOST_TOOL_ARGUMENTS`` never reach it. Which tools a conversation
registers is ``translate.host_tools.plan_tools``: a provider without ``Capabilities.host_tools``
registers none, and names that clash with the provider's own tools (``HostToolClash`` from
``open``) are refused; the session's ``_meta["ahpBridge.hostTools"]`` lists both, with reasons.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.translate.host_tools import (
    HOST_TOOLS_META_KEY,
    OfferedTool,
    ToolPlan,
    failed_result,
    host_result,
    plan_tools,
)

if TYPE_CHECKING:
    from ahp_bridge.host.chat import ChatRuntime

log = structlog.get_logger(__name__)

#: Results kept per conversation for calls repeated with the same call id.
REMEMBERED_RESULTS = 256


@dataclass(frozen=True)
class ClientToolLimits:
    """``[client_tools]`` settings (config.py): every bound has a default and a config key."""

    timeout: float = 300.0
    max_result_bytes: int = 256 * 1024
    max_tools: int = 128


@dataclass
class _Call:
    """One host tool call waiting for its client."""

    tool_call_id: str
    call: agentapi.HostToolCall
    owner: OfferedTool
    turn_id: str | None
    done: trio.Event = field(default_factory=trio.Event)
    result: agentapi.HostToolResult | None = None
    unconfirmed: agentapi.HostToolResult | None = None
    """The client's result while a person confirms it (``requiresResultConfirmation``)."""


class ClientTools:
    """The client tools of one chat's conversation (see the module docstring)."""

    def __init__(self, chat: ChatRuntime, limits: ClientToolLimits) -> None:
        self.chat = chat
        self.limits = limits
        self.plan = ToolPlan()
        """What the open conversation registered."""
        self.clashes: dict[str, str] = {}
        """Names the provider refused as its own, with its reason (kept for the chat's life)."""
        self._calls: dict[str, _Call] = {}
        self._results: OrderedDict[str, agentapi.HostToolResult] = OrderedDict()

    # -- which tools ---------------------------------------------------------------------------

    def wanted(self) -> ToolPlan:
        """The tools the session's active clients offer now, as this conversation takes them."""
        chat = self.chat
        store = chat.hub.store
        session = store.state(chat.session.uri) if store.has(chat.session.uri) else {}
        return plan_tools(
            session.get("activeClients") or [],
            supported=chat.entry.capabilities.host_tools,
            provider=chat.entry.name,
            clashes=self.clashes,
            max_tools=self.limits.max_tools,
        )

    def stale(self) -> bool:
        """The open conversation registered other tools than the active clients offer now."""
        return self.wanted().key() != self.plan.key()

    def refuse_clash(self, exc: agentapi.HostToolClash, plan: ToolPlan) -> bool:
        """Record the tools an open refused; False when nothing is left to refuse."""
        names = [n for n in exc.tools if n in plan.owners()] or list(plan.owners())
        fresh = [n for n in names if n not in self.clashes]
        for name in fresh:
            self.clashes[name] = f"the provider refused it: {exc.message}"
        log.info("client tools refused by the provider", chat=self.chat.uri, tools=len(fresh))
        return bool(fresh)

    def opened(self, plan: ToolPlan) -> None:
        """The conversation opened with ``plan``: calls and tool items now follow it."""
        self.plan = plan
        owners = {name: (o.client_id, o.display) for name, o in plan.owners().items()}
        self.chat.translator.set_client_tools(owners)
        self.publish()

    def publish(self) -> None:
        """Say in session ``_meta`` which client tools are registered and which were refused."""
        if not self.chat.names_session():
            return
        meta = self.plan.meta() if self.plan.tools or self.plan.refused else None
        self.chat.apply_all(self.chat.translator.set_session_meta(HOST_TOOLS_META_KEY, meta))

    def clients_changed(self, active: set[str]) -> bool:
        """The session's active clients changed; True when the conversation must reopen.

        Calls of clients that left fail now; when nothing the provider was told changes, the
        refusals are updated in place.
        """
        for pending in list(self._calls.values()):
            if pending.owner.client_id not in active:
                client, name = pending.owner.client_id, pending.call.name
                self._end(
                    pending,
                    f"The client {client} that runs the {name} tool left the session before it "
                    "completed the call; the call failed.",
                )
        wanted = self.wanted()
        if wanted.key() != self.plan.key():
            return True
        if wanted != self.plan:
            self.plan = wanted
            self.publish()
        return False

    # -- calls ---------------------------------------------------------------------------------

    def waiting(self) -> frozenset[str]:
        """AHP tool call ids of the calls waiting for their client."""
        return frozenset(self._calls)

    async def call_tool(self, call: agentapi.HostToolCall) -> agentapi.HostToolResult:
        """``OpenRequest.call_tool``: run one host tool call through its client."""
        chat = self.chat
        if chat.sink is not None:
            chat.sink.flush()  # the call's own item and its turn come first
        tool_call_id = f"{call.agent_id}/{call.call_id}" if call.agent_id else call.call_id
        if call.call_id and tool_call_id in self._results:
            return self._results[tool_call_id]
        ongoing = self._calls.get(tool_call_id)
        if ongoing is not None:
            await ongoing.done.wait()
            assert ongoing.result is not None
            return ongoing.result
        owner = self.plan.owners().get(call.name)
        problem = _argument_problem(call)
        if owner is None:
            problem = f"No client tool named {call.name!r} is registered in this conversation."
        if problem is None:
            emitted, refused = chat.translator.client_call(
                call.call_id, call.name, call.agent_id, call.arguments.decode("utf-8")
            )
            chat.apply_all(emitted)
            problem = (
                f"The {call.name} tool call cannot reach its client: {refused}."
                if refused
                else None
            )
        if problem is not None or owner is None:
            result = failed_result(problem or "", owner.display if owner else call.name)[0]
            self._remember(call.call_id and tool_call_id, result)
            return result
        pending = _Call(tool_call_id, call, owner, chat.translator.active_turn_id)
        self._calls[tool_call_id] = pending
        try:
            with trio.move_on_after(self.limits.timeout):
                await pending.done.wait()
        except BaseException:
            if pending.result is None:  # the provider cancelled it (or the host is stopping)
                self._end(pending, f"The {call.name} tool call was cancelled.")
            raise
        finally:
            self._calls.pop(tool_call_id, None)
        if pending.result is None:
            self._end(
                pending,
                f"The client {owner.client_id} did not complete the {call.name} tool call within "
                f"{self.limits.timeout:g} seconds (client_tools.timeout); the call failed.",
            )
        assert pending.result is not None
        self._remember(call.call_id and tool_call_id, pending.result)
        return pending.result

    def client_action(self, action: Mapping[str, Any]) -> None:
        """The owning client's ``chat/toolCallComplete`` or a ``chat/toolCallResultConfirmed``."""
        pending = self._calls.get(str(action.get("toolCallId")))
        if pending is None or pending.result is not None:
            return
        kind = action.get("type")
        if kind == ActionType.CHAT_TOOL_CALL_COMPLETE:
            result = host_result(action.get("result") or {}, max_bytes=self.limits.max_result_bytes)
            if action.get("requiresResultConfirmation") is True:
                pending.unconfirmed = result
                return
            pending.result = result
            pending.done.set()
        elif kind == ActionType.CHAT_TOOL_CALL_RESULT_CONFIRMED and pending.unconfirmed is not None:
            if action.get("approved") is True:
                pending.result = pending.unconfirmed
            else:
                text = f"The user rejected the result of the {pending.call.name} tool call."
                pending.result = agentapi.HostToolResult(text=text, failed=True)
            pending.done.set()

    def sweep(self) -> None:
        """Fail the calls whose turn is over (ended or cancelled before the client answered)."""
        if not self._calls:
            return
        active = self.chat.translator.active_turn_id
        for pending in list(self._calls.values()):
            if pending.turn_id != active:
                self._end(
                    pending, f"The turn ended before the {pending.call.name} tool call completed."
                )

    def close(self) -> None:
        """The conversation is going away: every waiting call fails."""
        for pending in list(self._calls.values()):
            self._end(pending, f"The conversation closed during the {pending.call.name} tool call.")

    def _end(self, pending: _Call, message: str) -> None:
        """Fail one call on the host's side: the provider gets ``message``, the chat sees it."""
        if pending.result is not None:
            return
        result, ahp = failed_result(message, pending.owner.display)
        pending.result = result
        pending.done.set()
        self.chat.apply_all(self.chat.translator.client_call_failed(pending.tool_call_id, ahp))
        log.info("client tool call failed", chat=self.chat.uri, tool=pending.call.name)

    def _remember(self, call_id: str, result: agentapi.HostToolResult) -> None:
        if not call_id:
            return
        self._results[call_id] = result
        while len(self._results) > REMEMBERED_RESULTS:
            self._results.popitem(last=False)


def _argument_problem(call: agentapi.HostToolCall) -> str | None:
    """Why the call's arguments must not reach the client, or None."""
    size = len(call.arguments)
    if size > agentapi.MAX_HOST_TOOL_ARGUMENTS:
        return (
            f"The arguments of the {call.name} tool call are {size} bytes; a client tool takes "
            f"at most {agentapi.MAX_HOST_TOOL_ARGUMENTS} bytes (MaxHostToolArguments)."
        )
    try:
        arguments = json.loads(call.arguments or b"{}")
    except ValueError:
        arguments = None
    if not isinstance(arguments, dict):
        return f"The arguments of the {call.name} tool call are not a JSON object."
    return None
