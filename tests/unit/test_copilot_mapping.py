"""Replay recorded real Copilot CLI event streams through the adapter's event mapping.

The fixtures in tests/fixtures/copilot/ were recorded from the real CLI + SDK against the
scripted model server (tests/fixtures/copilot/record.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from ahp_bridge_copilot.history import rebuild_history
from ahp_bridge_copilot.mapping import EventMapper, clip, parse_time

from ahp_bridge.agentapi import (
    DELIVERY_STEER,
    Event,
    EventKind,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    SubagentStatus,
    ToolStatus,
    TurnState,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "copilot"
SCENARIOS = sorted(p.stem for p in FIXTURES.glob("*.jsonl"))


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines()]


def replay(name: str, mapper: EventMapper | None = None, **hooks: Any) -> list[Event]:
    """Map a recorded stream; ``hooks`` maps an event type to a callback run before mapping it."""
    m = mapper or EventMapper()
    out: list[Event] = []
    for raw in load(name):
        hook = hooks.get(raw["type"].replace(".", "_"))
        if hook is not None:
            hook(m, raw)
        out.extend(m.map(raw))
    return out


def items(events: list[Event], kind: ItemKind | None = None) -> list[Item]:
    latest: dict[tuple[str, str], Item] = {}
    for e in events:
        if e.kind is EventKind.ITEM and e.item is not None:
            latest[(e.item.agent_id, e.item.id)] = e.item
    return [i for i in latest.values() if kind is None or i.kind is kind]


def deltas(events: list[Event], item_id: str) -> str:
    return "".join(
        e.delta.text for e in events if e.delta is not None and e.delta.item_id == item_id
    )


def turn_states(events: list[Event]) -> list[TurnState]:
    return [e.turn.state for e in events if e.kind is EventKind.TURN and e.turn is not None]


def test_fixtures_exist_and_match_the_sdk_schema() -> None:
    from copilot.generated.session_events import SessionEvent

    assert {"text_reasoning", "shell_approved", "subagent", "history"} <= set(SCENARIOS)
    for name in SCENARIOS:
        for raw in load(name):
            parsed = SessionEvent.from_dict(raw)  # the SDK's strict parser accepts them
            assert parsed.to_dict()["type"] == raw["type"]


def test_text_and_reasoning_turn() -> None:
    events = replay("text_reasoning")
    assert turn_states(events) == [TurnState.WORKING, TurnState.COMPLETED]
    final = [e.turn for e in events if e.kind is EventKind.TURN][-1]
    assert final is not None and final.model == "fake-model"
    (user,) = items(events, ItemKind.USER)
    assert user.text == "greet me" and user.time is not None and user.delivery == ""
    (answer,) = items(events, ItemKind.ASSISTANT)
    (thought,) = items(events, ItemKind.REASONING)
    # Every delta carries its item's kind: the reasoning streams as reasoning, never as answer.
    streamed = [(e.delta.item_id, e.delta.kind) for e in events if e.delta is not None]
    assert (
        streamed == [(thought.id, ItemKind.REASONING)] * 2 + [(answer.id, ItemKind.ASSISTANT)] * 3
    )
    assert deltas(events, answer.id) == answer.text == "Hello there!"
    assert deltas(events, thought.id) == thought.text == "user wants a greeting"
    assert [e.title for e in events if e.kind is EventKind.TITLE] == ["greet me"]
    tokens = [e.tokens for e in events if e.tokens is not None]
    assert [(t.input, t.output) for t in tokens] == [(40, 9)]
    assert all(e.kind is not EventKind.INTERACTION for e in events)


DELTA_KINDS = {
    "assistant.message_delta": ItemKind.ASSISTANT,
    "assistant.reasoning_delta": ItemKind.REASONING,
}


@pytest.mark.parametrize("name", SCENARIOS)
def test_every_delta_carries_the_kind_of_its_item(name: str) -> None:
    """Each recorded delta maps to a delta of its own kind, and of the item it belongs to."""
    m = EventMapper()
    events: list[Event] = []
    for raw in load(name):
        mapped = m.map(raw)
        events.extend(mapped)
        for e in mapped:
            if e.delta is not None:
                assert e.delta.kind is DELTA_KINDS[raw["type"]], raw["type"]
    kinds = {(i.agent_id, i.id): i.kind for i in items(events)}
    for e in events:
        if e.delta is not None:
            key = (e.delta.agent_id, e.delta.item_id)
            assert kinds.get(key, e.delta.kind) is e.delta.kind, key  # an aborted one never comes


def _respond(state: InteractionState) -> Any:
    def hook(m: EventMapper, raw: dict[str, Any]) -> None:
        m.note_response(raw["data"]["requestId"], state)

    return hook


def test_shell_permission_answered_by_us() -> None:
    events = replay("shell_approved", permission_completed=_respond(InteractionState.ANSWERED))
    inters = [e.interaction for e in events if e.interaction is not None]
    pending, done = inters
    assert pending.state is InteractionState.PENDING
    assert pending.kind is InteractionKind.PERMISSION
    assert pending.title == "Run a shell command" and pending.detail == "echo hi"
    assert [o.id for o in pending.options] == ["approve-once", "reject"]
    assert pending.options[0].allow_once and pending.options[1].reject
    (tool,) = items(events, ItemKind.TOOL)
    assert pending.tool_call_id == tool.id
    assert done.state is InteractionState.ANSWERED and done.resolution == "approved"
    assert tool.tool is not None and tool.tool.status is ToolStatus.COMPLETED
    assert tool.tool.exit_code == 0 and tool.tool.output.startswith("hi")
    assert tool.tool.tail == [] and tool.ended_at is not None
    running = [e.item for e in events if e.item is not None and e.item.id == tool.id]
    assert any(i.tool is not None and i.tool.tail for i in running), "shell output was streamed"
    assert turn_states(events)[-1] is TurnState.COMPLETED


def test_permission_resolved_elsewhere_expires() -> None:
    events = replay("shell_approved")  # nobody noted a response: someone else answered
    done = [e.interaction for e in events if e.interaction is not None][-1]
    assert done.state is InteractionState.EXPIRED


def test_shell_permission_rejected() -> None:
    events = replay("shell_denied", permission_completed=_respond(InteractionState.REJECTED))
    done = [e.interaction for e in events if e.interaction is not None][-1]
    assert done.state is InteractionState.REJECTED
    assert done.resolution == "denied-interactively-by-user"
    (tool,) = items(events, ItemKind.TOOL)
    assert tool.tool is not None and tool.tool.status is ToolStatus.FAILED
    assert "rejected" in tool.tool.output
    # The CLI aborts the turn after a rejection; we did not cancel, so it just completed.
    assert turn_states(events)[-1] is TurnState.COMPLETED


def test_ask_user_question() -> None:
    events = replay("ask_user", user_input_completed=_respond(InteractionState.ANSWERED))
    pending, done = [e.interaction for e in events if e.interaction is not None]
    assert pending.kind is InteractionKind.QUESTION
    (q,) = pending.questions
    assert (q.text, q.choices, q.custom) == ("Color?", ["red", "blue"], True)
    (tool,) = items(events, ItemKind.TOOL)
    assert pending.tool_call_id == tool.id and tool.tool is not None
    assert tool.tool.name == "ask_user" and "blue" in tool.tool.output
    assert done.state is InteractionState.ANSWERED


def test_subagent_lifecycle_and_items() -> None:
    events = replay("subagent")
    subs = [e.subagent for e in events if e.subagent is not None]
    assert subs[0].status is SubagentStatus.RUNNING and subs[0].runs
    final = subs[-1]
    assert final.status is SubagentStatus.COMPLETED and final.ended_at is not None
    assert (final.name, final.description, final.background) == ("scout", "Look around", False)
    spawn = [i for i in items(events, ItemKind.TOOL) if i.tool and i.tool.name == "task"]
    assert final.parent_tool_call_id == spawn[0].id
    sub_items = [i for i in items(events) if i.agent_id == final.id]
    assert [(i.kind, i.text) for i in sub_items] == [
        (ItemKind.USER, "SUBTASK go"),
        (ItemKind.ASSISTANT, "sub result"),
    ]
    main = [i.text for i in items(events, ItemKind.ASSISTANT) if not i.agent_id]
    assert main == ["Delegation finished"]
    # A subagent's model change is not the conversation's.
    assert all(e.kind is not EventKind.MODEL_SELECTION for e in events)
    assert turn_states(events) == [TurnState.WORKING, TurnState.COMPLETED]


def test_file_write_edits() -> None:
    events = replay("file_write", permission_completed=_respond(InteractionState.ANSWERED))
    pending = next(e.interaction for e in events if e.interaction is not None)
    assert pending.title == "Write a file" and "notes.txt" in pending.detail
    assert "approve-for-session" in [o.id for o in pending.options]
    (tool,) = items(events, ItemKind.TOOL)
    assert tool.tool is not None
    (edit,) = tool.tool.file_edits
    assert edit.path.endswith("notes.txt") and edit.kind == "create"
    assert edit.diff_status == "unavailable"
    assert tool.tool.edit_event_id


def test_abort_cancels_with_reason() -> None:
    mapper = EventMapper()
    mapper.begin_turn()
    mapper.note_cancel()
    events = replay("abort", mapper)
    final = [e.turn for e in events if e.turn is not None][-1]
    assert final.state is TurnState.CANCELLED and final.reason == "user_initiated"
    # Deltas came before the abort; no final assistant item was recorded.
    assert [e for e in events if e.kind is EventKind.DELTA]
    assert items(events, ItemKind.ASSISTANT) == []


def test_steer_is_marked_and_undelivered_steer_gets_a_notice() -> None:
    events = replay("steer")
    steered = [i for i in items(events, ItemKind.USER) if i.text == "STEER use caps"]
    assert len(steered) == 1 and steered[0].delivery == DELIVERY_STEER
    assert turn_states(events) == [TurnState.WORKING, TurnState.COMPLETED]

    mapper = EventMapper()
    mapper.note_steer("never-used", "please also do X")
    events = replay("text_reasoning", mapper)
    notices = items(events, ItemKind.NOTICE)
    assert len(notices) == 1 and "not delivered" in notices[0].text
    assert "please also do X" in notices[0].text


def test_queued_steer_message_counts_as_steer() -> None:
    mapper = EventMapper()
    mapper.begin_turn()
    mapper.note_steer("m-queued", "late")
    raw = {
        "type": "user.message",
        "id": "e1",
        "timestamp": "2026-01-01T00:00:00Z",
        "data": {"content": "late", "delivery": "queued", "messageId": "m-queued"},
    }
    (event,) = mapper.map(raw)
    assert event.item is not None and event.item.delivery == DELIVERY_STEER


def test_upstream_error_fails_the_turn() -> None:
    events = replay("upstream_error")
    final = [e.turn for e in events if e.turn is not None][-1]
    assert final.state is TurnState.FAILED and final.error == "400 fake upstream failure"
    (notice,) = items(events, ItemKind.NOTICE)
    assert notice.text == "400 fake upstream failure"


#: A turn of a signed-out CLI, as the CLI 1.0.102 sent it (recorded through the bridge): it
#: fails within milliseconds, often before the CLI's answer to ``send`` is back with the adapter.
SIGNED_OUT_TURN = [
    {
        "type": "session.error",
        "id": "adc37705-bcf4-407e-983d-1af901b30e76",
        "timestamp": "2026-12-01T11:52:13.697Z",
        "parentId": None,
        "data": {
            "errorType": "query",
            "message": "Execution failed: InvalidArg, No GitHub OAuth token or Copilot HMAC key "
            "provided",
        },
    },
    {
        "type": "assistant.idle",
        "id": "cb62e40c-1e86-4111-926a-1e1f7c288824",
        "timestamp": "2026-12-01T11:52:13.698Z",
        "parentId": None,
        "ephemeral": True,
        "data": {},
    },
    {
        "type": "session.idle",
        "id": "7bba44d8-3ba0-4222-9da8-ee2f1c9ecb8d",
        "timestamp": "2026-12-01T11:52:13.703Z",
        "parentId": None,
        "ephemeral": True,
        "data": {"mode": "interactive"},
    },
]
HINT = "GitHub Copilot is signed out: sign in from your client."


def submitted(
    stream: list[dict[str, Any]], before_answer: int, mapper: EventMapper | None = None
) -> list[Event]:
    """A prompt we send whose turn is ``stream``; ``before_answer`` of its events are mapped
    before the CLI's answer to send is handled (the order the loop can run them in)."""
    mapper = mapper or EventMapper()
    mapper.submit_turn()
    events: list[Event] = []
    for raw in stream[:before_answer]:
        events.extend(mapper.map(raw))
    assert events == []  # held until the prompt is accepted
    assert mapper.busy  # a second prompt meanwhile is refused with Busy
    events.extend(mapper.turn_accepted())
    for raw in stream[before_answer:]:
        events.extend(mapper.map(raw))
    assert not mapper.busy  # the turn ended: the next prompt may go
    return events


