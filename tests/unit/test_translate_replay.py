"""Recorded real Copilot streams, through the adapter's mapping and then the event translator.

The fixtures (``tests/fixtures/copilot/*.jsonl``) are SDK events the real CLI produced; the
Copilot adapter's pure ``EventMapper`` turns them into agentapi Events. Replaying them here checks
the translator against real event order (user item vs. working, permission before or after the
tool starts, subagent transcripts, aborts, upstream errors), with every action strict-validated
and reduced by the real reducers. A second mode plays the client too: it answers each request
through ``plan_command`` as the host would, so the provider's later completion is our answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ahp_bridge_copilot.mapping import EventMapper

from ahp_bridge.agentapi import InteractionState
from ahp_bridge.translate import CallPlan, CommandContext, EventTranslator, Respond, plan_command

from .test_translate_support import CHAT, SESSION, Harness

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "copilot"
SCENARIOS = sorted(p.stem for p in FIXTURES.glob("*.jsonl") if p.stem != "history")


def replay(name: str, *, answer: bool = False) -> Harness:
    """Play one recorded turn: the client starts it, the provider's events follow."""
    h = Harness()
    mapper = EventMapper()
    h.start_turn("turn-1", "hello")
    h.feed(*mapper.begin_turn())
    for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines():
        for event in mapper.map(json.loads(line)):
            emitted = h.feed(event)
            if answer:
                for _, action in emitted:
                    if action["type"] == "session/inputNeededSet":
                        _answer(h, mapper, action["request"])
    return h


def _answer(h: Harness, mapper: EventMapper, request: dict[str, Any]) -> None:
    """Answer as a client would, plan the call as the host would, tell the mapper we did."""
    if request["kind"] == "toolConfirmation":
        client = {
            "type": "chat/toolCallConfirmed",
            "turnId": request["turnId"],
            "toolCallId": request["toolCall"]["toolCallId"],
            "approved": True,
            "confirmed": "user-action",
        }
    else:
        client = {"type": "chat/inputCompleted", "requestId": request["request"]["id"]}
        client["response"] = "decline"
    ctx = CommandContext(
        active_turn_id=h.tr.active_turn_id,
        permissions=h.tr.pending_permissions(),
        inputs=h.tr.pending_inputs(),
    )
    plan = plan_command(client, ctx)
    assert isinstance(plan, CallPlan), plan
    (respond,) = plan.calls
    assert isinstance(respond, Respond)
    state = InteractionState.ANSWERED if respond.answer.decision else InteractionState.REJECTED
    mapper.note_response(respond.interaction_id, state)
    follow = h.client(client)
    assert [a["type"] for _, a in follow] == ["session/inputNeededRemoved"]


def kinds(turn: dict[str, Any]) -> list[str]:
    return [part["kind"] for part in turn["responseParts"]]


def tools(turn: dict[str, Any]) -> list[dict[str, Any]]:
    return [p["toolCall"] for p in turn["responseParts"] if p["kind"] == "toolCall"]


@pytest.mark.parametrize("answer", [False, True], ids=["resolved-elsewhere", "client-answers"])
@pytest.mark.parametrize("name", SCENARIOS)
def test_every_recorded_stream_reduces_cleanly(name: str, answer: bool) -> None:
    h = replay(name, answer=answer)
    assert "inputNeeded" not in h.session
    assert h.tr.pending_permissions() == {} and h.tr.pending_inputs() == {}
    if name == "title_model":
        return  # a title and model change only; the turn is still running
    assert "activeTurn" not in h.chat
    # A background subagent's end wakes the main agent: the CLI starts a second turn itself.
    expected = 2 if name == "bg_subagent" else 1
    assert len(h.chat["turns"]) == expected
    if expected == 2:
        assert h.chat["turns"][1]["message"]["origin"] == {"kind": "agent"}
    for turn in h.chat["turns"]:
        for tool in tools(turn):
            assert tool["status"] in ("completed", "cancelled"), tool


