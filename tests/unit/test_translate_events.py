"""EventTranslator: agentapi Events -> AHP actions, checked against the real reducers."""

from __future__ import annotations

import base64
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from ahp_bridge.agentapi import (
    Activity,
    AssistedReview,
    BackgroundTask,
    BackgroundTasks,
    Context,
    Elicitation,
    Event,
    EventKind,
    Field,
    Image,
    InteractionKind,
    InteractionState,
    ItemKind,
    PlanReview,
    Question,
    Retry,
    SkillLoad,
    Subagent,
    SubagentRun,
    SubagentStatus,
    TaskCompletion,
    TodoList,
    TokenUsage,
    ToolStatus,
    TurnState,
    Usage,
)
from ahp_bridge.state import status as st
from ahp_bridge.translate import events as events_module
from ahp_bridge.translate._wire import iso_from_ms

from .test_translate_support import (
    CHAT,
    SESSION,
    T0,
    Harness,
    ev_delta,
    ev_interaction,
    ev_item,
    ev_tool,
    ev_turn,
    permission,
    question,
    types,
)

A = ItemKind.ASSISTANT
R = ItemKind.REASONING


@pytest.fixture
def h() -> Harness:
    return Harness()


# ------------------------------------------------------------------ turns and text


def test_client_turn_streams_markdown_and_completes_with_duration(h: Harness) -> None:
    h.start_turn("turn-1", "hello")
    assert h.feed(ev_turn(TurnState.WORKING)) == []
    out = h.feed(ev_delta(A, "m1", "Hel"), ev_delta(A, "m1", "lo"), ev_item(A, "m1", "Hello!"))
    assert types(out) == ["chat/responsePart", "chat/delta", "chat/delta"]
    assert out[0][1]["part"] == {"kind": "markdown", "id": "id-1", "content": "Hel"}
    assert [a["content"] for _, a in out[1:]] == ["lo", "!"]
    h.clock.advance(2500)
    out = h.feed(ev_turn(TurnState.COMPLETED))
    assert out == [(CHAT, {"type": "chat/turnComplete", "turnId": "turn-1", "duration": 2500})]
    turn = h.chat["turns"][-1]
    assert turn["state"] == "complete"
    assert turn["message"]["text"] == "hello"
    assert turn["responseParts"] == [{"kind": "markdown", "id": "id-1", "content": "Hello!"}]
    assert h.chat["status"] == st.IDLE
    assert h.tr.active_turn_id is None


def test_provider_started_turn_takes_its_message_from_the_user_item(h: Harness) -> None:
    assert h.feed(ev_item(ItemKind.USER, "u1", "from the CLI")) == []
    out = h.feed(ev_turn(TurnState.WORKING))
    assert out == [
        (
            CHAT,
            {
                "type": "chat/turnStarted",
                "turnId": "id-1",
                "startedAt": iso_from_ms(T0),
                "message": {"text": "from the CLI", "origin": {"kind": "user"}},
                "_meta": {"ahpBridge.origin": "provider"},
            },
        )
    ]
    assert h.active["id"] == "id-1"
    assert h.chat["status"] == st.IN_PROGRESS
    # A second working report is the same turn, not a new one.
    assert h.feed(ev_turn(TurnState.WORKING)) == []
    assert len(h.chat["turns"]) == 0


def test_provider_started_turn_waits_one_event_for_its_user_item(h: Harness) -> None:
    assert h.feed(ev_turn(TurnState.WORKING)) == []
    out = h.feed(ev_item(ItemKind.USER, "u1", "typed in the CLI"))
    assert types(out) == ["chat/turnStarted"]
    assert h.active["message"] == {"text": "typed in the CLI", "origin": {"kind": "user"}}
    assert h.active["startedAt"] == iso_from_ms(T0)


def test_session_level_events_do_not_force_the_provider_turn_out(h: Harness) -> None:
    h.feed(ev_turn(TurnState.WORKING))
    out = h.feed(Event(kind=EventKind.CONTEXT, context=Context(used=1, limit=2)))
    assert types(out) == ["session/metaChanged"]
    assert h.tr.active_turn_id == "id-1"  # busy already, though not yet announced
    h.feed(ev_item(ItemKind.USER, "u1", "queued from another client"))
    assert h.active["message"]["text"] == "queued from another client"


def test_provider_started_turn_without_user_item_is_an_agent_turn(h: Harness) -> None:
    h.feed(ev_turn(TurnState.WORKING))
    h.clock.advance(30)
    out = h.feed(ev_delta(A, "m1", "continuing"))
    assert types(out) == ["chat/turnStarted", "chat/responsePart"]
    assert h.active["message"] == {"text": "", "origin": {"kind": "agent"}}
    assert h.active["startedAt"] == iso_from_ms(T0)
    out = h.feed(ev_turn(TurnState.COMPLETED))
    assert out[0][1]["duration"] == 30


def test_autopilot_continuation_is_an_agent_turn(h: Harness) -> None:
    h.feed(ev_turn(TurnState.WORKING))
    h.feed(ev_item(ItemKind.USER, "u1", "continue", delivery="autopilot"))
    assert h.active["message"] == {"text": "continue", "origin": {"kind": "agent"}}


def test_provider_turn_that_ends_at_once_is_still_recorded(h: Harness) -> None:
    h.feed(ev_turn(TurnState.WORKING))
    out = h.feed(ev_turn(TurnState.COMPLETED))
    assert types(out) == ["chat/turnStarted", "chat/turnComplete"]
    assert h.chat["turns"][-1]["state"] == "complete"


def test_reasoning_then_markdown_become_separate_parts(h: Harness) -> None:
    h.start_turn()
    out = h.feed(
        ev_delta(R, "r1", "think"),
        ev_delta(R, "r1", "ing"),
        ev_delta(A, "m1", "answer"),
        ev_item(R, "r1", "thinking"),  # already streamed in full: nothing new
    )
    assert types(out) == ["chat/responsePart", "chat/reasoning", "chat/responsePart"]
    assert h.parts == [
        {"kind": "reasoning", "id": "id-1", "content": "thinking"},
        {"kind": "markdown", "id": "id-2", "content": "answer"},
    ]