@pytest.mark.parametrize("before_answer", range(len(SIGNED_OUT_TURN) + 1))
def test_a_signed_out_turn_fails_with_the_sentence_however_late_send_returns(
    before_answer: int,
) -> None:
    """An early error used to be lost (the turn "completed"), an early end too (the turn stayed
    working): now the turn works, then fails with the one sentence, in that order."""
    from copilot.generated.session_events import SessionEvent

    for raw in SIGNED_OUT_TURN:
        SessionEvent.from_dict(raw)  # the SDK's strict parser accepts them
    events = submitted(SIGNED_OUT_TURN, before_answer, EventMapper(signed_out_hint=HINT))
    assert turn_states(events) == [TurnState.WORKING, TurnState.FAILED]
    assert events[0].turn is not None and events[0].turn.state is TurnState.WORKING
    final = [e.turn for e in events if e.turn is not None][-1]
    assert final.error == HINT
    (notice,) = items(events, ItemKind.NOTICE)
    assert notice.text == HINT


@pytest.mark.parametrize("before_answer", [0, 1, 3, 10, 10_000])
def test_a_streamed_turn_reads_the_same_however_late_send_returns(before_answer: int) -> None:
    """Working first, then the user item, deltas and the end, exactly as when the answer came
    first: nothing of a turn goes out before its working."""
    opened, stream = load("text_reasoning")[:1], load("text_reasoning")[1:]  # session.start
    assert [raw["type"] for raw in opened] == ["session.start"]
    reference, mapper = EventMapper(), EventMapper()
    for m in (reference, mapper):
        assert [e for raw in opened for e in m.map(raw)] == []
    expected = reference.begin_turn() + [e for raw in stream for e in reference.map(raw)]
    assert turn_states(expected) == [TurnState.WORKING, TurnState.COMPLETED]
    assert submitted(stream, before_answer, mapper) == expected


