"""The fake provider: every script feature and every contract rule it promises."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
from ahp_bridge_fake import FakeConversation, FakeProvider, parse_script
from ahp_bridge_fake.testing import EventLog

from ahp_bridge.agentapi import (
    DELIVERY_STEER,
    AgentAPIError,
    AgentUnavailable,
    Answer,
    Blob,
    Busy,
    Closed,
    ConversationNotFound,
    Event,
    EventKind,
    HistoryPager,
    InteractionGone,
    InteractionKind,
    InteractionState,
    ItemKind,
    ItemNotFound,
    OpenRequest,
    Prompt,
    ReadRequest,
    SignedOut,
    SubagentPager,
    SubagentRequest,
    SubagentStatus,
    TitleRequest,
    ToolStatus,
    TurnState,
    Unsupported,
    WindowRequest,
)

SCRIPT = """
default_model = "m1"

[defaults]
chunk_size = 4
delay = 1.0

[[models]]
id = "m1"
name = "Model One"
efforts = ["low", "high"]
context_sizes = [{ id = "default", tokens = 1000 }, { id = "long", tokens = 9000 }]

[[models]]
id = "m2"

[[prompts]]
text = "plain"
[[prompts.steps]]
kind = "reasoning"
text = "think"
chunk_size = 10
[[prompts.steps]]
kind = "text"
text = "Hello world!"

[[prompts]]
text = "tools"
[[prompts.steps]]
kind = "tool"
name = "shell"
title = "Run ls"
input = "ls"
output = "a b"
exit_code = 0
duration = 5
file_edits = [{ path = "a.txt", kind = "edit", additions = 2, deletions = 1 }]
[[prompts.steps]]
kind = "tool"
name = "shell"
output = "boom"
exit_code = 2
status = "failed"

[[prompts]]
text = "permission"
[[prompts.steps]]
kind = "permission"
title = "Write file"
detail = "x.txt"
tool = { name = "write", output = "written", duration = 1 }
[[prompts.steps.on.allow-once]]
kind = "text"
text = "once"
[[prompts.steps.on.allow-session]]
kind = "text"
text = "session"
[[prompts.steps.on.reject]]
kind = "text"
text = "denied"
[[prompts.steps]]
kind = "text"
text = "after"

[[prompts]]
text = "custom options"
[[prompts.steps]]
kind = "permission"
title = "Deploy"
options = [{ id = "go", label = "Go" }, { id = "no", label = "No", reject = true }]
[[prompts.steps.on.allow]]
kind = "text"
text = "allowed"
[[prompts.steps.on.reject]]
kind = "stop"
[[prompts.steps]]
kind = "text"
text = "deployed"

[[prompts]]
text = "question"
[[prompts.steps]]
kind = "question"
title = "Colour"
[[prompts.steps.questions]]
text = "Which?"
choices = ["red", "blue"]
[[prompts.steps.on.red]]
kind = "text"
text = "is red"
[[prompts.steps.on.answered]]
kind = "text"
text = "answered"
[[prompts.steps.on.reject]]
kind = "text"
text = "rejected"
[[prompts.steps.on.cancel]]
kind = "text"
text = "cancelled"

[[prompts]]
text = "form"
[[prompts.steps]]
kind = "form"
title = "Settings"
source = "mcp-x"
[[prompts.steps.questions]]
text = "Retries?"
field = { name = "retries", type = "integer", required = true, minimum = 1, maximum = 5 }
[[prompts.steps.questions]]
text = "Verbose?"
field = { name = "verbose", type = "boolean" }
[[prompts.steps.on.answered]]
kind = "text"
text = "saved"

[[prompts]]
text = "subagent"
[[prompts.steps]]
kind = "subagent"
id = "helper-1"
name = "helper"
description = "looks things up"
[[prompts.steps.steps]]
kind = "tool"
name = "grep"
[[prompts.steps.steps]]
kind = "text"
text = "found it"
[[prompts.steps]]
kind = "subagent"
name = "broken"
status = "failed"
error = "crashed"

[[prompts]]
text = "extras"
[[prompts.steps]]
kind = "title"
title = "Scripted title"
[[prompts.steps]]
kind = "usage"
ai_units = 2.5
[[prompts.steps]]
kind = "tokens"
input = 100
output = 20
cache_read = 50
duration_ms = 300
cost = 0.1
[[prompts.steps]]
kind = "context"
used = 500
limit = 1000
[[prompts.steps]]
kind = "notice"
text = "Heads up"

[[prompts]]
text = "fail"
[[prompts.steps]]
kind = "text"
text = "trying"
[[prompts.steps]]
kind = "error"
message = "model overloaded"
[[prompts.steps]]
kind = "text"
text = "never"

