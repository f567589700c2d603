"""The fake's UtilityRunner: one scripted turn in a throwaway conversation with only host tools.

The script rule matching the utility's prompt plays as the turn of a conversation that is never
recorded (no transcript file, not reopenable) and is closed whatever the outcome. Its only
tools are the request's host tools (``host_tool`` steps call ``req.call_tool``; their calls
have no task id); every permission it asks for is rejected and every question declined, as
the contract says. The reply is the main agent's last assistant text.
"""

from __future__ import annotations

import math
import uuid
from typing import TYPE_CHECKING

import trio

from ahp_bridge.agentapi import (
    AgentAPIError,
    Answer,
    Event,
    EventKind,
    InteractionKind,
    InteractionState,
    ItemKind,
    Prompt,
    TurnState,
    UtilityRequest,
)

from .conversation import FakeConversation
from .transcript import Meta, Transcript

if TYPE_CHECKING:
    from .provider import FakeProvider


class _UtilitySink:
    """Collects the reply and refuses every interaction the turn asks."""

    def __init__(self, provider: FakeProvider) -> None:
        self.provider = provider
        self.conversation: FakeConversation | None = None
        self.reply = ""
        self.ended = trio.Event()
        self.error = ""

    def emit(self, event: Event) -> None:
        item, interaction, turn = event.item, event.interaction, event.turn
        if item is not None and item.kind is ItemKind.ASSISTANT and not item.agent_id:
            self.reply = item.text
        elif interaction is not None and interaction.state is InteractionState.PENDING:
            if interaction.kind is InteractionKind.PERMISSION:
                reject = next((o for o in interaction.options if o.reject), None)
                answer = Answer(decision=reject.id) if reject else Answer(reject=True)
            else:
                answer = Answer(reject=True)
            assert self.conversation is not None
            self.provider.spawn(self.conversation.respond, interaction.id, answer)
        elif event.kind is EventKind.TURN and turn is not None and turn.state != TurnState.WORKING:
            if turn.state is TurnState.FAILED:
                self.error = turn.error or "the utility turn failed"
            self.ended.set()
        elif event.kind is EventKind.EXIT:
            self.error = event.error or "the runtime exited"
            self.ended.set()


async def run_utility(provider: FakeProvider, req: UtilityRequest) -> str:
    """UtilityRunner.run_utility for the fake (see the module docstring)."""
    model = req.model or provider.script.default_model
    meta = Meta(id=f"fake-utility-{uuid.uuid4()}", workdir=req.workdir, model=model)
    conversation = FakeConversation(provider, Transcript(meta, None), 0)
    sink = _UtilitySink(provider)
    sink.conversation = conversation
    conversation.attach(sink)
    conversation.host_tools = {tool.name: tool for tool in req.tools}
    conversation.call_tool = req.call_tool
    timeout = req.timeout.total_seconds() if req.timeout.total_seconds() > 0 else math.inf
    try:
        with trio.move_on_after(timeout) as scope:
            await conversation.send(Prompt(text=req.prompt, attachments=list(req.attachments)))
            await sink.ended.wait()
        if scope.cancelled_caught:
            raise AgentAPIError("the utility call did not finish in time")
    finally:
        await conversation.close()
        provider.drop_files(meta.id)
    if sink.error:
        raise AgentAPIError(sink.error)
    return sink.reply