def test_a_prompt_the_cli_refused_started_no_turn() -> None:
    mapper = EventMapper(signed_out_hint=HINT)
    mapper.submit_turn()
    assert mapper.map(SIGNED_OUT_TURN[0]) == []
    assert mapper.map(SIGNED_OUT_TURN[-1]) == []
    released = mapper.turn_not_accepted()
    assert turn_states(released) == []  # no turn here: the caller reports the refusal
    assert [i.text for i in items(released, ItemKind.NOTICE)] == [HINT]  # what else was said
    assert not mapper.busy
    assert mapper.turn_accepted() == []
    assert mapper.map(SIGNED_OUT_TURN[-1]) == []  # a later idle ends nothing


def test_a_cancel_before_send_returns_cancels_the_turn_after_it_started() -> None:
    mapper = EventMapper()
    mapper.submit_turn()
    mapper.note_cancel()
    events = mapper.map({"type": "abort", "data": {"reason": "user_initiated"}})
    events += mapper.map({"type": "session.idle", "data": {"aborted": True}})
    events += mapper.turn_accepted()
    assert turn_states(events) == [TurnState.WORKING, TurnState.CANCELLED]


def test_the_runtime_exiting_before_send_returns_started_no_turn() -> None:
    mapper = EventMapper(signed_out_hint=HINT)
    mapper.submit_turn()
    mapper.map(SIGNED_OUT_TURN[0])
    events = mapper.end_turn_exit("the Copilot CLI exited unexpectedly (exit code 1)")
    assert turn_states(events) == []  # send fails (its outcome unknown): the caller says so
    assert [i.text for i in items(events, ItemKind.NOTICE)] == [HINT]
    assert mapper.turn_accepted() == [] and not mapper.busy