[[prompts]]
text = "exit"
[[prompts.steps]]
kind = "text"
text = "bye"
[[prompts.steps]]
kind = "exit"
message = "runtime crashed"

[[prompts]]
text = "slow"
[[prompts.steps]]
kind = "delay"
seconds = 10
[[prompts.steps]]
kind = "text"
text = "slow done"
[[prompts.steps]]
kind = "delay"
seconds = 10

[[prompts]]
text = "slow-nosteer"
steer = false
[[prompts.steps]]
kind = "delay"
seconds = 10
[[prompts.steps]]
kind = "text"
text = "done"

[[prompts]]
order = 1
[[prompts.steps]]
kind = "text"
text = "first prompt"

[[prompts]]
pattern = "^echo (.+)$"
[[prompts.steps]]
kind = "text"
text = "echoed"

[[conversations]]
title = "vip"
[[conversations.prompts]]
[[conversations.prompts.steps]]
kind = "text"
text = "vip answer"
"""


@pytest.fixture
async def provider(tmp_path: Path) -> AsyncIterator[FakeProvider]:
    fake = FakeProvider(parse_script(SCRIPT, "test.toml"), data_dir=tmp_path / "data")
    async with fake:
        yield fake


async def _open(provider: FakeProvider, **kwargs: str) -> tuple[FakeConversation, EventLog]:
    log = EventLog()
    conversation = await provider.open(OpenRequest(events=log, workdir="/w", **kwargs))
    return conversation, log


async def _turn(conversation: FakeConversation, log: EventLog, text: str) -> list[Event]:
    """Send text, wait for the turn to end, return the turn's events."""
    start = len(log.events)
    await conversation.send(Prompt(text=text))
    await log.turn_end(after=start)
    return log.events[start:]


def _texts(events: list[Event], kind: ItemKind = ItemKind.ASSISTANT) -> list[str]:
    return [
        e.item.text
        for e in events
        if e.kind is EventKind.ITEM and e.item is not None and e.item.kind is kind
    ]


def _end(events: list[Event]) -> TurnState:
    turn = events[-1].turn
    assert events[-1].kind is EventKind.TURN and turn is not None
    return turn.state


# -- streaming, pacing, tools ---------------------------------------------------------------


