"""Subagents: ``subagent`` content on their parent tool calls, and a subagent's own chat.

In a main chat (or a subagent's chat, for its children) a subagent shows only as the
``subagent`` content of the tool call that spawned it, once. In a subagent's own read-only chat
its runs are the chat's turns, and only its own events concern that chat.
"""

from __future__ import annotations

from ahp_bridge.agentapi import (
    SUBAGENT_TRIGGER_SPAWN,
    SUBAGENT_TRIGGER_USER,
    Event,
    EventKind,
    Subagent,
    SubagentStatus,
)

from .._parts import subagent_ref
from .._wire import Emitted, error_part
from .context import ChatContext
from .tools import ToolCalls
from .turns import TurnEvents, TurnLifecycle


def concerns_subagent(agent_id: str, event: Event) -> bool:
    """In subagent ``agent_id``'s chat: its items and lifecycle, its children, the exit."""
    if event.kind == EventKind.ITEM and event.item is not None:
        return event.item.agent_id == agent_id
    if event.kind == EventKind.DELTA and event.delta is not None:
        return event.delta.agent_id == agent_id
    if event.kind == EventKind.SUBAGENT and event.subagent is not None:
        sub = event.subagent
        return agent_id in (sub.id, sub.parent_agent_id)
    return event.kind == EventKind.EXIT


class Subagents:
    """Subagent events: content for their parent tool calls, or the runs of this chat's own."""

    def __init__(
        self,
        ctx: ChatContext,
        turns: TurnLifecycle,
        turn_events: TurnEvents,
        tools: ToolCalls,
    ) -> None:
        self._ctx = ctx
        self._turns = turns
        self._turn_events = turn_events
        self._tools = tools
        self._shown: set[str] = set()
        """Subagents already given to their parent tool call (once per subagent)."""

    def on_subagent(self, subagent: Subagent) -> list[Emitted]:
        agent_id = self._ctx.agent_id
        if agent_id and subagent.id == agent_id:
            return self._lifecycle(subagent)
        if subagent.parent_agent_id != agent_id or not subagent.parent_tool_call_id:
            return []
        if subagent.id in self._shown:
            return []
        turn = self._turns.content_turn()
        if turn is None:
            return []
        ref = subagent_ref(subagent, self._ctx.subagent_chat_uri)
        tool = self._tools.get(turn, (agent_id, subagent.parent_tool_call_id))
        self._shown.add(subagent.id)
        if tool is None:
            self._tools.hold_content(subagent.parent_tool_call_id, ref)
            return []
        if tool.finished:
            return []  # AHP cannot change a finished tool call's result
        tool.content.append(ref)
        if tool.status != "running":
            return []  # it goes out with the tool call's result
        changed = {
            "type": "chat/toolCallContentChanged",
            "turnId": turn.id,
            "toolCallId": tool.call_id,
            "content": list(tool.content),
        }
        return [self._ctx.chat(changed)]

    def _lifecycle(self, subagent: Subagent) -> list[Emitted]:
        """A subagent chat's turns are the subagent's runs: running starts one, an end ends it."""
        status = subagent.status
        if status == SubagentStatus.RUNNING:
            if self._turns.current is not None:
                return []
            trigger = subagent.runs[-1].trigger if subagent.runs else SUBAGENT_TRIGGER_SPAWN
            by_user = trigger == SUBAGENT_TRIGGER_USER
            return self._turn_events.start_provider_turn(run_by_user=by_user)
        turn = self._turns.run_ended()
        if turn is None:
            return []
        if status == SubagentStatus.FAILED:
            part = error_part("subagentFailed", subagent.error or "It failed.")
            return self._turn_events.ended(turn, "chat/error", {"part": part})
        if status == SubagentStatus.CANCELLED:
            return self._turn_events.ended(turn, "chat/turnCancelled", {})
        # completed, or idle for a follow-up
        return self._turn_events.ended(turn, "chat/turnComplete", {})