def test_own_title_echo_is_ignored_and_model_change_is_reported() -> None:
    mapper = EventMapper()
    mapper.note_own_title("Chosen title")
    events = replay("title_model", mapper)
    assert [e.kind for e in events] == [EventKind.MODEL_SELECTION]
    sel = events[0].model_selection
    assert sel is not None and sel.model == "fake-model-2" and sel.effort is None
    # Without our own SetTitle, the title is reported.
    events = replay("title_model")
    assert [e.title for e in events if e.kind is EventKind.TITLE] == ["Chosen title"]


def test_history_rebuild_from_persisted_log() -> None:
    history = rebuild_history(load("history"))
    main = [(i.kind, i.text) for i in history.items if not i.agent_id and i.kind is ItemKind.USER]
    assert [t for _, t in main] == [
        "greet me",
        "run echo",
        "run denied",
        "ask color",
        "delegate",
        "write file",
        "slow one",
        "steerable",
        "STEER use caps",
        "please fail",
    ]
    assistants = [i.text for i in history.items if i.kind is ItemKind.ASSISTANT and not i.agent_id]
    assert assistants[:2] == ["Hello there!", "It printed hi"]
    tools = {i.tool.name: i for i in history.items if i.tool is not None and not i.agent_id}
    assert tools["bash"].tool is not None and tools["create"].tool is not None
    assert tools["create"].tool.status is ToolStatus.COMPLETED
    (sub,) = history.subagents
    assert sub.status is SubagentStatus.COMPLETED
    assert [i.text for i in history.items if i.agent_id == sub.id and i.text] == [
        "SUBTASK go",
        "sub result",
    ]
    assert history.model == "fake-model-2"
    assert not history.truncated
    # The persisted log has no deltas: rebuilding needs none.
    assert not any(r["type"].endswith("_delta") for r in load("history"))


