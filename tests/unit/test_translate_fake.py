"""The fake provider's demo tour, live, through both tables, with this test as the client.

Every event the real fake provider emits goes through ``EventTranslator`` (strict wire check and
real reducers, as everywhere in these tests); every request it raises is answered the way a host
answers a client: ``plan_command`` on the client's action, then the planned Conversation call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
import trio.testing
from ahp_bridge_fake import create_provider
from ahp_bridge_fake.testing import EventLog

from ahp_bridge.agentapi import Conversation, OpenRequest
from ahp_bridge.translate import (
    CallPlan,
    CommandContext,
    Respond,
    Send,
    plan_command,
    synced_answers,
)

from .test_translate_support import Harness, user_turn


def _context(h: Harness) -> CommandContext:
    inputs = h.tr.pending_inputs()
    return CommandContext(
        active_turn_id=h.tr.active_turn_id,
        permissions=h.tr.pending_permissions(),
        inputs=inputs,
        input_answers={rid: synced_answers(h.chat, rid) for rid in inputs},
    )


async def _client(h: Harness, conversation: Conversation, action: dict[str, Any]) -> None:
    """What the host does with a client action: plan, apply, then make the calls."""
    plan = plan_command(action, _context(h))
    assert isinstance(plan, CallPlan), plan
    h.client(action)
    for call in plan.calls:
        assert isinstance(call, Respond | Send), call
        if isinstance(call, Send):
            await conversation.send(call.prompt)
        else:
            await conversation.respond(call.interaction_id, call.answer)


def _answer(request: dict[str, Any]) -> dict[str, Any]:
    """The client's reply to an input request: approve the tool, pick "Go"."""
    if request["kind"] == "toolConfirmation":
        options = request["toolCall"]["options"]
        return {
            "type": "chat/toolCallConfirmed",
            "turnId": request["turnId"],
            "toolCallId": request["toolCall"]["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
            "selectedOptionId": next(o["id"] for o in options if o["kind"] == "approve"),
        }
    question = request["request"]["questions"][0]
    go = next(o["id"] for o in question["options"] if o["label"] == "Go")
    answer = {"state": "submitted", "value": {"kind": "selected", "value": go}}
    return {
        "type": "chat/inputCompleted",
        "requestId": request["request"]["id"],
        "response": "accept",
        "answers": {question["id"]: answer},
    }


async def test_demo_tour_end_to_end(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    h = Harness()
    log = EventLog()
    provider = create_provider({"data_dir": str(tmp_path)})
    async with provider:
        conversation = await provider.open(OpenRequest(events=log, workdir=str(tmp_path)))
        await _client(h, conversation, user_turn("turn-1", "show me"))
        seen = 0
        while "activeTurn" in h.chat:
            event = await log.wait_for(lambda _e: True, after=seen, timeout=600)
            seen = log.events.index(event, seen) + 1
            for _, action in h.feed(event):
                if action["type"] == "session/inputNeededSet":
                    await _client(h, conversation, _answer(action["request"]))
        await conversation.close()

    (turn,) = h.chat["turns"]
    assert turn["state"] == "complete"
    kinds = [p["kind"] for p in turn["responseParts"]]
    assert kinds[:3] == ["reasoning", "markdown", "toolCall"]
    tools = [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]
    assert [t["status"] for t in tools] == ["completed", "completed"]
    assert tools[0]["confirmed"] == "not-needed"
    assert tools[1]["confirmed"] == "user-action"
    assert tools[1]["selectedOption"]["kind"] == "approve"
    (request,) = [p for p in turn["responseParts"] if p["kind"] == "inputRequest"]
    assert request["response"] == "accept"
    texts = "".join(p.get("content", "") for p in turn["responseParts"] if p["kind"] == "markdown")
    assert "Thanks, I wrote `NOTES.md`." in texts
    assert "Noted, the examples will follow your choice." in texts
    assert h.session["title"] == "Tour of the fake agent"
    assert "inputNeeded" not in h.session
    assert turn["usage"]["inputTokens"] == 1850
    assert turn["usage"]["_meta"] == {"ahpBridge.aiUnits": 1.0}