def test_text_after_a_tool_call_starts_a_new_markdown_part(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_delta(A, "m1", "Let me look. "))
    h.feed(ev_tool("call-1", ToolStatus.RUNNING, title="List files", input="ls"))
    out = h.feed(ev_delta(A, "m1", "Done."))
    assert types(out) == ["chat/responsePart"]
    kinds = [p["kind"] for p in h.parts]
    assert kinds == ["markdown", "toolCall", "markdown"]
    assert h.parts[2]["content"] == "Done."


def test_a_rewritten_item_does_not_duplicate_streamed_text(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_delta(A, "m1", "draft"))
    assert h.feed(ev_item(A, "m1", "entirely different")) == []
    assert h.parts == [{"kind": "markdown", "id": "id-1", "content": "draft"}]


def test_whole_item_without_deltas_creates_the_part(h: Harness) -> None:
    h.start_turn()
    assert h.feed(ev_item(A, "m1", "")) == []
    out = h.feed(ev_item(A, "m1", "complete answer"))
    assert types(out) == ["chat/responsePart"]
    assert h.parts[0]["content"] == "complete answer"


def test_content_outside_a_turn_is_dropped(h: Harness) -> None:
    assert h.feed(ev_delta(A, "m1", "stray"), ev_tool("c", ToolStatus.RUNNING)) == []
    assert h.log == []


def test_notice_becomes_a_system_notification_once(h: Harness) -> None:
    h.start_turn()
    out = h.feed(ev_item(ItemKind.NOTICE, "n1", "Model retried"))
    assert out[0][1]["part"] == {
        "kind": "systemNotification",
        "content": "Model retried",
        "_meta": {"ahpBridge.itemId": "n1"},
    }
    assert h.feed(ev_item(ItemKind.NOTICE, "n1", "Model retried")) == []
    assert [p["kind"] for p in h.parts] == ["systemNotification"]


def last_error(h: Harness) -> dict[str, Any]:
    """The error of the newest turn: its last response part (AHP 1.0)."""
    part = h.chat["turns"][-1]["responseParts"][-1]
    assert part["kind"] == "error"
    return part["error"]  # type: ignore[no-any-return]


def test_turn_failed_ends_with_chat_error(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_turn(TurnState.WORKING))
    h.clock.advance(10)
    out = h.feed(ev_turn(TurnState.FAILED, error="rate limited"))
    assert out[0][1] == {
        "type": "chat/error",
        "turnId": "turn-1",
        "duration": 10,
        "part": {"kind": "error", "error": {"errorType": "turnFailed", "message": "rate limited"}},
    }
    assert h.chat["turns"][-1]["state"] == "error"
    assert "error" not in h.chat["turns"][-1]  # 1.0: the error is the last part, not Turn.error
    assert h.chat["status"] == st.ERROR


def test_usage_between_turns_still_reaches_the_session(h: Harness) -> None:
    out = h.feed(Event(kind=EventKind.USAGE, usage=Usage(ai_units=2.0)))
    assert types(out) == ["session/metaChanged"]
    assert h.session["_meta"] == {"ahpBridge.usage": {"ai_units": 2.0}}


def test_turn_completion_receipt_rides_in_meta(h: Harness) -> None:
    h.start_turn()
    receipt = TaskCompletion(decision="accepted", user_item_id="u1", summary="done")
    out = h.feed(ev_turn(TurnState.COMPLETED, completion=receipt, model="m1"))
    assert out[0][1]["_meta"] == {
        "ahpBridge.model": "m1",
        "ahpBridge.completion": {"decision": "accepted", "user_item_id": "u1", "summary": "done"},
    }


def test_turn_cancelled_by_provider_carries_its_reason(h: Harness) -> None:
    h.start_turn()
    out = h.feed(ev_turn(TurnState.CANCELLED, reason="autopilot_credit_limit"))
    assert out[0][1]["type"] == "chat/turnCancelled"
    assert out[0][1]["_meta"] == {"ahpBridge.reason": "autopilot_credit_limit"}
    assert h.chat["turns"][-1]["state"] == "cancelled"


def test_fail_turn_ends_the_turn_for_the_host(h: Harness) -> None:
    h.start_turn()
    out = h.tr.fail_turn("submissionUncertain", "the prompt may not have arrived")
    h.apply(out)
    assert types(out) == ["chat/error"]
    assert last_error(h)["errorType"] == "submissionUncertain"
    assert h.tr.fail_turn("x", "y") == []


def test_a_send_that_failed_but_went_through_shows_as_a_provider_turn(h: Harness) -> None:
    h.start_turn("turn-1", "maybe sent")
    h.apply(h.tr.fail_turn("submissionUncertain", "unknown outcome"))
    h.feed(ev_turn(TurnState.WORKING), ev_item(ItemKind.USER, "u1", "maybe sent"))
    assert h.active["id"] == "id-1"
    assert h.active["message"]["text"] == "maybe sent"
    h.feed(ev_delta(A, "m1", "answer"), ev_turn(TurnState.COMPLETED))
    assert [t["state"] for t in h.chat["turns"]] == ["error", "complete"]


# ------------------------------------------------------------------ cancellation races


def test_client_cancel_drops_the_providers_late_end_and_content(h: Harness) -> None:
    h.start_turn("turn-1")
    h.feed(ev_turn(TurnState.WORKING), ev_delta(A, "m1", "partial"))
    h.client({"type": "chat/turnCancelled", "turnId": "turn-1", "duration": 5})
    assert h.chat["turns"][-1]["state"] == "cancelled"
    assert h.feed(ev_delta(A, "m1", " late"), ev_turn(TurnState.CANCELLED)) == []
    # The next provider turn starts normally.
    assert h.feed(ev_turn(TurnState.WORKING)) == []
    assert types(h.feed(ev_delta(A, "m9", "new"))) == ["chat/turnStarted", "chat/responsePart"]


