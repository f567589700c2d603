"""The fake provider served over gRPC in-process: turns, interactions, history, conformance."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from ahp_bridge_fake import CONFORMANCE_SCRIPT, FakeProvider, create_provider
from ahp_bridge_remote import RemoteProvider

from ahp_bridge import agentapi
from ahp_bridge.conformance import CHECKS, Check, Outcome, fake_target, run_check
from ahp_bridge.conformance.target import Target

from .test_remote_helpers import Recorder, serving, socket_address

INTERACTION = agentapi.EventKind.INTERACTION
PENDING = agentapi.InteractionState.PENDING


def _fake(data_dir: Path | None = None) -> FakeProvider:
    options = {"script": str(CONFORMANCE_SCRIPT), "time_scale": 0.05}
    if data_dir is not None:
        options["data_dir"] = str(data_dir)
    return create_provider(options)


@asynccontextmanager
async def remote_fake(
    data_dir: Path | None = None,
) -> AsyncIterator[tuple[RemoteProvider, FakeProvider]]:
    fake = _fake(data_dir)
    async with serving(fake, socket_address()) as (address, _), RemoteProvider(address) as remote:
        yield remote, fake


async def _pending(sink: Recorder, kind: agentapi.InteractionKind) -> agentapi.Interaction:
    found = await sink.wait_for(
        lambda e: (
            e.kind == INTERACTION
            and e.interaction is not None
            and e.interaction.kind == kind
            and e.interaction.state == PENDING
        )
    )
    assert found[0].interaction is not None
    return found[0].interaction


async def _permission_and_question_turns(provider: agentapi.Provider, sink: Recorder) -> str:
    req = agentapi.OpenRequest(session_id="s1", workdir="/tmp", events=sink)
    conv = await provider.open(req)
    await conv.send(agentapi.Prompt(text="conformance: permission"))
    ask = await _pending(sink, agentapi.InteractionKind.PERMISSION)
    allow = next(o for o in ask.options if not o.reject)
    await conv.respond(ask.id, agentapi.Answer(decision=allow.id))
    end = await sink.wait_turn_end(1)
    assert end.turn is not None and end.turn.state == agentapi.TurnState.COMPLETED
    assert f"allowed: {allow.id}" in sink.text()

    await conv.send(agentapi.Prompt(text="conformance: question"))
    question = await _pending(sink, agentapi.InteractionKind.QUESTION)
    assert question.questions[0].choices == ["red", "green", "blue"]
    await conv.respond(question.id, agentapi.Answer(answers=[["green"]]))
    end = await sink.wait_turn_end(2)
    assert end.turn is not None and end.turn.state == agentapi.TurnState.COMPLETED
    assert "answer: green" in sink.text()
    with pytest.raises(agentapi.InteractionGone):
        await conv.respond(question.id, agentapi.Answer(answers=[["red"]]))
    conversation_id = conv.id()
    await conv.close()
    return conversation_id


async def test_turns_with_permission_and_question_match_the_in_process_fake() -> None:
    direct = Recorder()
    async with _fake() as fake:
        await _permission_and_question_turns(fake, direct)
    remote_sink = Recorder()
    async with remote_fake() as (remote, _):
        assert remote.name() == "fake"
        assert remote.capabilities().permissions and remote.capabilities().questions
        await _permission_and_question_turns(remote, remote_sink)
    # The same script gives the same event stream, kind for kind, through the hop.
    assert [e.kind for e in remote_sink.events] == [e.kind for e in direct.events]
    assert remote_sink.text() == direct.text()
    assert remote_sink.of(agentapi.EventKind.EXIT) == []


async def test_history_crosses_whole_and_reopen_finds_the_conversation(tmp_path: Path) -> None:
    async with remote_fake(tmp_path) as (remote, fake):
        conversation_id = await _permission_and_question_turns(remote, Recorder())
        reopened = await remote.open(
            agentapi.OpenRequest(conversation_id=conversation_id, events=Recorder())
        )
        assert reopened.id() == conversation_id
        remote_history = await reopened.history()
        users = [i.text for i in remote_history.items if i.kind == agentapi.ItemKind.USER]
        assert users == ["conformance: permission", "conformance: question"]
        # The client mirrors the served provider's optional Protocols, no more, no less.
        assert isinstance(fake, agentapi.HistoryReader)
        assert isinstance(remote, agentapi.HistoryReader)
        assert isinstance(remote, agentapi.Titler) == isinstance(fake, agentapi.Titler)
        assert isinstance(remote, agentapi.HistoryPager) == isinstance(fake, agentapi.HistoryPager)
        req = agentapi.ReadRequest(conversation_id=conversation_id)
        assert await remote.read_history(req) == await fake.read_history(req)
        assert isinstance(fake, agentapi.HistoryPager) and isinstance(remote, agentapi.HistoryPager)
        window = agentapi.WindowRequest(conversation_id=conversation_id, before=3)
        assert await remote.read_history_window(window) == await fake.read_history_window(window)
        assert isinstance(remote, agentapi.SubagentPager)
        with pytest.raises(agentapi.ItemNotFound, match="nobody"):
            await remote.read_subagents(
                agentapi.SubagentRequest(conversation_id=conversation_id, agent_id="nobody")
            )
        assert isinstance(fake, agentapi.QuotaReporter)
        assert isinstance(remote, agentapi.QuotaReporter)
        assert await remote.quota() == await fake.quota()
        assert remote.capabilities().usage == fake.capabilities().usage
        assert isinstance(remote, agentapi.Titler)
        assert await remote.title(agentapi.TitleRequest(text="Fix the build\nplease")) == (
            "Fix the build"
        )
        await reopened.close()
        with pytest.raises(agentapi.ConversationNotFound):
            await remote.open(agentapi.OpenRequest(conversation_id="no-such", events=Recorder()))


def _remote_target() -> Target:
    base = fake_target()

    @asynccontextmanager
    async def factory() -> AsyncIterator[agentapi.Provider]:
        async with remote_fake() as (remote, _):
            yield remote

    return Target("remote(fake)", factory, base.open_request, base.prompts, base.timeout)


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
async def test_the_fake_over_grpc_keeps_the_contract(check: Check) -> None:
    result = await run_check(_remote_target(), check)
    # agentapi.proto carries no rewind calls, so the remote client hides the fake's `rewind`.
    expected = Outcome.NOT_APPLICABLE if check.name == "cap_rewind" else Outcome.PASS
    assert result.outcome is expected, result.line()