def test_pending_interactions_expire_on_close_and_exit() -> None:
    mapper = EventMapper()
    raws = load("shell_approved")
    upto = next(i for i, r in enumerate(raws) if r["type"] == "permission.requested")
    for raw in raws[: upto + 1]:
        mapper.map(raw)
    (expired,) = mapper.expire_all("conversation closed")
    assert expired.interaction is not None
    assert expired.interaction.state is InteractionState.EXPIRED
    assert expired.interaction.resolution == "conversation closed"
    assert mapper.expire_all("again") == []

    mapper = EventMapper()
    for raw in raws[: upto + 1]:
        mapper.map(raw)
    out = mapper.end_turn_exit("the Copilot CLI exited")
    assert [e.kind for e in out] == [EventKind.INTERACTION, EventKind.TURN]
    assert out[1].turn is not None and out[1].turn.state is TurnState.FAILED
    assert out[1].turn.error == "the Copilot CLI exited"


@pytest.mark.parametrize(
    "raw",
    [
        {"type": "tool.execution_complete", "data": "garbage"},
        {"type": "tool.execution_complete", "data": {"toolCallId": 5}},
        {"type": "permission.requested", "data": {"permissionRequest": "x"}},
        {"type": "assistant.message_delta", "data": {"deltaContent": None}},
        {"type": "subagent.completed", "agentId": "unknown", "data": {}},
        {"type": "totally.new_event", "data": {"x": 1}},
        {"data": {}},
        {"type": "session.idle"},
    ],
)
def test_malformed_or_unknown_events_map_to_nothing(raw: dict[str, Any]) -> None:
    assert EventMapper().map(raw) == []