def test_text_and_reasoning_stream_into_two_parts() -> None:
    h = replay("text_reasoning")
    (turn,) = h.chat["turns"]
    assert turn["state"] == "complete"
    assert kinds(turn) == ["reasoning", "markdown"]
    assert all(part["content"] for part in turn["responseParts"])
    assert turn["usage"]["model"]
    assert h.session["title"]


@pytest.mark.parametrize("answer", [False, True])
def test_approved_shell_command_completes_with_its_output(answer: bool) -> None:
    h = replay("shell_approved", answer=answer)
    (turn,) = h.chat["turns"]
    assert kinds(turn) == ["toolCall", "markdown"]
    (tool,) = tools(turn)
    assert tool["status"] == "completed" and tool["success"] is True
    assert "hi" in tool["content"][0]["text"]
    assert tool["confirmed"] == ("user-action" if answer else "setting")


def test_denied_shell_command_fails() -> None:
    (turn,) = replay("shell_denied").chat["turns"]
    (tool,) = tools(turn)
    assert tool["success"] is False
    assert tool["error"]["message"]


def test_question_becomes_an_input_part_that_is_resolved() -> None:
    (turn,) = replay("ask_user", answer=True).chat["turns"]
    assert kinds(turn) == ["toolCall", "inputRequest", "markdown"]
    request_part = turn["responseParts"][1]
    assert request_part["response"] == "decline"
    assert request_part["request"]["questions"][0]["kind"] == "single-select"


def test_subagent_shows_as_content_of_its_tool_and_its_text_stays_out() -> None:
    h = replay("subagent")
    (turn,) = h.chat["turns"]
    assert kinds(turn) == ["toolCall", "markdown"]
    (tool,) = tools(turn)
    refs = [c for c in tool["content"] if c["type"] == "subagent"]
    assert len(refs) == 1 and refs[0]["resource"].startswith("ahp-chat:/subagent/")
    assert "SUBTASK" not in turn["responseParts"][1]["content"]


def test_abort_cancels_the_turn() -> None:
    (turn,) = replay("abort").chat["turns"]
    assert turn["state"] == "cancelled"


def test_upstream_error_fails_the_turn_with_a_notice() -> None:
    h = replay("upstream_error")
    (turn,) = h.chat["turns"]
    assert turn["state"] == "error"
    error = turn["responseParts"][-1]["error"]
    assert error["errorType"] == "turnFailed"
    assert kinds(turn) == ["systemNotification", "error"]
    assert turn["responseParts"][0]["content"] == error["message"]


def test_steered_turn_keeps_text_after_each_tool_in_its_own_part() -> None:
    (turn,) = replay("steer", answer=True).chat["turns"]
    assert kinds(turn) == ["toolCall", "markdown", "toolCall", "markdown"]
    assert len({p["id"] for p in turn["responseParts"] if p["kind"] == "markdown"}) == 2


def test_recorded_subagent_gets_its_own_chat() -> None:
    """The same recorded stream, fed to a subagent translator, rebuilds the subagent's chat."""
    lines = [json.loads(line) for line in (FIXTURES / "subagent.jsonl").read_text().splitlines()]
    mapper = EventMapper()
    events = list(mapper.begin_turn())
    for line in lines:
        events += mapper.map(line)
    agent_id = next(e.subagent.id for e in events if e.subagent is not None)
    main = Harness()
    main.start_turn()
    sub = Harness()
    sub.tr = EventTranslator(CHAT, SESSION, sub.ids, sub.clock, agent_id=agent_id)
    for event in events:
        main.feed(event)
        sub.feed(event)
    (turn,) = sub.chat["turns"]
    assert turn["state"] == "complete"
    assert turn["message"]["origin"] == {"kind": "agent"}
    assert "SUBTASK" in turn["message"]["text"]
    assert kinds(turn) == ["markdown"]
    (ref,) = [c for c in tools(main.chat["turns"][0])[0]["content"] if c["type"] == "subagent"]
    assert ref["resource"] == EventTranslator._default_subagent_uri(agent_id)
    # Nothing of the subagent's transcript leaked into the main chat, and vice versa.
    main_text = [p["content"] for p in main.chat["turns"][0]["responseParts"] if "content" in p]
    assert turn["responseParts"][0]["content"] not in main_text