async def test_plain_turn_streams_chunks_with_pacing(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    started = trio.current_time()
    events = await _turn(conversation, log, "plain")
    user = events[0].item
    assert user is not None and user.kind is ItemKind.USER and user.text == "plain"
    assert events[1].turn is not None and events[1].turn.state is TurnState.WORKING
    assert events[1].turn.model == "m1"
    deltas = [e.delta for e in events if e.kind is EventKind.DELTA and e.delta is not None]
    assert [(d.kind, d.text) for d in deltas] == [
        (ItemKind.REASONING, "think"),
        (ItemKind.ASSISTANT, "Hell"),
        (ItemKind.ASSISTANT, "o wo"),
        (ItemKind.ASSISTANT, "rld!"),
    ]
    reasoning = next(e.item for e in events if e.item and e.item.kind is ItemKind.REASONING)
    assert reasoning.text == "think" and reasoning.ended_at is not None
    assert _texts(events) == ["Hello world!"]
    assert _end(events) is TurnState.COMPLETED
    # three assistant chunks: two pauses of 1 s each between them
    assert trio.current_time() - started == pytest.approx(2.0)


async def test_time_scale_shrinks_pacing(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    fake = FakeProvider(parse_script(SCRIPT), time_scale=0.25)
    async with fake:
        conversation, log = await _open(fake)
        started = trio.current_time()
        await _turn(conversation, log, "plain")
        assert trio.current_time() - started == pytest.approx(0.5)


async def test_tools_run_then_complete_or_fail(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    events = await _turn(conversation, log, "tools")
    tools = [e.item for e in events if e.item and e.item.kind is ItemKind.TOOL]
    assert [t.tool.status for t in tools if t.tool] == [
        ToolStatus.RUNNING,
        ToolStatus.COMPLETED,
        ToolStatus.RUNNING,
        ToolStatus.FAILED,
    ]
    first_done = tools[1]
    assert first_done.id == tools[0].id and first_done.tool is not None
    assert (first_done.tool.output, first_done.tool.exit_code) == ("a b", 0)
    assert [(f.path, f.additions, f.deletions) for f in first_done.tool.file_edits] == [
        ("a.txt", 2, 1)
    ]
    assert first_done.ended_at is not None and tools[0].ended_at is None
    failed = tools[3].tool
    assert failed is not None and (failed.output, failed.exit_code) == ("boom", 2)
    assert _end(events) is TurnState.COMPLETED


# -- permissions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("decision", "state", "branch", "tool_status"),
    [
        ("allow-once", InteractionState.ANSWERED, "once", ToolStatus.COMPLETED),
        ("allow-session", InteractionState.ANSWERED, "session", ToolStatus.COMPLETED),
        ("reject", InteractionState.REJECTED, "denied", ToolStatus.FAILED),
    ],
)
async def test_permission_waits_and_branches_on_the_decision(
    provider: FakeProvider,
    autojump_clock: trio.testing.MockClock,
    decision: str,
    state: InteractionState,
    branch: str,
    tool_status: ToolStatus,
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="permission"))
    asked = await log.pending()
    assert asked.kind is InteractionKind.PERMISSION and asked.title == "Write file"
    options = {o.id: o for o in asked.options}
    assert options["allow-once"].allow_once and not options["allow-session"].allow_once
    assert options["reject"].reject
    tool = next(e.item for e in log.events if e.item and e.item.kind is ItemKind.TOOL)
    assert tool.tool is not None and tool.tool.status is ToolStatus.PENDING
    assert asked.tool_call_id == tool.id
    # Nothing moves while the permission waits.
    count = len(log.events)
    await trio.sleep(100)
    assert len(log.events) == count
    await conversation.respond(asked.id, Answer(decision=decision))
    end = await log.turn_end()
    events = log.events
    answered = [e.interaction for e in events if e.interaction and e.interaction.id == asked.id]
    assert [(i.state, i.resolution) for i in answered] == [
        (InteractionState.PENDING, ""),
        (state, decision),
    ]
    tool_states = [
        e.item.tool.status for e in events if e.item and e.item.id == tool.id and e.item.tool
    ]
    assert tool_states[-1] is tool_status
    assert _texts(events) == [branch, "after"]
    assert end.turn is not None and end.turn.state is TurnState.COMPLETED


async def test_allow_for_session_covers_later_requests_but_allow_once_does_not(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="permission"))
    await conversation.respond((await log.pending()).id, Answer(decision="allow-once"))
    await log.turn_end()
    start = len(log.events)
    await conversation.send(Prompt(text="permission"))
    # allow-once did not carry over: asked again
    await conversation.respond(
        (await log.pending(after=start)).id, Answer(decision="allow-session")
    )
    await log.turn_end(after=start)
    start = len(log.events)
    events = await _turn(conversation, log, "permission")
    # allowed for the session: no interaction, the tool runs, the allow-session branch runs
    assert not any(e.interaction for e in events)
    tools = [e.item.tool.status for e in events if e.item and e.item.tool]
    assert tools == [ToolStatus.RUNNING, ToolStatus.COMPLETED]
    assert _texts(events) == ["session", "after"]
    # a new handle (reopen) starts without session approvals
    await conversation.close()
    reopened, log2 = await _open(provider, conversation_id=conversation.id())
    await reopened.send(Prompt(text="permission"))
    assert (await log2.pending()).kind is InteractionKind.PERMISSION


async def test_custom_options_fall_back_to_allow_and_reject_branches(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="custom options"))
    await conversation.respond((await log.pending()).id, Answer(decision="go"))
    await log.turn_end()
    assert _texts(log.events) == ["allowed", "deployed"]
    start = len(log.events)
    await conversation.send(Prompt(text="custom options"))
    await conversation.respond((await log.pending(after=start)).id, Answer(decision="no"))
    await log.turn_end(after=start)
    # on.reject is a stop step: the turn completes without "deployed"
    assert _texts(log.events[start:]) == []
    assert _end(log.events) is TurnState.COMPLETED


async def test_bad_decision_is_refused_and_the_request_stays_pending(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="permission"))
    asked = await log.pending()
    with pytest.raises(ValueError, match="'allow-always' is not one of the options"):
        await conversation.respond(asked.id, Answer(decision="allow-always"))
    await conversation.respond(asked.id, Answer(decision="allow-once"))
    with pytest.raises(InteractionGone):
        await conversation.respond(asked.id, Answer(decision="allow-once"))
    with pytest.raises(InteractionGone):
        await conversation.respond("no-such-id", Answer(decision="allow-once"))
    await log.turn_end()
    assert _texts(log.events) == ["once", "after"]


# -- questions and forms --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "state", "resolution", "text"),
    [
        (Answer(answers=[["red"]]), InteractionState.ANSWERED, "answered", "is red"),
        (Answer(answers=[["blue"]]), InteractionState.ANSWERED, "answered", "answered"),
        (Answer(reject=True), InteractionState.REJECTED, "rejected", "rejected"),
        (Answer(cancel=True), InteractionState.REJECTED, "cancelled", "cancelled"),
    ],
)
async def test_question_branches_on_the_answer(
    provider: FakeProvider,
    autojump_clock: trio.testing.MockClock,
    answer: Answer,
    state: InteractionState,
    resolution: str,
    text: str,
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="question"))
    asked = await log.pending()
    assert asked.kind is InteractionKind.QUESTION
    assert [q.choices for q in asked.questions] == [["red", "blue"]]
    await conversation.respond(asked.id, answer)
    await log.turn_end()
    final = [e.interaction for e in log.events if e.interaction][-1]
    assert (final.state, final.resolution) == (state, resolution)
    assert _texts(log.events) == [text]