def test_elicitation_form_and_url() -> None:
    mapper = EventMapper()
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 2},
            "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
            "ok": {"type": "boolean"},
        },
        "required": ["name"],
    }
    (ev,) = mapper.map(
        {
            "type": "elicitation.requested",
            "data": {"requestId": "r1", "message": "Fill in", "requestedSchema": schema},
        }
    )
    inter = ev.interaction
    assert inter is not None and inter.elicitation is not None
    assert inter.elicitation.mode == "form" and inter.title == "Fill in"
    by_name = {q.field.name: q for q in inter.questions if q.field is not None}
    assert by_name["name"].field is not None and by_name["name"].field.required
    assert by_name["size"].choices == ["Small", "Medium"]
    assert by_name["size"].field is not None and by_name["size"].field.values == ["s", "m"]
    assert by_name["size"].field_value(["Medium"]) == ("m", True)
    assert by_name["ok"].field_value(["Yes"]) == (True, True)
    with pytest.raises(ValueError):
        by_name["name"].field_value(["x"])

    (ev,) = mapper.map(
        {
            "type": "elicitation.requested",
            "data": {"requestId": "r2", "message": "Sign in", "mode": "url", "url": "https://x"},
        }
    )
    assert ev.interaction is not None and ev.interaction.questions == []
    assert ev.interaction.elicitation is not None
    assert ev.interaction.elicitation.url == "https://x"
    mapper.note_response("r2", InteractionState.ANSWERED)
    (done,) = mapper.map(
        {"type": "elicitation.completed", "data": {"requestId": "r2", "action": "decline"}}
    )
    assert done.interaction is not None and done.interaction.state is InteractionState.REJECTED


def test_usage_context_compaction_and_retry() -> None:
    mapper = EventMapper()
    (usage,) = mapper.map({"type": "session.shutdown", "data": {"totalNanoAiu": 2_500_000_000}})
    assert usage.usage is not None and usage.usage.ai_units == 2.5
    mapper.map(
        {
            "type": "assistant.usage",
            "data": {"model": "m", "inputTokens": 70, "cacheReadTokens": 20},
        }
    )
    (ctx,) = mapper.map(
        {"type": "session.usage_info", "data": {"currentTokens": 90, "tokenLimit": 1000}}
    )
    assert ctx.context is not None
    assert (ctx.context.used, ctx.context.limit, ctx.context.prompt, ctx.context.cached) == (
        90,
        1000,
        70,
        20,
    )
    (start,) = mapper.map({"type": "session.compaction_start", "data": {}})
    assert start.compacting is True
    end, note = mapper.map(
        {
            "type": "session.compaction_complete",
            "id": "c1",
            "data": {"success": True, "preCompactionTokens": 900, "postCompactionTokens": 100},
        }
    )
    assert end.kind is EventKind.COMPACTION and end.compacting is False
    assert note.item is not None and "900 to 100" in note.item.text
    (retry,) = mapper.map(
        {"type": "assistant.turn_retry", "data": {"turnId": "1", "reason": "rate_limited"}}
    )
    assert retry.activity is not None and retry.activity.retry is not None
    assert retry.activity.retry.reason == "rate_limited"


def test_helpers() -> None:
    assert clip("héllo", 2) == "h"
    assert clip("abc", 10) == "abc"
    t = parse_time("2026-11-29T19:56:05.72Z")
    assert t is not None and t.tzinfo is not None and t.microsecond == 720000
    assert parse_time("not a time") is None and parse_time(None) is None


def test_session_approval_is_remembered_per_request() -> None:
    mapper = EventMapper()
    raws = load("file_write")
    upto = next(i for i, r in enumerate(raws) if r["type"] == "permission.requested")
    for raw in raws[: upto + 1]:
        mapper.map(raw)
    rid = raws[upto]["data"]["requestId"]
    assert mapper.session_approvals == {rid: {"approval": {"kind": "write"}}}
    for raw in raws[upto + 1 :]:
        mapper.map(raw)
    assert mapper.session_approvals == {}
    # A shell request that cannot be approved for the session offers no such option.
    mapper = EventMapper()
    for raw in load("shell_approved"):
        mapper.map(raw)
        if raw["type"] == "permission.requested":
            assert mapper.session_approvals == {}