def test_cancel_then_new_client_turn_is_not_ended_by_the_old_cancel(h: Harness) -> None:
    h.start_turn("turn-1")
    h.feed(ev_turn(TurnState.WORKING))
    h.client({"type": "chat/turnCancelled", "turnId": "turn-1", "duration": 5})
    h.start_turn("turn-2", "again")
    # The provider now reports the end of turn-1, then starts turn-2.
    assert h.feed(ev_turn(TurnState.CANCELLED)) == []
    assert h.active["id"] == "turn-2"
    assert h.feed(ev_turn(TurnState.WORKING), ev_delta(A, "m2", "ok")) != []
    out = h.feed(ev_turn(TurnState.COMPLETED))
    assert out[0][1]["turnId"] == "turn-2"
    assert [t["state"] for t in h.chat["turns"]] == ["cancelled", "complete"]


def test_turn_end_without_working_still_ends_a_client_turn(h: Harness) -> None:
    h.start_turn("turn-1")
    out = h.feed(ev_turn(TurnState.COMPLETED))
    assert types(out) == ["chat/turnComplete"]


# ------------------------------------------------------------------ tool calls


def test_tool_call_running_then_completed(h: Harness) -> None:
    h.start_turn()
    out = h.feed(ev_tool("call-1", ToolStatus.RUNNING, title="List files", input='{"c":"ls"}'))
    assert out == [
        (
            CHAT,
            {
                "type": "chat/toolCallStart",
                "turnId": "turn-1",
                "toolCallId": "call-1",
                "toolName": "bash",
                "displayName": "List files",
            },
        ),
        (
            CHAT,
            {
                "type": "chat/toolCallReady",
                "turnId": "turn-1",
                "toolCallId": "call-1",
                "invocationMessage": "List files",
                "toolInput": '{"c":"ls"}',
                "confirmed": "not-needed",
            },
        ),
    ]
    assert h.tool_state("call-1")["status"] == "running"
    # A progress re-upsert adds nothing AHP 0.7.0 can show.
    assert h.feed(ev_tool("call-1", ToolStatus.RUNNING, title="List files", progress="50%")) == []
    out = h.feed(ev_tool("call-1", ToolStatus.COMPLETED, title="List files", output="a\nb"))
    assert out[0][1]["result"] == {
        "success": True,
        "pastTenseMessage": "List files: done",
        "content": [{"type": "text", "text": "a\nb"}],
    }
    state = h.tool_state("call-1")
    assert state["status"] == "completed"
    assert state["confirmed"] == "not-needed"
    assert state["success"] is True
    # A repeated completion changes nothing.
    assert h.feed(ev_tool("call-1", ToolStatus.COMPLETED, output="a\nb")) == []


def test_failed_tool_reports_error_and_exit_code(h: Harness) -> None:
    h.start_turn()
    out = h.feed(ev_tool("call-1", ToolStatus.FAILED, output="boom", exit_code=2))
    assert types(out) == ["chat/toolCallStart", "chat/toolCallReady", "chat/toolCallComplete"]
    complete = out[-1][1]
    assert complete["result"]["success"] is False
    assert complete["result"]["error"] == {"message": "boom", "code": "2"}
    assert complete["_meta"] == {"ahpBridge.exitCode": 2}
    assert h.tool_state("call-1")["error"]["code"] == "2"


def test_tool_images_are_embedded_within_a_budget(h: Harness) -> None:
    h.start_turn()
    small = Image(mime="image/png", data=b"\x89PNG small")
    huge = Image(mime="image/png", data=b"x" * (events_module.MAX_RESULT_IMAGE_BYTES + 1))
    digest_only = Image(mime="image/png", sha256="ab" * 32)
    event = ev_tool("call-1", ToolStatus.COMPLETED, output="shot")
    assert event.item is not None
    event.item.images = [small, huge, digest_only]
    out = h.feed(event)
    complete = out[-1][1]
    assert complete["result"]["content"] == [
        {"type": "text", "text": "shot"},
        {
            "type": "embeddedResource",
            "data": base64.b64encode(b"\x89PNG small").decode(),
            "contentType": "image/png",
        },
    ]
    assert complete["_meta"] == {"ahpBridge.imagesOmitted": 2}


def test_pending_tool_waits_streaming_until_it_runs(h: Harness) -> None:
    h.start_turn()
    assert types(h.feed(ev_tool("call-1", ToolStatus.PENDING))) == ["chat/toolCallStart"]
    assert h.tool_state("call-1")["status"] == "streaming"
    assert types(h.feed(ev_tool("call-1", ToolStatus.RUNNING))) == ["chat/toolCallReady"]
    assert h.tool_state("call-1")["status"] == "running"


def test_unfinished_tool_calls_are_cancelled_when_the_turn_ends(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_tool("call-1", ToolStatus.RUNNING))
    h.feed(ev_turn(TurnState.COMPLETED))
    tool = h.chat["turns"][-1]["responseParts"][0]["toolCall"]
    assert (tool["status"], tool["reason"]) == ("cancelled", "skipped")


# ------------------------------------------------------------------ permissions


def test_permission_on_a_running_tool_asks_and_mirrors_to_the_session(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_tool("call-1", ToolStatus.RUNNING, title="Shell", input="ls -la"))
    out = h.feed(ev_interaction(permission(tool_call_id="call-1")))
    assert types(out) == ["chat/toolCallReady", "session/inputNeededSet"]
    ready = out[0][1]
    assert "confirmed" not in ready
    assert ready["invocationMessage"] == "ls -la"
    assert ready["confirmationTitle"] == "Run shell command"
    assert ready["options"] == [
        {"id": "once", "label": "Allow once", "kind": "approve", "group": 0},
        {"id": "session", "label": "Allow for this session", "kind": "approve", "group": 0},
        {"id": "deny", "label": "Deny", "kind": "deny", "group": 1},
    ]
    assert out[1][0] == SESSION
    (entry,) = h.session["inputNeeded"]
    assert entry["kind"] == "toolConfirmation"
    assert entry["chat"] == CHAT
    assert entry["turnId"] == "turn-1"
    assert entry["toolCall"] == h.tool_state("call-1")
    assert h.tool_state("call-1")["status"] == "pending-confirmation"
    assert h.chat["status"] == st.INPUT_NEEDED
    assert h.tr.pending_permissions() == {"call-1": permission(tool_call_id="call-1")}