async def test_question_answers_are_checked(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="question"))
    asked = await log.pending()
    with pytest.raises(ValueError, match="expected 1 answers"):
        await conversation.respond(asked.id, Answer(answers=[["red"], ["blue"]]))
    with pytest.raises(ValueError, match="'green' is not one of its choices"):
        await conversation.respond(asked.id, Answer(answers=[["green"]]))
    await conversation.respond(asked.id, Answer(answers=[["red"]]))
    await log.turn_end()
    assert _texts(log.events) == ["is red"]


async def test_form_fields_are_typed_and_bounded(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="form"))
    asked = await log.pending()
    assert asked.elicitation is not None and asked.elicitation.mode == "form"
    assert asked.elicitation.source == "mcp-x"
    retries, verbose = asked.questions
    assert retries.field is not None and retries.field.maximum == 5
    assert verbose.choices == ["Yes", "No"]
    with pytest.raises(ValueError, match="question 1: the answer must be at most 5"):
        await conversation.respond(asked.id, Answer(answers=[["9"], ["Yes"]]))
    with pytest.raises(ValueError, match="question 1: the answer is required"):
        await conversation.respond(asked.id, Answer(answers=[[], ["Yes"]]))
    with pytest.raises(ValueError, match="question 2"):
        await conversation.respond(asked.id, Answer(answers=[["3"], ["Maybe"]]))
    await conversation.respond(asked.id, Answer(answers=[["3"], ["No"]]))
    await log.turn_end()
    assert _texts(log.events) == ["saved"]


# -- subagents, live reports ----------------------------------------------------------------


async def test_subagents_run_their_own_items(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    events = await _turn(conversation, log, "subagent")
    records = [e.subagent for e in events if e.subagent is not None]
    assert [(s.name, s.status) for s in records] == [
        ("helper", SubagentStatus.RUNNING),
        ("helper", SubagentStatus.COMPLETED),
        ("broken", SubagentStatus.RUNNING),
        ("broken", SubagentStatus.FAILED),
    ]
    helper = records[1]
    assert helper.id == "helper-1" and helper.tool_calls == 1 and helper.ended_at is not None
    assert records[3].error == "crashed"
    own = [e.item for e in events if e.item and e.item.agent_id == "helper-1"]
    assert {i.kind for i in own} == {ItemKind.TOOL, ItemKind.ASSISTANT}
    spawn = [e.item for e in events if e.item and e.item.id == helper.parent_tool_call_id]
    assert spawn[-1].tool is not None and spawn[-1].tool.status is ToolStatus.COMPLETED
    assert spawn[-1].tool.output == "found it" and spawn[-1].agent_id == ""
    deltas = [e.delta for e in events if e.delta is not None]
    assert all(d.agent_id == "helper-1" for d in deltas)
    history = await conversation.history()
    assert [s.status for s in history.subagents] == [
        SubagentStatus.COMPLETED,
        SubagentStatus.FAILED,
    ]


async def test_cancel_stops_running_subagents(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="subagent"))
    await log.wait_for(lambda e: e.kind is EventKind.SUBAGENT)
    await conversation.cancel()
    records = [e.subagent for e in log.events if e.subagent is not None]
    assert [(s.id, s.status) for s in records] == [
        ("helper-1", SubagentStatus.RUNNING),
        ("helper-1", SubagentStatus.CANCELLED),
    ]
    assert records[1].ended_at is not None
    assert _end(log.events) is TurnState.CANCELLED
    history = await conversation.history()
    assert [s.status for s in history.subagents] == [SubagentStatus.CANCELLED]


