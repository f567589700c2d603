"""The session input requests a chat has open: pending interactions and client tool runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ahp_bridge.agentapi import Interaction

from .._wire import Emitted
from .context import ChatContext


@dataclass
class PendingInteraction:
    """An interaction shown as a session input request until it is resolved."""

    interaction: Interaction
    input_id: str
    tool_key: tuple[str, str] | None = None
    """The (agent id, item id) of the tool call a permission confirms; None for a question."""


class InputRequests:
    """Every ``session/inputNeededSet`` the translator emitted that is still open.

    Interactions (``toolConfirmation``, ``chatInput``) and client tool calls waiting for their
    client (``toolClientExecution``) each end with ``session/inputNeededRemoved``: when they
    are settled, and at the latest when their turn is over.
    """

    def __init__(self, ctx: ChatContext) -> None:
        self._ctx = ctx
        self._interactions: dict[str, PendingInteraction] = {}
        """Pending interactions by the provider's interaction id (the AHP ``requestId``)."""
        self._executions: dict[str, str] = {}
        """Client tool calls waiting for their client: AHP toolCallId -> session input id."""

    # interactions

    def interactions(self) -> Mapping[str, PendingInteraction]:
        return self._interactions

    def interaction(self, interaction_id: str) -> PendingInteraction | None:
        return self._interactions.get(interaction_id)

    def add_interaction(self, pending: PendingInteraction) -> None:
        self._interactions[pending.interaction.id] = pending

    def pop_interaction(self, interaction_id: str) -> PendingInteraction | None:
        return self._interactions.pop(interaction_id, None)

    def release_interaction(self, interaction_id: str) -> list[Emitted]:
        """The interaction is settled: its input request goes, if it was still open."""
        pending = self._interactions.pop(interaction_id, None)
        return [] if pending is None else [self.removed(pending.input_id)]

    # client tool executions

    def executions(self) -> frozenset[str]:
        return frozenset(self._executions)

    def has_execution(self, tool_call_id: str) -> bool:
        return tool_call_id in self._executions

    def add_execution(self, tool_call_id: str, input_id: str) -> None:
        self._executions[tool_call_id] = input_id

    def release_execution(self, tool_call_id: str) -> list[Emitted]:
        """The client tool call is over: its input request goes, if it was still open."""
        input_id = self._executions.pop(tool_call_id, None)
        return [] if input_id is None else [self.removed(input_id)]

    # all of them

    def clear(self) -> list[Emitted]:
        """The turn is over: every open request goes, interactions first."""
        pending, self._interactions = list(self._interactions.values()), {}
        executions, self._executions = list(self._executions.values()), {}
        return [self.removed(p.input_id) for p in pending] + [self.removed(i) for i in executions]

    def removed(self, input_id: str) -> Emitted:
        return self._ctx.session({"type": "session/inputNeededRemoved", "id": input_id})