@pytest.mark.parametrize(
    ("recommendation", "safety"), [("approve", 1.0), ("requireApproval", 0.0), ("error", None)]
)
def test_assisted_review_becomes_a_risk_assessment(
    h: Harness, recommendation: str, safety: float | None
) -> None:
    h.start_turn()
    review = AssistedReview(recommendation=recommendation, model="judge-1", reason="reads only")
    out = h.feed(ev_interaction(permission(tool_call_id="c1", assisted=review)))
    ready = out[1][1]
    if safety is None:
        assert "riskAssessment" not in ready
    else:
        assert ready["riskAssessment"] == {
            "kind": "judge",
            "status": "complete",
            "reason": "reads only",
            "safety": safety,
        }
        assert h.tool_state("c1")["riskAssessment"]["safety"] == safety


def test_client_confirmation_resolves_and_later_answer_event_is_silent(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_tool("call-1", ToolStatus.RUNNING))
    h.feed(ev_interaction(permission(tool_call_id="call-1")))
    follow = h.client(
        {
            "type": "chat/toolCallConfirmed",
            "turnId": "turn-1",
            "toolCallId": "call-1",
            "approved": True,
            "confirmed": "user-action",
            "selectedOptionId": "session",
        }
    )
    assert types(follow) == ["session/inputNeededRemoved"]
    assert "inputNeeded" not in h.session
    assert h.tool_state("call-1")["selectedOption"]["id"] == "session"
    answered = permission(tool_call_id="call-1", state=InteractionState.ANSWERED)
    assert h.feed(ev_interaction(answered)) == []
    out = h.feed(ev_tool("call-1", ToolStatus.COMPLETED, output="ok"))
    assert types(out) == ["chat/toolCallComplete"]
    state = h.tool_state("call-1")
    assert (state["status"], state["confirmed"]) == ("completed", "user-action")
    assert h.tr.pending_permissions() == {}


def test_permission_for_an_unknown_tool_call_creates_it_first(h: Harness) -> None:
    h.start_turn()
    out = h.feed(ev_interaction(permission(tool_call_id="call-9", intention="clean up")))
    assert types(out) == ["chat/toolCallStart", "chat/toolCallReady", "session/inputNeededSet"]
    assert out[0][1]["toolCallId"] == "call-9"
    assert out[0][1]["intention"] == "clean up"
    # The tool item arriving later does not restart it; completion resolves the request.
    assert h.feed(ev_tool("call-9", ToolStatus.RUNNING)) == []
    out = h.feed(ev_tool("call-9", ToolStatus.COMPLETED))
    assert types(out) == ["chat/toolCallComplete", "session/inputNeededRemoved"]
    assert h.tool_state("call-9")["status"] == "completed"
    assert "inputNeeded" not in h.session


def test_permission_without_tool_call_id_gets_its_own_tool_call(h: Harness) -> None:
    h.start_turn()
    out = h.feed(ev_interaction(permission("perm-7")))
    assert out[0][1]["toolCallId"] == "#perm-7"
    assert h.tr.pending_permissions().keys() == {"#perm-7"}


def test_permission_expired_elsewhere_leaves_the_decision_to_the_tool(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_tool("call-1", ToolStatus.RUNNING, title="Shell"))
    h.feed(ev_interaction(permission(tool_call_id="call-1")))
    expired = permission(
        tool_call_id="call-1", state=InteractionState.EXPIRED, resolution="approved"
    )
    out = h.feed(ev_interaction(expired))
    assert out == [
        (
            CHAT,
            {
                "type": "chat/toolCallReady",
                "turnId": "turn-1",
                "toolCallId": "call-1",
                "invocationMessage": "Shell",
                "confirmed": "setting",
                "_meta": {"ahpBridge.resolution": "expired"},
            },
        ),
        (SESSION, {"type": "session/inputNeededRemoved", "id": f"{CHAT}#perm-1"}),
    ]
    assert h.tool_state("call-1")["status"] == "running"
    assert h.chat["status"] == st.IN_PROGRESS
    # The provider ran it after all (recorded Copilot streams do exactly this).
    out = h.feed(ev_tool("call-1", ToolStatus.COMPLETED, output="hi", exit_code=0))
    assert types(out) == ["chat/toolCallComplete"]
    state = h.tool_state("call-1")
    assert state["success"] is True
    assert state["_meta"] == {"ahpBridge.resolution": "expired", "ahpBridge.exitCode": 0}


def test_permission_expired_at_turn_end_leaves_the_tool_skipped(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_interaction(permission(tool_call_id="call-1")))
    h.feed(ev_interaction(permission(tool_call_id="call-1", state=InteractionState.EXPIRED)))
    h.feed(ev_turn(TurnState.COMPLETED))
    tool = h.tool_state("call-1")
    assert (tool["status"], tool["reason"]) == ("cancelled", "skipped")


def test_permission_answered_elsewhere_records_the_decision(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_interaction(permission(tool_call_id="call-1")))
    answered = permission(
        tool_call_id="call-1", state=InteractionState.ANSWERED, resolution="once", auto=True
    )
    out = h.feed(ev_interaction(answered))
    assert out[0][1] == {
        "type": "chat/toolCallConfirmed",
        "turnId": "turn-1",
        "toolCallId": "call-1",
        "selectedOptionId": "once",
        "approved": True,
        "confirmed": "setting",
    }
    assert h.tool_state("call-1")["status"] == "running"


def test_permission_rejected_elsewhere_denies_the_tool(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_interaction(permission(tool_call_id="call-1")))
    out = h.feed(ev_interaction(permission(tool_call_id="call-1", state=InteractionState.REJECTED)))
    assert out[0][1]["reason"] == "denied"
    assert h.tool_state("call-1")["status"] == "cancelled"