async def test_title_usage_tokens_context_and_notice(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    events = await _turn(conversation, log, "extras")
    by_kind = {e.kind: e for e in events}
    assert by_kind[EventKind.TITLE].title == "Scripted title"
    usage = by_kind[EventKind.USAGE].usage
    assert usage is not None and usage.ai_units == 2.5
    tokens = by_kind[EventKind.TOKENS].tokens
    assert tokens is not None and (tokens.model, tokens.input, tokens.output) == ("m1", 100, 20)
    assert (tokens.cache_read, tokens.duration_ms, tokens.cost) == (50, 300, 0.1)
    context = by_kind[EventKind.CONTEXT].context
    assert context is not None and (context.used, context.limit) == (500, 1000)
    assert _texts(events, ItemKind.NOTICE) == ["Heads up"]
    # Once the caller names the conversation, the script no longer titles it.
    await conversation.set_title("Mine")
    again = await _turn(conversation, log, "extras")
    assert EventKind.TITLE not in [e.kind for e in again]


async def test_provider_error_fails_the_turn(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    events = await _turn(conversation, log, "fail")
    assert _texts(events) == ["trying"]
    end = events[-1].turn
    assert end is not None and end.state is TurnState.FAILED and end.error == "model overloaded"
    # The conversation stays usable.
    assert _texts(await _turn(conversation, log, "plain")) == ["Hello world!"]


async def test_unmatched_prompt_fails_its_turn(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await _turn(conversation, log, "plain")
    events = await _turn(conversation, log, "something else")
    end = events[-1].turn
    assert end is not None and end.state is TurnState.FAILED
    assert end.error == "no script rule matches this prompt"


SIGN_OUT_SCRIPT = """
[[prompts]]
text = "expire"
[[prompts.steps]]
kind = "text"
text = "working"
[[prompts.steps]]
kind = "sign_out"
message = "your GitHub token expired"
[[prompts.steps]]
kind = "text"
text = "never"

[[prompts]]
pattern = ".*"
[[prompts.steps]]
kind = "text"
text = "fine"
"""


async def test_a_sign_out_step_expires_the_sign_in_until_a_client_signs_in_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fake = FakeProvider(parse_script(SIGN_OUT_SCRIPT), sign_in_token="tok")
    async with fake:
        await fake.sign_in("tok")
        conversation, log = await _open(fake)
        events = await _turn(conversation, log, "expire")
        assert _texts(events) == ["working"]
        end = events[-1].turn
        assert end is not None and end.state is TurnState.FAILED
        assert end.error == "your GitHub token expired"
        account = await fake.account()
        assert (account.signed_in, account.message) == (False, "your GitHub token expired")
        hint = "the fake runtime is signed out: sign in from your client with the token"
        for call in (fake.check(), fake.models(), conversation.send(Prompt(text="again"))):
            with pytest.raises(SignedOut, match=hint):
                await call
        await fake.sign_in("tok")
        account = await fake.account()
        assert account.signed_in and account.message == ""
        await fake.check()
        assert _texts(await _turn(conversation, log, "hello")) == ["fine"]


async def test_a_sign_out_step_without_a_sign_in_token_fails_its_turn_saying_so(
    autojump_clock: trio.testing.MockClock,
) -> None:
    fake = FakeProvider(parse_script(SIGN_OUT_SCRIPT))
    async with fake:
        conversation, log = await _open(fake)
        end = (await _turn(conversation, log, "expire"))[-1].turn
        assert end is not None and end.state is TurnState.FAILED
        assert end.error == (
            "sign_out: this fake runtime has no sign-in to lose; configure the fake provider "
            "with sign_in_token"
        )
        assert (await fake.account()).signed_in and not fake.capabilities().account
        await fake.check()
        assert _texts(await _turn(conversation, log, "hello")) == ["fine"]


async def test_rules_by_order_pattern_and_conversation(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    assert _texts(await _turn(conversation, log, "anything")) == ["first prompt"]
    assert _texts(await _turn(conversation, log, "echo this")) == ["echoed"]
    vip, vip_log = await _open(provider, title="vip")
    assert _texts(await _turn(vip, vip_log, "plain")) == ["vip answer"]


async def test_runtime_exit_closes_the_conversation(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="exit"))
    exit_event = await log.wait_for(lambda e: e.kind is EventKind.EXIT)
    assert exit_event.error == "runtime crashed"
    assert log.events[-1] is exit_event
    with pytest.raises(Closed):
        await conversation.send(Prompt(text="plain"))
    # The next prompt reopens it: the record is intact.
    reopened, log2 = await _open(provider, conversation_id=conversation.id())
    history = await reopened.history()
    assert [i.text for i in history.items] == ["exit", "bye"]
    assert _texts(await _turn(reopened, log2, "plain")) == ["Hello world!"]


# -- busy, steer, cancel, close -------------------------------------------------------------


async def test_send_during_a_turn_is_busy(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="slow"))
    with pytest.raises(Busy):
        await conversation.send(Prompt(text="plain"))
    with pytest.raises(Busy):
        await conversation.set_model("m2", "", "")
    await log.turn_end()
    # Only the first prompt became a user item.
    assert _texts(log.events, ItemKind.USER) == ["slow"]


async def test_turn_end_frees_the_conversation_for_the_next_send(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    """A sink that sends as soon as it sees the turn end is not refused."""
    conversation, log = await _open(provider)
    await _turn(conversation, log, "plain")
    assert conversation.turn is None
    await _turn(conversation, log, "plain")


async def test_steer_is_delivered_at_the_next_step(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="slow"))
    await trio.sleep(1)
    await conversation.steer(Prompt(text="go faster"))
    await log.turn_end()
    kinds = [(e.item.kind, e.item.text) for e in log.events if e.item is not None]
    steer = next(e.item for e in log.events if e.item and e.item.delivery == DELIVERY_STEER)
    assert steer.text == "go faster" and steer.kind is ItemKind.USER
    # used before the step that followed the delay, not at the end
    assert kinds.index((ItemKind.USER, "go faster")) < kinds.index(
        (ItemKind.ASSISTANT, "slow done")
    )
    assert _texts(log.events, ItemKind.NOTICE) == []
    # A steer is not a new prompt: the next prompt is still the second one.
    history = await conversation.history()
    assert [i.delivery for i in history.items if i.kind is ItemKind.USER] == ["", DELIVERY_STEER]


async def test_unused_steer_gets_a_notice_before_the_turn_ends(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="slow-nosteer"))
    await conversation.steer(Prompt(text="ignored"))
    await log.turn_end()
    assert not any(e.item and e.item.delivery for e in log.events)
    notices = [i for i, e in enumerate(log.events) if e.item and e.item.kind is ItemKind.NOTICE]
    assert len(notices) == 1 and notices[0] == len(log.events) - 2
    with pytest.raises(AgentAPIError, match="no turn is running"):
        await conversation.steer(Prompt(text="late"))


async def test_cancel_ends_the_turn_and_expires_pending_interactions(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="permission"))
    asked = await log.pending()
    await conversation.cancel()
    tail = log.events[-2:]
    assert tail[0].interaction is not None and tail[0].interaction.id == asked.id
    assert tail[0].interaction.state is InteractionState.EXPIRED
    assert tail[1].turn is not None and tail[1].turn.state is TurnState.CANCELLED
    with pytest.raises(InteractionGone):
        await conversation.respond(asked.id, Answer(decision="allow-once"))
    count = len(log.events)
    await trio.sleep(100)
    assert len(log.events) == count  # the cancelled turn emits nothing more
    await conversation.cancel()  # nothing running: a no-op
    assert len(log.events) == count
    assert _texts(await _turn(conversation, log, "plain")) == ["Hello world!"]


