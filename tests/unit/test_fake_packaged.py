"""The packaged fake: its entry point, options, and the demo and conformance scripts it ships."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest
import trio
from ahp_bridge_fake import CONFORMANCE_SCRIPT, DEMO_SCRIPT, FakeProvider, create_provider
from ahp_bridge_fake.record import RecordingProvider
from ahp_bridge_fake.testing import EventLog

from ahp_bridge.agentapi import (
    Answer,
    Conversation,
    EventKind,
    HistoryReader,
    InteractionKind,
    ItemKind,
    OpenRequest,
    Prompt,
    Provider,
    QuotaReporter,
    Titler,
    TurnState,
)


def test_entry_point_builds_the_fake() -> None:
    # One target (a stale copy of the distribution's metadata may list it twice).
    found = {ep.value: ep for ep in entry_points(group="ahp_bridge.providers") if ep.name == "fake"}
    assert list(found) == ["ahp_bridge_fake:create_provider"]
    provider = found["ahp_bridge_fake:create_provider"].load()({})
    assert isinstance(provider, FakeProvider)
    assert provider.script.source == "demo.toml"


def test_fake_satisfies_the_contract_protocols(tmp_path: Path) -> None:
    provider: Provider = create_provider({"time_scale": 0})
    assert isinstance(provider, Provider)
    for capability in (HistoryReader, Titler, QuotaReporter):
        assert isinstance(provider, capability)
    recorder: Provider = RecordingProvider(provider, tmp_path / "r.jsonl")
    assert isinstance(recorder, Provider) and isinstance(recorder, HistoryReader)


def test_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown fake provider option"):
        create_provider({"scirpt": "x.toml"})
    with pytest.raises(ValueError, match="time_scale must be a number"):
        create_provider({"time_scale": "fast"})
    with pytest.raises(ValueError, match="time_scale must be at least 0"):
        create_provider({"time_scale": -1})
    with pytest.raises(ValueError, match=r"nope.toml:1: cannot read script"):
        create_provider({"script": str(tmp_path / "nope.toml")})
    provider = create_provider(
        {"script": str(CONFORMANCE_SCRIPT), "data_dir": str(tmp_path), "time_scale": "0.5"}
    )
    assert provider.time_scale == 0.5 and provider.data_dir == tmp_path
    assert DEMO_SCRIPT.is_file()


async def test_demo_shows_every_flow_on_the_first_prompt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = create_provider({})
    async with provider:
        log = EventLog()
        conversation: Conversation = await provider.open(OpenRequest(events=log))
        await conversation.send(Prompt(text="what can you do?"))
        permission = await log.pending()
        assert permission.kind is InteractionKind.PERMISSION
        assert {o.id for o in permission.options} >= {"allow-once", "reject"}
        await conversation.respond(permission.id, Answer(decision="allow-once"))
        question = await log.pending(after=len(log.events))
        assert question.kind is InteractionKind.QUESTION
        await conversation.respond(question.id, Answer(answers=[["Go"]]))
        end = await log.turn_end()
        assert end.turn is not None and end.turn.state is TurnState.COMPLETED
        kinds = set(log.kinds())
        assert {EventKind.DELTA, EventKind.TITLE, EventKind.USAGE, EventKind.TOKENS} <= kinds
        items = {e.item.kind for e in log.events if e.item is not None}
        assert items >= {ItemKind.REASONING, ItemKind.ASSISTANT, ItemKind.TOOL}
        answer = next(
            e.item.text for e in log.events if e.item and e.item.kind is ItemKind.ASSISTANT
        )
        assert answer.lstrip().startswith("## ")  # markdown
        tools = [e.item.tool for e in log.events if e.item and e.item.tool]
        # the auto-approved tool ran before any permission was asked
        assert tools[0].name == "shell" and tools[1].status == "completed"
        start = len(log.events)
        await conversation.send(Prompt(text="and now?"))
        await log.turn_end(after=start)
        assert not any(e.interaction for e in log.events[start:])


CONFORMANCE_CASES = [
    ("conformance: plain", None, TurnState.COMPLETED, "Hello from the conformance script."),
    ("conformance: fail", None, TurnState.FAILED, "About to fail."),
    ("anything else", None, TurnState.COMPLETED, "ok"),
    ("conformance: permission", Answer(decision="allow-once"), None, "allowed: allow-once"),
    ("conformance: permission", Answer(decision="allow-session"), None, "allowed: allow-session"),
    ("conformance: permission", Answer(decision="reject"), None, "rejected"),
    ("conformance: question", Answer(answers=[["green"]]), None, "answer: green"),
    ("conformance: question", Answer(reject=True), None, "rejected"),
    ("conformance: question", Answer(cancel=True), None, "cancelled"),
    ("conformance: form", Answer(answers=[["3"], ["Yes"]]), None, "settings saved"),
    ("conformance: slow", None, TurnState.COMPLETED, "Step two is done."),
]


@pytest.mark.parametrize(("prompt", "answer", "state", "last_text"), CONFORMANCE_CASES)
async def test_conformance_script_prompts(
    autojump_clock: trio.testing.MockClock,
    prompt: str,
    answer: Answer | None,
    state: TurnState | None,
    last_text: str,
) -> None:
    provider = create_provider({"script": str(CONFORMANCE_SCRIPT)})
    async with provider:
        log = EventLog()
        conversation = await provider.open(OpenRequest(events=log))
        await conversation.send(Prompt(text=prompt))
        if answer is not None:
            await conversation.respond((await log.pending()).id, answer)
        end = await log.turn_end()
        assert end.turn is not None and end.turn.state is (state or TurnState.COMPLETED)
        texts = [e.item.text for e in log.events if e.item and e.item.kind is ItemKind.ASSISTANT]
        assert texts[-1] == last_text


async def test_conformance_slow_turn_is_long_enough_to_interrupt(
    autojump_clock: trio.testing.MockClock,
) -> None:
    provider = create_provider({"script": str(CONFORMANCE_SCRIPT)})
    async with provider:
        log = EventLog()
        conversation = await provider.open(OpenRequest(events=log))
        started = trio.current_time()
        await conversation.send(Prompt(text="conformance: slow-nosteer"))
        await conversation.steer(Prompt(text="please"))
        end = await log.turn_end()
        assert trio.current_time() - started >= 30
        assert end.turn is not None and end.turn.state is TurnState.COMPLETED
        assert [e.item.kind for e in log.events if e.item][-1] is ItemKind.NOTICE
        await conversation.send(Prompt(text="conformance: exit"))
        exit_event = await log.wait_for(lambda e: e.kind is EventKind.EXIT)
        assert exit_event.error == "scripted exit"