def test_subagent_permission_is_answerable_without_mixing_its_items(h: Harness) -> None:
    h.start_turn()
    # The subagent's own tool item alone stays out of the main transcript.
    assert h.feed(ev_tool("sub-call", ToolStatus.RUNNING, agent_id="agent-7")) == []
    out = h.feed(ev_interaction(permission(tool_call_id="sub-call", agent_id="agent-7")))
    assert out[0][1]["toolCallId"] == "agent-7/sub-call"
    assert out[0][1]["_meta"] == {"ahpBridge.agentId": "agent-7"}
    h.client(
        {
            "type": "chat/toolCallConfirmed",
            "turnId": "turn-1",
            "toolCallId": "agent-7/sub-call",
            "approved": True,
            "confirmed": "user-action",
        }
    )
    out = h.feed(ev_tool("sub-call", ToolStatus.COMPLETED, agent_id="agent-7", output="x"))
    assert types(out) == ["chat/toolCallComplete"]
    state = h.tool_state("agent-7/sub-call")
    assert state["status"] == "completed"
    assert state["_meta"] == {"ahpBridge.agentId": "agent-7"}


def test_turn_end_removes_every_pending_request(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_interaction(permission(tool_call_id="c1")), ev_interaction(question("ask-1")))
    assert len(h.session["inputNeeded"]) == 2
    out = h.feed(ev_turn(TurnState.COMPLETED))
    assert types(out) == [
        "chat/turnComplete",
        "session/inputNeededRemoved",
        "session/inputNeededRemoved",
    ]
    assert "inputNeeded" not in h.session
    assert h.tr.pending_permissions() == {} and h.tr.pending_inputs() == {}
    # The provider's later expiry reports are silent.
    assert h.feed(ev_interaction(question("ask-1", state=InteractionState.EXPIRED))) == []


# ------------------------------------------------------------------ questions


QUESTION_TABLE = [
    (
        Question(text="Name?", custom=True),
        {"kind": "text", "id": "q0", "message": "Name?", "required": True},
    ),
    (
        Question(text="Colour?", header="Colour", choices=["red", "blue"], custom=True),
        {
            "kind": "single-select",
            "id": "q0",
            "message": "Colour?",
            "title": "Colour",
            "required": True,
            "options": [{"id": "red", "label": "red"}, {"id": "blue", "label": "blue"}],
            "allowFreeformInput": True,
        },
    ),
    (
        Question(text="Tags?", choices=["a", "a"], multiple=True),
        {
            "kind": "multi-select",
            "id": "q0",
            "message": "Tags?",
            "required": True,
            "options": [{"id": "c0", "label": "a"}, {"id": "c1", "label": "a"}],
        },
    ),
    (
        Question(
            text="Email",
            field=Field(name="email", type="string", format="email", min_length=3, max_length=80),
        ),
        {"kind": "text", "id": "q0", "message": "Email", "format": "email", "min": 3, "max": 80},
    ),
    (
        Question(text="Age", field=Field(name="age", type="integer", required=True, minimum=0)),
        {"kind": "integer", "id": "q0", "message": "Age", "required": True, "min": 0},
    ),
    (
        Question(text="Ratio", field=Field(name="r", type="number", maximum=1.5)),
        {"kind": "number", "id": "q0", "message": "Ratio", "max": 1.5},
    ),
    (
        Question(
            text="Sure?",
            choices=["Yes", "No"],
            field=Field(name="ok", type="boolean", values=["true", "false"]),
        ),
        {"kind": "boolean", "id": "q0", "message": "Sure?"},
    ),
    (
        Question(
            text="Size",
            choices=["Small", "Large"],
            field=Field(name="size", type="string", values=["s", "l"], required=True),
        ),
        {
            "kind": "single-select",
            "id": "q0",
            "message": "Size",
            "required": True,
            "options": [{"id": "s", "label": "Small"}, {"id": "l", "label": "Large"}],
        },
    ),
    (
        Question(
            text="Level",
            choices=["Low", "High"],
            field=Field(name="lvl", type="integer", values=["1", "9"]),
        ),
        {
            "kind": "single-select",
            "id": "q0",
            "message": "Level",
            "options": [{"id": "1", "label": "Low"}, {"id": "9", "label": "High"}],
        },
    ),
    (
        Question(
            text="Pick",
            choices=["A", "B", "C"],
            field=Field(name="p", type="array", values=["a", "b", "c"], min_items=1, max_items=2),
        ),
        {
            "kind": "multi-select",
            "id": "q0",
            "message": "Pick",
            "options": [
                {"id": "a", "label": "A"},
                {"id": "b", "label": "B"},
                {"id": "c", "label": "C"},
            ],
            "min": 1,
            "max": 2,
        },
    ),
]


@pytest.mark.parametrize(("source", "expected"), QUESTION_TABLE)
def test_question_kinds_map_to_chat_input_questions(
    h: Harness, source: Question, expected: dict[str, object]
) -> None:
    h.start_turn()
    out = h.feed(ev_interaction(question("ask-1", [source], detail="for the report")))
    assert types(out) == ["chat/inputRequested", "session/inputNeededSet"]
    request = out[0][1]["request"]
    assert request == {
        "id": "ask-1",
        "message": "Which colour?\n\nfor the report",
        "questions": [expected],
    }
    assert h.session["inputNeeded"][0] == {
        "kind": "chatInput",
        "id": f"{CHAT}#ask-1",
        "chat": CHAT,
        "request": request,
    }
    part = h.parts[-1]
    assert part["kind"] == "inputRequest" and "response" not in part
    assert h.chat["status"] == st.INPUT_NEEDED


def test_elicitation_link_becomes_a_url_request(h: Harness) -> None:
    h.start_turn()
    link = question(
        "el-1",
        [],
        title="Sign in to the server",
        elicitation=Elicitation(mode="url", url="https://example.test/auth"),
    )
    out = h.feed(ev_interaction(link))
    assert out[0][1]["request"] == {
        "id": "el-1",
        "message": "Sign in to the server",
        "url": "https://example.test/auth",
    }


def test_plan_review_becomes_action_and_feedback_questions(h: Harness) -> None:
    h.start_turn()
    review = question(
        "plan-1",
        [],
        kind=InteractionKind.PLAN_REVIEW,
        title="Review the plan",
        plan=PlanReview(
            request_id="plan-1",
            summary="Refactor",
            actions=["interactive", "autopilot"],
            recommended="autopilot",
        ),
    )
    request = h.feed(ev_interaction(review))[0][1]["request"]
    assert request["message"] == "Review the plan\n\nRefactor"
    action_q, feedback_q = request["questions"]
    assert [o["id"] for o in action_q["options"]] == ["interactive", "autopilot"]
    assert action_q["options"][1]["recommended"] is True
    assert feedback_q["kind"] == "text"