def test_todo_rows() -> None:
    from ahp_bridge_copilot.mapping import todo_rows

    rows = [
        {"id": "a", "title": "One", "status": "completed"},
        {"id": "b", "description": "Two", "status": "BLOCKED"},
        {"id": "c", "title": "Three", "status": "weird"},
        {"id": "d"},
    ]
    assert [(t.id, t.title, t.status) for t in todo_rows(rows)] == [
        ("a", "One", "done"),
        ("b", "Two", "blocked"),
        ("c", "Three", "pending"),
    ]
    assert todo_rows(None) == []


def test_multi_turn_background_subagent_goes_idle_and_runs_again() -> None:
    mapper = EventMapper()
    t = "2026-01-01T00:00:0{}Z"
    mapper.map(
        {
            "type": "subagent.started",
            "agentId": "a1",
            "timestamp": t.format(1),
            "data": {"toolCallId": "c1", "agentDisplayName": "bg", "executionMode": "background"},
        }
    )
    mapper.map({"type": "subagent.configured", "agentId": "a1", "data": {"multiTurn": True}})
    (done,) = mapper.map(
        {"type": "subagent.completed", "agentId": "a1", "timestamp": t.format(2), "data": {}}
    )
    assert done.subagent is not None and done.subagent.status is SubagentStatus.IDLE
    mapper.note_subagent_prompt("a1")
    restarted, user = mapper.map(
        {
            "type": "user.message",
            "agentId": "a1",
            "timestamp": t.format(3),
            "data": {"content": "more", "messageId": "m2"},
        }
    )
    assert restarted.subagent is not None
    assert restarted.subagent.status is SubagentStatus.RUNNING
    assert [r.trigger for r in restarted.subagent.runs] == ["spawn", "user"]
    assert restarted.subagent.runs[0].status is SubagentStatus.IDLE
    assert user.item is not None and user.item.agent_id == "a1"
    notice = {"type": "agent_idle", "agentId": "a1"}
    (idle,) = mapper.map({"type": "system.notification", "data": {"kind": notice}})
    assert idle.subagent is not None and idle.subagent.status is SubagentStatus.IDLE
    assert mapper.map({"type": "system.notification", "data": {"kind": notice}}) == []


def test_usage_from_metrics() -> None:
    from ahp_bridge_copilot.mapping import usage_from_metrics

    assert usage_from_metrics({"aiCreditsStatus": "unavailable", "totalNanoAiu": 0.0}) is None
    assert usage_from_metrics({"modelMetrics": {}}) is None
    usage = usage_from_metrics({"totalNanoAiu": 1_500_000_000})
    assert usage is not None and usage.ai_units == 1.5
    summed = usage_from_metrics(
        {"modelMetrics": {"a": {"totalNanoAiu": 1e9}, "b": {"totalNanoAiu": 2e9}, "c": {}}}
    )
    assert summed is not None and summed.ai_units == 3.0


def test_recorded_background_subagent_idle_and_follow_up() -> None:
    raws = load("bg_subagent")
    follow = next(
        i
        for i, r in enumerate(raws)
        if r["type"] == "user.message" and r["data"]["content"] == "BGFOLLOW please"
    )
    mapper = EventMapper()
    events = [e for raw in raws[:follow] for e in mapper.map(raw)]
    mapper.note_subagent_prompt(raws[follow]["agentId"])
    events += [e for raw in raws[follow:] for e in mapper.map(raw)]
    statuses = [e.subagent.status for e in events if e.subagent is not None]
    # started, configured, first run done (idle), follow-up (running), idle again
    assert statuses[0] is SubagentStatus.RUNNING
    assert statuses[-3:] == [SubagentStatus.IDLE, SubagentStatus.RUNNING, SubagentStatus.IDLE]
    final = [e.subagent for e in events if e.subagent is not None][-1]
    assert final.background and [r.trigger for r in final.runs] == ["spawn", "user"]
    texts = [i.text for i in items(events, ItemKind.ASSISTANT) if i.agent_id == final.id]
    assert texts == ["first run done", "follow-up done"]
    # The CLI wakes the main agent after each subagent run: two turns, both completed.
    assert turn_states(events) == [
        TurnState.WORKING,
        TurnState.COMPLETED,
        TurnState.WORKING,
        TurnState.COMPLETED,
    ]
