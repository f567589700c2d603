"""One chat's client tools: which the conversation registers, and its calls in flight (sans-IO).

An AHP client that is an active client of a session offers tools it runs itself (VS Code's
``usages``, ``rename``, ``toolSearch``). They become the conversation's agentapi host tools
(``OpenRequest.tools``), and each call the model makes (``OpenRequest.call_tool``, awaited in the
shell) becomes an AHP tool call contributed by that client: running, with a
``session/inputNeededSet{kind:"toolClientExecution"}`` naming the client. The client's
``chat/toolCallComplete`` (only that client's: ``state/validate.py`` refuses the others) is the
result the provider gets. Every other end is a failed result with a sentence for the model,
which the chat shows as a failed completion:

- the client leaves the session (``session/activeClientRemoved``, dispatched by the client or
  by the host after the active-client grace period of a disconnected client),
- the turn ends or is cancelled first (the reducer cancels the tool call; the input request is
  removed with the turn's other requests),
- the provider cancels the call (its context ended),
- the client does not answer within ``client_tools.timeout`` seconds (a timer).

A call is keyed by its AHP tool call id (``<agent_id>/<call_id>`` for a subagent's), so two
subagents may use the same call id at once. A call repeated with the same id gets the first
one's result without reaching the client again; arguments over ``MAX_HOST_TOOL_ARGUMENTS`` never
reach it. Which tools a conversation registers is ``translate.host_tools.plan_tools``.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ahp_bridge import agentapi
from ahp_bridge.protocol.action_types import ActionType as A
from ahp_bridge.translate.host_tools import (
    OfferedTool,
    ToolPlan,
    failed_result,
    host_result,
    plan_tools,
)

__all__ = ["REMEMBERED_RESULTS", "ClientToolLimits", "ClientTools", "Resolve", "tool_call_id"]

#: Results kept per conversation for calls repeated with the same call id.
REMEMBERED_RESULTS = 256


@dataclass(frozen=True)
class ClientToolLimits:
    """``[client_tools]`` settings (config.py): every bound has a default and a config key."""

    timeout: float = 300.0
    max_result_bytes: int = 256 * 1024
    max_tools: int = 128


def tool_call_id(call: agentapi.HostToolCall) -> str:
    """The AHP tool call id of a host tool call (a subagent's is prefixed with its agent id)."""
    return f"{call.agent_id}/{call.call_id}" if call.agent_id else call.call_id


@dataclass
class _Call:
    """One host tool call waiting for its client."""

    tool_call_id: str
    call: agentapi.HostToolCall
    owner: OfferedTool
    turn_id: str | None
    waiters: list[int] = field(default_factory=list)
    unconfirmed: agentapi.HostToolResult | None = None
    """The client's result while a person confirms it (``requiresResultConfirmation``)."""


#: (waiter, result): the shell hands `result` to the provider call waiting as `waiter`.
Resolve = tuple[int, agentapi.HostToolResult]


class ClientTools:
    """The client tools of one chat's conversation (see the module docstring).

    `failed` is told of each call the host fails (its AHP tool call id and the failed AHP
    result), so the chat shows it; the caller turns what this returns into effects.
    """

    def __init__(
        self,
        limits: ClientToolLimits,
        *,
        supported: bool,
        provider: str,
        failed: Callable[[str, dict[str, Any]], None],
    ) -> None:
        self.limits = limits
        self._supported = supported
        self._provider = provider
        self._failed = failed
        self.plan = ToolPlan()
        """What the open conversation registered."""
        self.clashes: dict[str, str] = {}
        """Names the provider refused as its own, with its reason (kept for the chat's life)."""
        self._calls: dict[str, _Call] = {}
        self._results: OrderedDict[str, agentapi.HostToolResult] = OrderedDict()

    # -- which tools ---------------------------------------------------------------------------

    def wanted(self, active_clients: list[Any]) -> ToolPlan:
        """The tools the session's active clients offer now, as this conversation takes them."""
        return plan_tools(
            active_clients,
            supported=self._supported,
            provider=self._provider,
            clashes=self.clashes,
            max_tools=self.limits.max_tools,
        )

    def refuse_clash(self, exc: agentapi.HostToolClash, plan: ToolPlan) -> bool:
        """Record the tools an open refused; False when nothing is left to refuse."""
        names = [n for n in exc.tools if n in plan.owners()] or list(plan.owners())
        fresh = [n for n in names if n not in self.clashes]
        for name in fresh:
            self.clashes[name] = f"the provider refused it: {exc.message}"
        return bool(fresh)

    # -- calls ---------------------------------------------------------------------------------

    def waiting(self) -> frozenset[str]:
        """AHP tool call ids of the calls waiting for their client."""
        return frozenset(self._calls)

    def called(
        self, waiter: int, call: agentapi.HostToolCall, turn_id: str | None
    ) -> tuple[str | None, OfferedTool | None, list[Resolve]]:
        """A provider's call: (problem, owner, answered now).

        Answered now: a repeat of a finished call (its result), or nothing. A repeat of a call
        still waiting joins it. Otherwise the caller checks `problem` (None: the call may go to
        its client), and `start`s it once the chat showed it.
        """
        key = tool_call_id(call)
        if call.call_id and key in self._results:
            return None, None, [(waiter, self._results[key])]
        ongoing = self._calls.get(key)
        if ongoing is not None:
            ongoing.waiters.append(waiter)
            return None, None, []
        owner = self.plan.owners().get(call.name)
        problem = _argument_problem(call)
        if owner is None:
            problem = f"No client tool named {call.name!r} is registered in this conversation."
        return problem, owner, []

    def refuse(
        self, waiter: int, call: agentapi.HostToolCall, problem: str, owner: OfferedTool | None
    ) -> list[Resolve]:
        """Answer a call that cannot reach its client with a failed result."""
        result = failed_result(problem, owner.display if owner else call.name)[0]
        self._remember(call.call_id and tool_call_id(call), result)
        return [(waiter, result)]

    def start(
        self, waiter: int, call: agentapi.HostToolCall, owner: OfferedTool, turn_id: str | None
    ) -> str:
        """The call now waits for its client; returns its AHP tool call id (the timer's key)."""
        key = tool_call_id(call)
        self._calls[key] = _Call(key, call, owner, turn_id, [waiter])
        return key

    def client_action(self, action: Mapping[str, Any]) -> list[Resolve]:
        """The owning client's ``chat/toolCallComplete`` or a ``chat/toolCallResultConfirmed``."""
        pending = self._calls.get(str(action.get("toolCallId")))
        if pending is None:
            return []
        kind = action.get("type")
        if kind == A.CHAT_TOOL_CALL_COMPLETE:
            result = host_result(action.get("result") or {}, max_bytes=self.limits.max_result_bytes)
            if action.get("requiresResultConfirmation") is True:
                pending.unconfirmed = result
                return []
            return self._finish(pending, result)
        if kind == A.CHAT_TOOL_CALL_RESULT_CONFIRMED and pending.unconfirmed is not None:
            if action.get("approved") is True:
                return self._finish(pending, pending.unconfirmed)
            text = f"The user rejected the result of the {pending.call.name} tool call."
            return self._finish(pending, agentapi.HostToolResult(text=text, failed=True))
        return []

    def clients_left(self, active: set[str]) -> list[Resolve]:
        """Calls of clients that are no longer active clients fail."""
        out: list[Resolve] = []
        for pending in list(self._calls.values()):
            if pending.owner.client_id not in active:
                client, name = pending.owner.client_id, pending.call.name
                out += self._end(
                    pending,
                    f"The client {client} that runs the {name} tool left the session before it "
                    "completed the call; the call failed.",
                )
        return out

    def sweep(self, active_turn: str | None) -> list[Resolve]:
        """Fail the calls whose turn is over (ended or cancelled before the client answered)."""
        out: list[Resolve] = []
        for pending in list(self._calls.values()):
            if pending.turn_id != active_turn:
                out += self._end(
                    pending, f"The turn ended before the {pending.call.name} tool call completed."
                )
        return out

    def timed_out(self, key: str) -> list[Resolve]:
        pending = self._calls.get(key)
        if pending is None:
            return []
        return self._end(
            pending,
            f"The client {pending.owner.client_id} did not complete the {pending.call.name} tool "
            f"call within {self.limits.timeout:g} seconds (client_tools.timeout); the call failed.",
        )

    def cancelled(self, waiter: int) -> list[Resolve]:
        """The provider stopped waiting for a call (its context ended)."""
        for pending in list(self._calls.values()):
            if waiter in pending.waiters:
                return self._end(pending, f"The {pending.call.name} tool call was cancelled.")
        return []

    def close(self) -> list[Resolve]:
        """The conversation is going away: every waiting call fails."""
        out: list[Resolve] = []
        for pending in list(self._calls.values()):
            out += self._end(
                pending, f"The conversation closed during the {pending.call.name} tool call."
            )
        return out

    def _end(self, pending: _Call, message: str) -> list[Resolve]:
        """Fail one call on the host's side: the provider gets ``message``, the chat sees it."""
        result, ahp = failed_result(message, pending.owner.display)
        resolved = self._finish(pending, result)
        self._failed(pending.tool_call_id, ahp)
        return resolved

    def _finish(self, pending: _Call, result: agentapi.HostToolResult) -> list[Resolve]:
        self._calls.pop(pending.tool_call_id, None)
        self._remember(pending.call.call_id and pending.tool_call_id, result)
        return [(waiter, result) for waiter in pending.waiters]

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