@pytest.mark.parametrize(
    ("state", "response"),
    [
        (InteractionState.ANSWERED, "accept"),
        (InteractionState.REJECTED, "decline"),
        (InteractionState.EXPIRED, "cancel"),
    ],
)
def test_question_resolved_elsewhere_completes_the_input_part(
    h: Harness, state: InteractionState, response: str
) -> None:
    h.start_turn()
    h.feed(ev_interaction(question("ask-1")))
    out = h.feed(ev_interaction(question("ask-1", state=state)))
    assert out == [
        (CHAT, {"type": "chat/inputCompleted", "requestId": "ask-1", "response": response}),
        (SESSION, {"type": "session/inputNeededRemoved", "id": f"{CHAT}#ask-1"}),
    ]
    assert h.parts[-1]["response"] == response
    assert h.chat["status"] == st.IN_PROGRESS


def test_client_completed_input_is_removed_once(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_interaction(question("ask-1")))
    follow = h.client({"type": "chat/inputCompleted", "requestId": "ask-1", "response": "decline"})
    assert types(follow) == ["session/inputNeededRemoved"]
    assert h.feed(ev_interaction(question("ask-1", state=InteractionState.REJECTED))) == []
    assert h.parts[-1]["response"] == "decline"


# ------------------------------------------------------------------ subagents


def test_subagent_is_subagent_content_on_its_running_parent_tool(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_tool("task-1", ToolStatus.RUNNING, name="task", title="Delegate"))
    sub = Subagent(
        id="agent-1",
        name="explorer",
        description="Find the config",
        parent_tool_call_id="task-1",
        status=SubagentStatus.RUNNING,
    )
    out = h.feed(Event(kind=EventKind.SUBAGENT, subagent=sub))
    ref = {
        "type": "subagent",
        "resource": "ahp-chat:/subagent/agent-1",
        "title": "explorer",
        "agentName": "explorer",
        "description": "Find the config",
    }
    assert out == [
        (
            CHAT,
            {
                "type": "chat/toolCallContentChanged",
                "turnId": "turn-1",
                "toolCallId": "task-1",
                "content": [ref],
            },
        )
    ]
    done = sub.model_copy(update={"status": SubagentStatus.COMPLETED})
    assert h.feed(Event(kind=EventKind.SUBAGENT, subagent=done)) == []
    # The subagent's transcript stays out of the main chat.
    assert h.feed(ev_delta(A, "s-m1", "sub text", agent_id="agent-1")) == []
    assert h.feed(ev_item(A, "s-m1", "sub text", agent_id="agent-1")) == []
    out = h.feed(ev_tool("task-1", ToolStatus.COMPLETED, name="task", output="found it"))
    assert out[0][1]["result"]["content"] == [ref, {"type": "text", "text": "found it"}]
    assert [p["kind"] for p in h.parts] == ["toolCall"]
    assert h.tool_state("task-1")["content"][0] == ref


def test_subagent_before_its_parent_tool_is_attached_on_completion(h: Harness) -> None:
    h.start_turn()
    sub = Subagent(id="a2", name="helper", parent_tool_call_id="task-2", status="running")
    assert h.feed(Event(kind=EventKind.SUBAGENT, subagent=sub)) == []
    h.feed(ev_tool("task-2", ToolStatus.RUNNING, name="task"))
    out = h.feed(ev_tool("task-2", ToolStatus.COMPLETED, name="task"))
    assert out[0][1]["result"]["content"][0]["resource"] == "ahp-chat:/subagent/a2"


def test_nested_subagent_is_not_shown_in_the_main_chat(h: Harness) -> None:
    h.start_turn()
    sub = Subagent(
        id="a3", name="n", parent_tool_call_id="t", parent_agent_id="a1", status="running"
    )
    assert h.feed(Event(kind=EventKind.SUBAGENT, subagent=sub)) == []


# ------------------------------------------------------------------ conversation-level


def test_exit_during_a_turn_is_a_chat_error(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_interaction(question("ask-1")))
    out = h.feed(Event(kind=EventKind.EXIT, error="runtime crashed"))
    assert types(out) == ["chat/error", "session/inputNeededRemoved"]
    assert out[0][1]["part"] == {
        "kind": "error",
        "error": {"errorType": "providerExit", "message": "runtime crashed"},
        "resumable": True,  # the conversation reopens: chat/turnResume can go on
    }
    assert h.chat["turns"][-1]["state"] == "error"


def test_detached_exit_cancels_the_turn_and_idle_exit_is_silent(h: Harness) -> None:
    h.start_turn()
    out = h.feed(Event(kind=EventKind.EXIT, detached=True))
    assert types(out) == ["chat/turnCancelled"]
    assert h.feed(Event(kind=EventKind.EXIT, error="gone")) == []


def test_title_is_cleaned_deduplicated_and_updates_the_chat_summary(h: Harness) -> None:
    out = h.feed(Event(kind=EventKind.TITLE, title="  Fix\tthe\x07 build \n"))
    assert out == [
        (SESSION, {"type": "session/titleChanged", "title": "Fix the build"}),
        (
            SESSION,
            {"type": "session/chatUpdated", "chat": CHAT, "changes": {"title": "Fix the build"}},
        ),
    ]
    assert h.session["title"] == "Fix the build"
    assert h.session["chats"][0]["title"] == "Fix the build"
    assert h.feed(Event(kind=EventKind.TITLE, title="Fix the build")) == []
    h.client({"type": "session/titleChanged", "title": "Mine"}, channel=SESSION)
    assert h.feed(Event(kind=EventKind.TITLE, title="Mine")) == []
    assert h.feed(Event(kind=EventKind.TITLE, title=" \x00 ")) == []


