"""Permissions and questions: asked in the running turn, mirrored as session input requests.

A permission confirms a tool call (``chat/toolCallReady`` with options); a question or plan
review is ``chat/inputRequested``. Each is also a ``session/inputNeededSet`` until the
provider or a client resolves it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ahp_bridge.agentapi import Event, Interaction, InteractionKind, InteractionState, Option

from .._wire import META_PREFIX, Action, Emitted, drop_none
from ..questions import input_request
from .context import ChatContext
from .inputs import InputRequests, PendingInteraction
from .text import TextParts
from .tools import Tool, ToolCalls
from .turns import Turn, TurnLifecycle


def confirmation_options(options: list[Option]) -> list[dict[str, Any]]:
    """AHP ``ConfirmationOption``s for the provider's permission options, in its order.

    Each provider option stays its own AHP option (so allow-once and allow-for-session remain
    distinct choices); approvals are group 0 and denials group 1, so clients may separate them.
    """
    return [
        {
            "id": option.id,
            "label": option.label,
            "kind": "deny" if option.reject else "approve",
            "group": 1 if option.reject else 0,
        }
        for option in options
    ]


class Interactions:
    """The provider's interactions in the chat, and the client's answers to them."""

    def __init__(
        self,
        ctx: ChatContext,
        turns: TurnLifecycle,
        text: TextParts,
        inputs: InputRequests,
        tools: ToolCalls,
    ) -> None:
        self._ctx = ctx
        self._turns = turns
        self._text = text
        self._inputs = inputs
        self._tools = tools

    # ----------------------------------------------------------------- queries for the host

    def pending_permissions(self) -> dict[str, Interaction]:
        """Pending permission interactions keyed by the AHP ``toolCallId`` they confirm."""
        out: dict[str, Interaction] = {}
        turn = self._turns.current
        for pending in self._inputs.interactions().values():
            if turn is not None and pending.tool_key is not None:
                tool = self._tools.get(turn, pending.tool_key)
                if tool is not None:
                    out[tool.call_id] = pending.interaction
        return out

    def pending_inputs(self) -> dict[str, Interaction]:
        """Pending question and plan-review interactions keyed by AHP input ``requestId``."""
        return {
            key: pending.interaction
            for key, pending in self._inputs.interactions().items()
            if pending.tool_key is None
        }

    # ----------------------------------------------------------------- the provider's side

    def on_interaction(self, event: Event) -> list[Emitted]:
        interaction = event.interaction
        if interaction is None:
            return []
        if interaction.state != InteractionState.PENDING:
            return self._resolved(interaction)
        turn = self._turns.content_turn()
        if turn is None:
            return []
        if interaction.kind == InteractionKind.PERMISSION:
            return self._permission(turn, interaction)
        return self._question(turn, interaction)

    def _input_id(self, interaction: Interaction) -> str:
        return f"{self._ctx.chat_uri}#{interaction.id}"

    def _permission(self, turn: Turn, interaction: Interaction) -> list[Emitted]:
        asked = self._inputs.interaction(interaction.id)
        if asked is not None:
            asked.interaction = interaction
            return []  # AHP 0.7.0 cannot re-ask a pending confirmation; the first one stands
        key, tool, out = self._permission_tool(turn, interaction)
        invocation = interaction.detail or interaction.title or tool.invocation
        options = confirmation_options(list(interaction.options))
        ready = drop_none(
            {
                "type": "chat/toolCallReady",
                "turnId": turn.id,
                "toolCallId": tool.call_id,
                "invocationMessage": invocation,
                "toolInput": tool.tool_input,
                "confirmationTitle": interaction.title or None,
                "riskAssessment": _risk(interaction),
                "options": options or None,
            }
        )
        out.append(self._ctx.chat(ready))
        tool.status = "pending-confirmation"
        tool.interaction = interaction.id
        state = {
            **tool.base,
            "status": "pending-confirmation",
            **{k: v for k, v in ready.items() if k not in ("type", "turnId", "toolCallId")},
        }
        pending = PendingInteraction(interaction, self._input_id(interaction), tool_key=key)
        self._inputs.add_interaction(pending)
        request = {
            "kind": "toolConfirmation",
            "id": pending.input_id,
            "chat": self._ctx.chat_uri,
            "turnId": turn.id,
            "toolCall": state,
        }
        out.append(self._ctx.session({"type": "session/inputNeededSet", "request": request}))
        return out

    def _permission_tool(
        self, turn: Turn, interaction: Interaction
    ) -> tuple[tuple[str, str], Tool, list[Emitted]]:
        """The tool call a permission confirms: its own, else one started for the request."""
        key = (interaction.agent_id, interaction.tool_call_id or f"#{interaction.id}")
        tool = self._tools.get(turn, key)
        if tool is not None and tool.finished:
            key = (interaction.agent_id, f"#{interaction.id}")
            tool = None
        if tool is not None:
            return key, tool, []
        title = interaction.title or "Permission request"
        tool = self._tools.new(
            turn, key, title, title, invocation=title, intention=interaction.intention
        )
        return key, tool, self._tools.start(turn, tool)

    def _question(self, turn: Turn, interaction: Interaction) -> list[Emitted]:
        request = input_request(interaction)
        pending = PendingInteraction(interaction, self._input_id(interaction))
        self._inputs.add_interaction(pending)
        self._text.close(turn)
        mirror = {"kind": "chatInput", "id": pending.input_id, "chat": self._ctx.chat_uri}
        return [
            self._ctx.chat({"type": "chat/inputRequested", "request": request}),
            self._ctx.session(
                {"type": "session/inputNeededSet", "request": {**mirror, "request": request}}
            ),
        ]

    def _resolved(self, interaction: Interaction) -> list[Emitted]:
        pending = self._inputs.pop_interaction(interaction.id)
        turn = self._turns.current
        if pending is None or turn is None:
            return []
        out: list[Emitted] = []
        if pending.tool_key is None:
            response = {
                InteractionState.ANSWERED: "accept",
                InteractionState.REJECTED: "decline",
            }.get(interaction.state, "cancel")
            completed = {
                "type": "chat/inputCompleted",
                "requestId": interaction.id,
                "response": response,
            }
            out.append(self._ctx.chat(completed))
        else:
            tool = self._tools.get(turn, pending.tool_key)
            if tool is not None and tool.status == "pending-confirmation":
                out.append(self._ctx.chat(self._confirmation(turn, tool, interaction)))
                tool.interaction = None
        out.append(self._inputs.removed(pending.input_id))
        return out

    def _confirmation(self, turn: Turn, tool: Tool, interaction: Interaction) -> Action:
        """Settle a permission the provider resolved without a client's answer here.

        An answer or refusal is recorded as the host's ``chat/toolCallConfirmed``. An expired
        request says nothing about the decision (the provider may have asked elsewhere and run
        the tool anyway), so the call only leaves pending-confirmation: it is marked running
        as decided by the provider's setting, and its own completion, failure or the turn's
        end settles it.
        """
        chosen = next((o for o in interaction.options if o.id == interaction.resolution), None)
        if interaction.state == InteractionState.EXPIRED:
            tool.status = "running"
            meta = {**tool.base.get("_meta", {}), f"{META_PREFIX}resolution": "expired"}
            tool.base["_meta"] = meta  # kept by the later toolCallComplete, which replaces _meta
            ready = self._tools.ready(turn, tool, confirmed="setting")[1]
            return {**ready, "_meta": meta}
        base: Action = {"type": "chat/toolCallConfirmed", "turnId": turn.id}
        base["toolCallId"] = tool.call_id
        if chosen is not None:
            base["selectedOptionId"] = chosen.id
        denied = interaction.state == InteractionState.REJECTED or (
            chosen is not None and chosen.reject
        )
        if not denied:
            tool.status = "running"
            how = "setting" if interaction.auto else "user-action"
            return {**base, "approved": True, "confirmed": how}
        tool.status = "cancelled"
        return {**base, "approved": False, "reason": "denied"}

    # ----------------------------------------------------------------- a client's answers

    def client_confirmed(self, action: Mapping[str, Any]) -> list[Emitted]:
        """A client's ``chat/toolCallConfirmed``: the call leaves pending-confirmation."""
        turn = self._turns.current
        if turn is None or turn.id != action.get("turnId"):
            return []
        tool = self._tools.by_call(turn, str(action.get("toolCallId")))
        if tool is None or tool.status != "pending-confirmation":
            return []
        tool.status = "running" if action.get("approved") is True else "cancelled"
        out = self._inputs.release_interaction(tool.interaction or "")
        tool.interaction = None
        return out

    def client_answered(self, action: Mapping[str, Any]) -> list[Emitted]:
        """A client's ``chat/inputCompleted``: its question is no longer pending."""
        return self._inputs.release_interaction(str(action.get("requestId")))


_SAFETY = {"approve": 1.0, "requireApproval": 0.0}


def _risk(interaction: Interaction) -> dict[str, Any] | None:
    """The provider's assisted review as AHP's judge risk assessment (approve: safe, 1)."""
    review = interaction.assisted
    safety = _SAFETY.get(review.recommendation)
    if safety is None:  # not reviewed, excluded from review, or the review failed
        return None
    reason = review.reason or f"The reviewer recommends {review.recommendation}."
    return {"kind": "judge", "status": "complete", "reason": reason, "safety": safety}