async def test_cancel_mid_stream_stops_streaming(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="slow"))
    await trio.sleep(5)
    await conversation.cancel()
    await trio.sleep(100)
    assert _end(log.events) is TurnState.CANCELLED
    assert _texts(log.events) == []


async def test_cancelling_the_caller_never_cancels_the_turn(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    with trio.CancelScope() as scope:
        await conversation.send(Prompt(text="slow"))
        scope.cancel()
        await trio.sleep(1)
    end = await log.turn_end()
    assert end.turn is not None and end.turn.state is TurnState.COMPLETED


async def test_close_expires_pending_without_answers_and_stops_events(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await conversation.send(Prompt(text="question"))
    asked = await log.pending()
    await conversation.close()
    states = [e.interaction.state for e in log.events if e.interaction is not None]
    assert states == [InteractionState.PENDING, InteractionState.EXPIRED]
    assert not any(
        e.interaction and e.interaction.state is InteractionState.ANSWERED for e in log.events
    )
    count = len(log.events)
    await trio.sleep(100)
    assert len(log.events) == count
    for call in (
        conversation.send(Prompt(text="plain")),
        conversation.respond(asked.id, Answer(answers=[["red"]])),
        conversation.steer(Prompt(text="x")),
        conversation.cancel(),
        conversation.set_title("t"),
    ):
        with pytest.raises(Closed):
            await call
    await conversation.close()  # idempotent


async def test_conversations_run_concurrently_and_apart(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    one, log_one = await _open(provider)
    two, log_two = await _open(provider)
    assert one.id() != two.id()
    await one.send(Prompt(text="slow"))
    await two.send(Prompt(text="plain"))
    await log_two.turn_end()
    assert one.turn is not None  # still running while two finished
    await log_one.turn_end()
    assert _texts(log_one.events) == ["slow done"]
    assert _texts(log_two.events) == ["Hello world!"]


async def test_provider_exit_closes_conversations(tmp_path: Path) -> None:
    fake = FakeProvider(parse_script(SCRIPT), time_scale=0)
    async with fake:
        conversation, log = await _open(fake)
        await conversation.send(Prompt(text="question"))
        await log.pending()
    assert conversation.closed
    assert log.events[-1].turn is not None
    assert log.events[-1].turn.state is TurnState.CANCELLED
    with pytest.raises(Closed):
        await fake.open(OpenRequest(events=EventLog()))


# -- reopen, history, persistence -----------------------------------------------------------


async def test_reopen_by_id_returns_history(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await _turn(conversation, log, "plain")
    await _turn(conversation, log, "extras")
    await conversation.close()
    reopened, _ = await _open(provider, conversation_id=conversation.id())
    assert reopened.id() == conversation.id()
    history = await reopened.history()
    assert [(i.kind, i.text) for i in history.items] == [
        (ItemKind.USER, "plain"),
        (ItemKind.REASONING, "think"),
        (ItemKind.ASSISTANT, "Hello world!"),
        (ItemKind.USER, "extras"),
        (ItemKind.NOTICE, "Heads up"),
    ]
    assert history.usage is not None and history.usage.ai_units == 2.5
    assert history.model == "m1"
    read = await provider.read_history(ReadRequest(conversation_id=conversation.id()))
    assert read == history
    with pytest.raises(ConversationNotFound):
        await provider.open(OpenRequest(conversation_id="fake-missing", events=EventLog()))
    with pytest.raises(ConversationNotFound):
        await provider.open(OpenRequest(conversation_id="../../etc/passwd", events=EventLog()))


async def test_history_pages_by_agent_and_item(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    await _turn(conversation, log, "plain")
    await _turn(conversation, log, "subagent")
    cid = conversation.id()
    assert isinstance(provider, HistoryPager) and isinstance(provider, SubagentPager)
    full = [i for i in (await conversation.history()).items if i.agent_id == ""]
    ids = [i.id for i in full]
    window = await provider.read_history_window(
        WindowRequest(conversation_id=cid, item_id=ids[2], before=1, after=1)
    )
    assert [i.id for i in window.items] == ids[1:4]
    assert (window.at, window.start, window.next) == (1, False, ids[4])
    end = await provider.read_history_window(WindowRequest(conversation_id=cid, before=2))
    assert [i.id for i in end.items] == ids[-2:]
    assert (end.at, end.start, end.next) == (2, False, "")
    whole = await provider.read_history_window(WindowRequest(conversation_id=cid, before=99))
    assert whole.start and [i.id for i in whole.items] == ids
    helper = await provider.read_history_window(
        WindowRequest(conversation_id=cid, agent_id="helper-1", before=9)
    )
    assert {i.kind for i in helper.items} == {ItemKind.TOOL, ItemKind.ASSISTANT}
    assert all(i.agent_id == "helper-1" for i in helper.items)
    with pytest.raises(ItemNotFound):
        await provider.read_history_window(WindowRequest(conversation_id=cid, item_id="nope"))
    with pytest.raises(ConversationNotFound):
        await provider.read_history_window(WindowRequest(conversation_id="fake-none"))
    subagents = await provider.read_subagents(
        SubagentRequest(conversation_id=cid, agent_id="helper-1", before=5)
    )
    assert [s.name for s in subagents.subagents] == ["helper"] and subagents.start
    last = (await conversation.history()).subagents[-1]
    both = await provider.read_subagents(
        SubagentRequest(conversation_id=cid, agent_id=last.id, before=1)
    )
    assert [s.name for s in both.subagents] == ["helper", "broken"] and both.start
    only = await provider.read_subagents(SubagentRequest(conversation_id=cid, agent_id=last.id))
    assert [s.name for s in only.subagents] == ["broken"] and not only.start
    with pytest.raises(ItemNotFound):
        await provider.read_subagents(SubagentRequest(conversation_id=cid, agent_id="ghost"))


async def test_reopen_survives_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = FakeProvider(parse_script(SCRIPT), data_dir=data, time_scale=0)
    async with first:
        conversation, log = await _open(first, title="t")
        await _turn(conversation, log, "plain")
        await _turn(conversation, log, "subagent")
        await conversation.set_model("m2", "", "")
        before = await conversation.history()
        conversation_id = conversation.id()
    second = FakeProvider(parse_script(SCRIPT), data_dir=data, time_scale=0)
    async with second:
        reopened, log2 = await _open(second, conversation_id=conversation_id)
        after = await reopened.history()
        assert after == before
        assert after.model == "m2" and len(after.subagents) == 2
        # The prompt count continues: "anything" is no longer the first prompt.
        events = await _turn(reopened, log2, "anything")
        assert _end(events) is TurnState.FAILED
        ids = {i.id for i in after.items}
        new_ids = {e.item.id for e in events if e.item}
        assert not ids & new_ids
    third = FakeProvider(parse_script(SCRIPT), data_dir=data, time_scale=0)
    async with third:
        with pytest.raises(ConversationNotFound):
            await third.open(OpenRequest(conversation_id="fake-nope", events=EventLog()))


async def test_damaged_record_names_its_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "fake-x.jsonl").write_text('{"meta": {"id": "fake-x"}}\n{"event": {"Kind": 7}}\n')
    fake = FakeProvider(parse_script(SCRIPT), data_dir=data)
    async with fake:
        with pytest.raises(ValueError, match=r"fake-x.jsonl:2: damaged conversation record"):
            await fake.open(OpenRequest(conversation_id="fake-x", events=EventLog()))


# -- models, capabilities, unsupported ------------------------------------------------------


async def test_models_and_set_model(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    models = await provider.models()
    assert [(m.id, m.efforts) for m in models] == [("m1", ["low", "high"]), ("m2", [])]
    assert [c.id for c in models[0].context_sizes] == ["default", "long"]
    conversation, log = await _open(provider)
    await conversation.set_model("m1", "high", "long")
    selection = log.events[-1].model_selection
    assert selection is not None
    assert (selection.model, selection.effort, selection.context_size) == ("m1", "high", "long")
    for bad in (("m3", "", ""), ("m1", "max", ""), ("m2", "low", ""), ("m1", "", "huge")):
        with pytest.raises(ValueError):
            await conversation.set_model(*bad)
    events = await _turn(conversation, log, "plain")
    assert events[1].turn is not None and events[1].turn.model == "m1"
    with pytest.raises(ValueError, match="unknown model"):
        await provider.open(OpenRequest(model="nope", events=EventLog()))


async def test_capabilities_match_what_works(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    caps = provider.capabilities()
    assert caps.cancel and caps.permissions and caps.questions and caps.history
    assert caps.titles and caps.usage and caps.context_size
    assert caps.session_diff and caps.rewind
    assert not (caps.fork or caps.import_ or caps.plan)
    assert provider.name() == "fake"
    await provider.check()
    conversation, _ = await _open(provider)
    assert await conversation.commands() == []
    assert await conversation.diff() == []  # nothing written yet
    for call in (
        conversation.run_command("x", Prompt()),
        conversation.cancel_subagent("a"),
        conversation.prompt_subagent("a", "hi"),
    ):
        with pytest.raises(Unsupported):
            await call
    title = await provider.title(TitleRequest(text="\n  Fix the login bug\nmore"))
    assert title == "Fix the login bug"
    quotas = await provider.quota()
    assert quotas and quotas[0].unlimited


async def test_open_refuses_what_the_fake_cannot_apply(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    with pytest.raises(AgentUnavailable):
        await provider.open(OpenRequest(agent="reviewer", events=EventLog()))
    with pytest.raises(Unsupported):
        await provider.open(OpenRequest(assisted_approval_model="m1", events=EventLog()))


async def test_open_outside_the_provider_context_is_refused() -> None:
    fake = FakeProvider(parse_script(SCRIPT))
    with pytest.raises(Closed):
        await fake.open(OpenRequest(events=EventLog()))


async def test_user_item_carries_attachment_metadata_not_bytes(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    conversation, log = await _open(provider)
    blob = Blob(name="a.png", mime="image/png", data=b"12345")
    await conversation.send(Prompt(text="plain", attachments=[blob]))
    user = log.events[0].item
    assert user is not None
    assert [(a.name, a.mime, a.size) for a in user.attachments] == [("a.png", "image/png", 5)]
    assert "12345" not in str(user.to_json())
    await log.turn_end()


async def test_a_fault_in_a_turn_fails_that_turn_only(
    provider: FakeProvider,
    autojump_clock: trio.testing.MockClock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ahp_bridge_fake import turns

    async def broken(*args: object) -> None:
        raise RuntimeError("disk on fire")

    conversation, log = await _open(provider)
    with monkeypatch.context() as patch:
        patch.setattr(turns._Player, "tool", broken)
        events = await _turn(conversation, log, "tools")
    end = events[-1].turn
    assert end is not None and end.state is TurnState.FAILED
    assert end.error == "fake provider error: RuntimeError: disk on fire"
    assert _texts(await _turn(conversation, log, "plain")) == ["Hello world!"]


async def test_reopening_an_open_conversation_replaces_the_old_handle(
    provider: FakeProvider, autojump_clock: trio.testing.MockClock
) -> None:
    old, old_log = await _open(provider)
    await old.send(Prompt(text="permission"))
    asked = await old_log.pending()
    new, new_log = await _open(provider, conversation_id=old.id())
    # the old handle closed as close does: its request expired, its turn ended, no answer
    assert old.closed
    assert [e.interaction.state for e in old_log.events if e.interaction] == [
        InteractionState.PENDING,
        InteractionState.EXPIRED,
    ]
    assert _end(old_log.events) is TurnState.CANCELLED
    with pytest.raises(InteractionGone):
        await new.respond(asked.id, Answer(decision="allow-once"))
    assert _texts(await _turn(new, new_log, "plain")) == ["Hello world!"]
    assert new_log.events[0].item is not None