def test_tokens_sum_per_turn_and_usage_rides_in_meta(h: Harness) -> None:
    h.start_turn()
    # Every counter has a value in more than one model call, so replacing instead of adding
    # shows in each sum (100+50+7, 5+3+2, 20+30+4).
    calls = [
        TokenUsage(model="m1", input=100, output=5, cache_read=20),
        TokenUsage(model="m2", input=50, output=3, cache_read=30),
        TokenUsage(input=7, output=2, cache_read=4),  # no model named: the last one stays
    ]
    out = h.feed(*(Event(kind=EventKind.TOKENS, tokens=t) for t in calls))
    running = [a["usage"] for _, a in out if a["type"] == "chat/usage"]
    assert [(u["inputTokens"], u["outputTokens"], u["cacheReadTokens"]) for u in running] == [
        (100, 5, 20),
        (150, 8, 50),
        (157, 10, 54),
    ]
    h.feed(Event(kind=EventKind.USAGE, usage=Usage(ai_units=1.5)))
    assert h.active["usage"] == {
        "inputTokens": 157,
        "outputTokens": 10,
        "cacheReadTokens": 54,
        "model": "m2",
        "_meta": {"ahpBridge.aiUnits": 1.5},
    }
    assert h.session["_meta"]["ahpBridge.usage"] == {"ai_units": 1.5}
    h.feed(ev_turn(TurnState.COMPLETED))
    h.start_turn("turn-2")
    h.feed(
        Event(kind=EventKind.TOKENS, tokens=TokenUsage(input=1, output=2, cache_read=3)),
        Event(kind=EventKind.TOKENS, tokens=TokenUsage(input=10, output=20, cache_read=30)),
    )
    usage = h.active["usage"]
    assert (usage["inputTokens"], usage["outputTokens"], usage["cacheReadTokens"]) == (11, 22, 33)
    done = h.chat["turns"][0]["usage"]
    assert (done["inputTokens"], done["outputTokens"], done["cacheReadTokens"]) == (157, 10, 54)


def test_activity_and_compaction_drive_chat_activity(h: Harness) -> None:
    h.start_turn()
    out = h.feed(Event(kind=EventKind.ACTIVITY, activity=Activity(intent="Reading files")))
    assert types(out) == ["chat/activityChanged", "session/chatUpdated"]
    assert h.chat["activity"] == "Reading files"
    assert h.session["chats"][0]["activity"] == "Reading files"
    assert h.feed(Event(kind=EventKind.ACTIVITY, activity=Activity(intent="Reading files"))) == []
    h.feed(Event(kind=EventKind.COMPACTION, compacting=True))
    assert h.chat["activity"] == "Compacting conversation"
    h.feed(Event(kind=EventKind.COMPACTION))
    assert h.chat["activity"] == "Reading files"
    retry = Activity(retry=Retry(count=1, reason="rate_limited"))
    h.feed(Event(kind=EventKind.ACTIVITY, activity=retry))
    assert h.chat["activity"] == "Retrying the model call"
    out = h.feed(ev_turn(TurnState.COMPLETED))
    assert types(out) == ["chat/turnComplete", "chat/activityChanged", "session/chatUpdated"]
    assert "activity" not in h.chat


def test_live_snapshots_ride_in_session_meta(h: Harness) -> None:
    out = h.feed(Event(kind=EventKind.CONTEXT, context=Context(used=10, limit=100)))
    assert out == [
        (
            SESSION,
            {
                "type": "session/metaChanged",
                "_meta": {"ahpBridge.context": {"used": 10, "limit": 100}},
            },
        )
    ]
    h.feed(Event(kind=EventKind.TODOS, todos=TodoList(known=True)))
    assert h.session["_meta"] == {
        "ahpBridge.context": {"used": 10, "limit": 100},
        "ahpBridge.todos": {"known": True, "todos": []},
    }
    assert h.feed(Event(kind=EventKind.CONTEXT, context=Context(used=10, limit=100))) == []


def test_background_shells_are_chat_background_work_and_session_meta(h: Harness) -> None:
    started = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    running = BackgroundTask(
        id="7",
        description="dev server",
        command="npm run dev",
        status="running",
        started_at=started,
    )
    other = BackgroundTask(id="8", command="sleep 9", status="running")
    out = h.feed(
        Event(
            kind=EventKind.BACKGROUND_TASKS,
            background_tasks=BackgroundTasks(known=True, tasks=[running, other]),
        )
    )
    assert types(out) == ["session/metaChanged", "chat/backgroundWorkSet", "chat/backgroundWorkSet"]
    assert out[1][1]["work"] == {
        "id": "shell:7",
        "label": "dev server",
        "startedAt": "2026-01-02T03:04:05.000Z",
        "kind": "shell",
        "command": "npm run dev",
    }
    assert out[2][1]["work"]["label"] == "sleep 9"  # no description: the command
    assert [w["id"] for w in h.chat["backgroundWork"]] == ["shell:7", "shell:8"]
    assert h.session["_meta"]["ahpBridge.backgroundTasks"]["known"] is True  # 0.7 and 0.9 see it
    done = running.model_copy(update={"status": "completed"})
    out = h.feed(
        Event(
            kind=EventKind.BACKGROUND_TASKS,
            background_tasks=BackgroundTasks(known=True, tasks=[done, other]),
        )
    )
    assert types(out) == ["session/metaChanged", "chat/backgroundWorkRemoved"]
    assert out[1][1] == {"type": "chat/backgroundWorkRemoved", "id": "shell:7"}
    # Unknown state says nothing about liveness: the work stays as last known.
    unknown = Event(kind=EventKind.BACKGROUND_TASKS, background_tasks=BackgroundTasks(known=False))
    assert types(h.feed(unknown)) == ["session/metaChanged"]
    assert [w["id"] for w in h.chat["backgroundWork"]] == ["shell:8"]


def test_a_background_subagent_is_background_work_while_it_runs(h: Harness) -> None:
    h.start_turn()
    h.feed(ev_tool("task-1", ToolStatus.RUNNING, name="task"))
    out = h.feed(ev_sub(SubagentStatus.RUNNING, background=True))
    work = [a for _, a in out if a["type"] == "chat/backgroundWorkSet"]
    assert work[0]["work"]["kind"] == "subagent"
    assert work[0]["work"]["chat"].endswith("agent-1")
    assert h.chat["backgroundWork"][0]["id"] == "subagent:agent-1"
    assert h.feed(ev_sub(SubagentStatus.RUNNING, background=True)) == []  # no change, no action
    out = h.feed(ev_sub(SubagentStatus.COMPLETED, background=True))
    assert ("chat/backgroundWorkRemoved" in types(out)) and "backgroundWork" in h.chat
    assert h.chat["backgroundWork"] == []
    # A subagent in the foreground is not background work.
    assert "chat/backgroundWorkSet" not in types(h.feed(ev_sub(SubagentStatus.RUNNING, "fg")))


@pytest.mark.parametrize(
    "event",
    [
        Event(kind=EventKind.PLAN_PATH, plan_path="/tmp/plan.md", plan_version=2),
        Event(kind=EventKind.SKILL, skill=SkillLoad(id="s", name="lint")),
    ],
)
def test_dropped_kinds_emit_nothing_even_during_a_turn(h: Harness, event: Event) -> None:
    h.start_turn()
    assert h.feed(event) == []


def test_every_event_kind_is_handled_and_documented() -> None:
    doc = events_module.__doc__ or ""
    table = doc.split("Event kind", 1)[1]
    for kind in EventKind:
        assert re.search(rf"\b{re.escape(kind.value)}\b", table), f"{kind.value} undocumented"
    tr = events_module.EventTranslator(CHAT, SESSION, lambda: "x", lambda: T0)
    assert set(tr._handlers) == set(EventKind)


# ------------------------------------------------------------------ subagent chats


def sub_harness(agent_id: str = "agent-1") -> Harness:
    h = Harness()
    h.tr = events_module.EventTranslator(CHAT, SESSION, h.ids, h.clock, agent_id=agent_id)
    return h


def ev_sub(status: SubagentStatus, agent_id: str = "agent-1", **fields: Any) -> Event:
    fields.setdefault("name", "explorer")
    fields.setdefault("parent_tool_call_id", "task-1")
    sub = Subagent(id=agent_id, status=status, **fields)
    return Event(kind=EventKind.SUBAGENT, subagent=sub)


def test_subagent_chat_turn_is_the_subagents_run() -> None:
    h = sub_harness()
    main_noise = [
        ev_turn(TurnState.WORKING),
        ev_delta(A, "main-1", "main agent text"),
        ev_item(ItemKind.USER, "main-u", "the user's prompt"),
        ev_tool("task-1", ToolStatus.RUNNING, name="task"),
    ]
    assert h.feed(*main_noise) == []
    assert h.feed(ev_sub(SubagentStatus.RUNNING)) == []
    out = h.feed(ev_item(ItemKind.USER, "s-u1", "Find the config", agent_id="agent-1"))
    assert types(out) == ["chat/turnStarted"]
    assert h.active["message"] == {"text": "Find the config", "origin": {"kind": "agent"}}
    h.feed(
        ev_delta(A, "s-m1", "Looking", agent_id="agent-1"),
        ev_delta(A, "main-1", " (main again)"),
        ev_tool("s-call", ToolStatus.RUNNING, agent_id="agent-1", title="Read file"),
        ev_tool("s-call", ToolStatus.COMPLETED, agent_id="agent-1", output="cfg"),
        ev_item(A, "s-m2", "Found it in a.toml", agent_id="agent-1"),
    )
    assert [p["kind"] for p in h.parts] == ["markdown", "toolCall", "markdown"]
    assert h.parts[0]["content"] == "Looking"
    assert h.tool_state("s-call")["toolCallId"] == "s-call"
    # Its permission requests are answered in the main chat, not here.
    perm = permission(tool_call_id="s-call2", agent_id="agent-1")
    assert h.feed(ev_interaction(perm)) == []
    h.clock.advance(7)
    out = h.feed(ev_sub(SubagentStatus.COMPLETED))
    assert out[0][1] == {"type": "chat/turnComplete", "turnId": "id-1", "duration": 7}
    assert h.feed(ev_turn(TurnState.COMPLETED)) == []  # the main turn is not its business
    assert [t["state"] for t in h.chat["turns"]] == ["complete"]


def test_subagent_follow_up_from_the_user_is_a_user_turn() -> None:
    h = sub_harness()
    h.feed(ev_sub(SubagentStatus.RUNNING), ev_item(ItemKind.USER, "u1", "go", agent_id="agent-1"))
    h.feed(ev_sub(SubagentStatus.IDLE))
    again = ev_sub(
        SubagentStatus.RUNNING,
        runs=[
            SubagentRun(status="idle", trigger="spawn"),
            SubagentRun(status="running", trigger="user"),
        ],
    )
    h.feed(again, ev_item(ItemKind.USER, "u2", "and the tests?", agent_id="agent-1"))
    assert h.active["message"] == {"text": "and the tests?", "origin": {"kind": "user"}}
    h.feed(ev_sub(SubagentStatus.FAILED, error="model refused"))
    assert [t["state"] for t in h.chat["turns"]] == ["complete", "error"]
    assert last_error(h) == {
        "errorType": "subagentFailed",
        "message": "model refused",
    }


def test_subagent_chat_cancel_exit_and_nested_subagents() -> None:
    h = sub_harness()
    h.feed(
        ev_sub(SubagentStatus.RUNNING),
        ev_tool("inner-task", ToolStatus.RUNNING, agent_id="agent-1"),
    )
    nested = ev_sub(
        SubagentStatus.RUNNING,
        agent_id="agent-2",
        parent_agent_id="agent-1",
        parent_tool_call_id="inner-task",
    )
    out = h.feed(nested)
    assert types(out) == ["chat/toolCallContentChanged"]
    assert out[0][1]["content"][0]["resource"] == "ahp-chat:/subagent/agent-2"
    h.feed(ev_sub(SubagentStatus.CANCELLED))
    assert h.chat["turns"][-1]["state"] == "cancelled"
    h.feed(ev_sub(SubagentStatus.RUNNING))
    out = h.feed(Event(kind=EventKind.EXIT, error="gone"))
    assert types(out) == ["chat/turnStarted", "chat/error"]


def test_main_chat_ignores_nested_subagents_and_subagent_items() -> None:
    h = Harness()
    h.start_turn()
    nested = ev_sub(SubagentStatus.RUNNING, agent_id="agent-2", parent_agent_id="agent-1")
    assert h.feed(nested, ev_item(ItemKind.USER, "u", "x", agent_id="agent-1")) == []
