"""Record a provider's calls and events, replay the file as a script, get the same stream."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_fake import FakeProvider, create_provider, parse_script
from ahp_bridge_fake.record import RecordingProvider
from ahp_bridge_fake.replay import load_recording, replay_provider
from ahp_bridge_fake.testing import EventLog

from ahp_bridge.agentapi import (
    Answer,
    Busy,
    Closed,
    Conversation,
    ConversationNotFound,
    Event,
    EventKind,
    ItemKind,
    OpenRequest,
    Prompt,
    ReadRequest,
    TurnState,
    Unsupported,
)

SCRIPT = """
[defaults]
chunk_size = 5
delay = 0.5

[[prompts]]
text = "plain"
[[prompts.steps]]
kind = "reasoning"
text = "let me think"
[[prompts.steps]]
kind = "text"
text = "A plain answer, streamed."
[[prompts.steps]]
kind = "usage"
ai_units = 1.25

[[prompts]]
text = "tools"
[[prompts.steps]]
kind = "permission"
title = "Run make"
tool = { name = "shell", input = "make", output = "ok", exit_code = 0, duration = 2 }
[[prompts.steps.on.allow-session]]
kind = "text"
text = "Ran it for the session."
[[prompts.steps]]
kind = "question"
title = "Next?"
[[prompts.steps.questions]]
text = "Continue?"
choices = ["yes", "no"]
[[prompts.steps.on.yes]]
kind = "subagent"
name = "worker"
[[prompts.steps.on.yes.steps]]
kind = "tool"
name = "grep"
duration = 1
[[prompts.steps.on.yes.steps]]
kind = "text"
text = "found"
[[prompts.steps]]
kind = "title"
title = "Tools session"

[[prompts]]
text = "slow"
[[prompts.steps]]
kind = "delay"
seconds = 10
[[prompts.steps]]
kind = "text"
text = "slowly done"
[[prompts.steps]]
kind = "delay"
seconds = 10
[[prompts.steps]]
kind = "text"
text = "and more"

[[prompts]]
text = "fail"
[[prompts.steps]]
kind = "error"
message = "overloaded"
"""

_TIME = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+(Z|[+-]\d\d:\d\d)$")


def normalise(value: Any) -> Any:
    """Event JSON with every timestamp replaced: the only part allowed to differ."""
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str) and _TIME.match(value):
        return "<time>"
    return value


def stream(events: list[Event]) -> list[Any]:
    return [normalise(e.to_json()) for e in events]


async def session(provider: Any) -> tuple[list[EventLog], str]:
    """A scripted session touching every recorded call; returns the logs and the first id."""
    log = EventLog()
    conversation = await provider.open(OpenRequest(events=log, workdir="/w", title="rec"))
    await conversation.send(Prompt(text="plain"))
    await log.turn_end()
    await conversation.set_model("fake-deep", "high", "")

    start = len(log.events)
    await conversation.send(Prompt(text="tools"))
    permission = await log.pending(after=start)
    await trio.sleep(3)
    await conversation.respond(permission.id, Answer(decision="allow-session"))
    question = await log.pending(after=len(log.events))
    with pytest.raises(ValueError):
        await conversation.respond(question.id, Answer(answers=[["maybe"]]))
    await conversation.respond(question.id, Answer(answers=[["yes"]]))
    await log.turn_end(after=start)
    await conversation.set_title("My title")

    start = len(log.events)
    await conversation.send(Prompt(text="slow"))
    await trio.sleep(2)
    with pytest.raises(Busy):
        await conversation.send(Prompt(text="plain"))
    await conversation.steer(Prompt(text="hurry"))
    await log.turn_end(after=start)

    start = len(log.events)
    await conversation.send(Prompt(text="slow"))
    await trio.sleep(13)
    await conversation.cancel()
    await trio.sleep(30)

    start = len(log.events)
    await conversation.send(Prompt(text="fail"))
    await log.turn_end(after=start)

    await conversation.send(Prompt(text="slow"))
    await trio.sleep(1)
    await conversation.close()

    with pytest.raises(ConversationNotFound):
        await provider.open(OpenRequest(events=EventLog(), conversation_id="fake-unknown"))
    second_log = EventLog()
    second = await provider.open(OpenRequest(events=second_log, workdir="/other"))
    await second.send(Prompt(text="plain"))
    await second_log.turn_end()
    await second.close()
    return [log, second_log], conversation.id()


async def test_replay_gives_the_identical_event_stream(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    recording = tmp_path / "session.jsonl"
    fake = FakeProvider(parse_script(SCRIPT, "s.toml"))
    recorder = RecordingProvider(fake, recording, clock=trio.current_time)
    async with recorder:
        recorded_logs, _ = await session(recorder)
    recorded = [stream(log.events) for log in recorded_logs]
    # The session really exercised every path.
    kinds = {e["Kind"] for e in recorded[0]}
    assert {"item", "delta", "turn", "interaction", "subagent", "title", "usage"} <= kinds
    assert {"model_selection"} <= kinds
    ends = [e["Turn"]["state"] for e in recorded[0] if e["Kind"] == "turn"]
    assert ends.count("cancelled") == 2 and "failed" in ends

    replayer = replay_provider(recording)
    async with replayer:
        replayed_logs, _ = await session(replayer)
    replayed = [stream(log.events) for log in replayed_logs]
    assert replayed == recorded


async def test_replayed_times_are_shifted_to_now_with_recorded_spacing(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    recording = tmp_path / "r.jsonl"
    recorder = RecordingProvider(
        FakeProvider(parse_script(SCRIPT)), recording, clock=trio.current_time
    )
    async with recorder:
        log = EventLog()
        conversation: Conversation = await recorder.open(OpenRequest(events=log))
        await conversation.send(Prompt(text="plain"))
        await log.turn_end()
    later = datetime(2030, 1, 1, tzinfo=UTC)
    replayer = replay_provider(recording, clock=lambda: later)
    async with replayer:
        log2 = EventLog()
        conversation = await replayer.open(OpenRequest(events=log2))
        await conversation.send(Prompt(text="plain"))
        await log2.turn_end()
    user = log2.events[0].item
    assert user is not None and user.time is not None
    assert abs((user.time - later).total_seconds()) < 60
    assert stream(log2.events) == stream(log.events)


async def test_recording_format(tmp_path: Path, autojump_clock: trio.testing.MockClock) -> None:
    recording = tmp_path / "r.jsonl"
    recorder = RecordingProvider(
        FakeProvider(parse_script(SCRIPT)), recording, clock=trio.current_time
    )
    async with recorder:
        await recorder.models()
        log = EventLog()
        conversation: Conversation = await recorder.open(OpenRequest(events=log, title="t"))
        await conversation.send(Prompt(text="slow"))
        await trio.sleep(1)
        with pytest.raises(Busy):
            await conversation.send(Prompt(text="again"))
        await log.turn_end()
        assert await recorder.read_history(ReadRequest(conversation_id=conversation.id()))
    lines = [json.loads(line) for line in recording.read_text().splitlines()]
    header = lines[0]
    assert header["recording"] == 1 and header["provider"] == "fake"
    assert header["capabilities"]["cancel"] is True
    body = lines[1:]
    assert all(isinstance(line["t"], float | int) for line in body)
    assert [line["t"] for line in body] == sorted(line["t"] for line in body)
    assert body[0]["models"][0]["id"] == "fake-fast"
    calls = [(line.get("call"), line.get("return")) for line in body if "event" not in line]
    assert calls[1:] == [
        ("open", None),
        (None, "open"),
        ("send", None),
        (None, "send"),
        ("send", None),
        (None, "send"),
        ("close", None),  # leaving the provider closed the open conversation
        (None, "close"),
    ]
    busy = [line for line in body if line.get("return") == "send"][1]
    assert busy["error"]["reason"] == "busy" and busy["error"]["type"] == "Busy"
    open_call = next(line for line in body if line.get("call") == "open")
    assert open_call["args"]["request"]["Title"] == "t"
    assert "Events" not in open_call["args"]["request"]
    send_call = next(line for line in body if line.get("call") == "send")
    assert send_call["args"]["prompt"]["Text"] == "slow"
    events = [line["event"] for line in body if "event" in line]
    assert events[0]["Kind"] == "item" and events[0]["Item"]["text"] == "slow"
    # the user item and turn start were emitted during send, before it returned
    first_send = next(i for i, line in enumerate(body) if line.get("call") == "send")
    assert body[first_send + 1]["event"]["Kind"] == "item"
    assert body[first_send + 2]["event"]["Turn"]["state"] == "working"
    assert body[first_send + 3] == {**body[first_send + 3], "return": "send", "error": None}
    # pacing is kept: the streamed answer comes 10 s after the turn started
    answer = next(line for line in body if "event" in line and line["event"]["Kind"] == "delta")
    assert answer["t"] - body[first_send]["t"] == pytest.approx(10.0)


async def test_recordings_hold_relative_times_only(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Recorded twice, at different moments, the same session gives the same file."""

    def record(path: Path) -> RecordingProvider:
        trio_start = trio.current_time()
        wall_start = datetime.now(UTC)

        def clock() -> datetime:
            return wall_start + timedelta(seconds=trio.current_time() - trio_start)

        fake = FakeProvider(parse_script(SCRIPT), clock=clock)
        return RecordingProvider(fake, path, clock=trio.current_time, wallclock=clock)

    files = [tmp_path / "one.jsonl", tmp_path / "two.jsonl"]
    for index, path in enumerate(files):
        await trio.sleep(1000 * (index + 1))  # a different moment, a different wall clock
        async with record(path) as recorder:
            await session(recorder)
    ids = re.compile(r"fake-[0-9a-f-]{36}")  # conversation ids are fresh each time
    first, second = (ids.sub("fake-<id>", path.read_text()) for path in files)
    assert first == second
    times = re.findall(r'"(?:time|started_at|ended_at|Time)":"([^"]+)"', first)
    assert times and all(t.startswith("2000-01-01T00:") for t in times)


async def test_replay_refuses_a_different_answer(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    recording = tmp_path / "r.jsonl"
    recorder = RecordingProvider(
        FakeProvider(parse_script(SCRIPT)), recording, clock=trio.current_time
    )
    async with recorder:
        log = EventLog()
        conversation: Conversation = await recorder.open(OpenRequest(events=log))
        await conversation.send(Prompt(text="tools"))
        asked = await log.pending()
        await conversation.respond(asked.id, Answer(decision="allow-session"))
        await conversation.cancel()
    replayer = replay_provider(recording)
    async with replayer:
        log2 = EventLog()
        conversation = await replayer.open(OpenRequest(events=log2))
        with pytest.raises(ValueError, match="no turn for this prompt"):
            await conversation.send(Prompt(text="unrecorded"))
        await conversation.send(Prompt(text="tools"))
        asked = await log2.pending()
        with pytest.raises(ValueError, match="replay diverged"):
            await conversation.respond(asked.id, Answer(decision="reject"))
        await conversation.respond(asked.id, Answer(decision="allow-session"))
        await conversation.cancel()
        assert log2.events[-1].turn is not None
        assert log2.events[-1].turn.state is TurnState.CANCELLED
    assert stream(log2.events) == stream(log.events)


async def test_unrecorded_cancel_and_close_follow_the_contract(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    recording = tmp_path / "r.jsonl"
    recorder = RecordingProvider(
        FakeProvider(parse_script(SCRIPT)), recording, clock=trio.current_time
    )
    async with recorder:
        log = EventLog()
        conversation: Conversation = await recorder.open(OpenRequest(events=log))
        await conversation.send(Prompt(text="tools"))
        await conversation.respond((await log.pending()).id, Answer(decision="allow-session"))
        await conversation.respond((await log.pending(after=6)).id, Answer(answers=[["no"]]))
        await log.turn_end()
    replayer = replay_provider(recording)
    async with replayer:
        log2 = EventLog()
        conversation = await replayer.open(OpenRequest(events=log2))
        await conversation.send(Prompt(text="tools"))
        asked = await log2.pending()
        await conversation.cancel()  # the recording answered instead
        expired = log2.events[-2].interaction
        assert expired is not None and expired.id == asked.id and expired.state == "expired"
        assert log2.events[-1].turn is not None
        assert log2.events[-1].turn.state is TurnState.CANCELLED
        count = len(log2.events)
        await trio.sleep(100)
        assert len(log2.events) == count
        history = await conversation.history()
        assert next(i.kind for i in history.items) is ItemKind.USER


def test_damaged_recording_names_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"recording": 1, "time_base": "2000-01-01T00:00:00Z"}\n{"t": 0}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: invalid recording line"):
        load_recording(bad)
    bad.write_text('{"t": 0, "conv": "c1", "event": {}}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: .*header"):
        load_recording(bad)


async def test_create_provider_replays_a_jsonl_script(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    recording = tmp_path / "r.jsonl"
    recorder = RecordingProvider(
        FakeProvider(parse_script(SCRIPT)), recording, clock=trio.current_time
    )
    async with recorder:
        log = EventLog()
        conversation: Conversation = await recorder.open(OpenRequest(events=log))
        await conversation.send(Prompt(text="plain"))
        await log.turn_end()
    provider = create_provider({"script": str(recording), "time_scale": 0})
    async with provider:
        log2 = EventLog()
        conversation = await provider.open(OpenRequest(events=log2))
        started = trio.current_time()
        await conversation.send(Prompt(text="plain"))
        await log2.turn_end()
        assert trio.current_time() == started  # time_scale 0: no pacing at all
    assert stream(log2.events) == stream(log.events)
    assert [e.kind for e in log2.events][-1] is EventKind.TURN


async def test_replay_plays_the_file_not_a_script(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """Edit the recording: the replay follows the edit."""
    recording = tmp_path / "r.jsonl"
    recorder = RecordingProvider(
        FakeProvider(parse_script(SCRIPT)), recording, clock=trio.current_time
    )
    async with recorder:
        log = EventLog()
        conversation: Conversation = await recorder.open(OpenRequest(events=log))
        await conversation.send(Prompt(text="plain"))
        await log.turn_end()
    assert len(log.events) > 10
    recording.write_text(recording.read_text().replace("A plain answer", "An edited answer"))
    replayer = replay_provider(recording, time_scale=0)
    async with replayer:
        log2 = EventLog()
        conversation = await replayer.open(OpenRequest(events=log2))
        await conversation.send(Prompt(text="plain"))
        await log2.turn_end()
    texts = [e.item.text for e in log2.events if e.item and e.item.kind is ItemKind.ASSISTANT]
    assert texts == ["An edited answer, streamed."]
    assert len(log2.events) == len(log.events)


async def test_every_conversation_call_is_recorded_with_its_outcome(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    recording = tmp_path / "r.jsonl"
    recorder = RecordingProvider(
        FakeProvider(parse_script(SCRIPT)), recording, clock=trio.current_time
    )
    async with recorder:
        assert recorder.name() == "fake" and recorder.capabilities().cancel
        await recorder.check()
        log = EventLog()
        conversation = await recorder.open(OpenRequest(events=log))
        assert await conversation.commands() == []
        for call in (
            conversation.run_command("review", Prompt(text="all")),
            conversation.cancel_subagent("sa1"),
            conversation.prompt_subagent("sa1", "hello"),
        ):
            with pytest.raises(Unsupported):
                await call
        assert await conversation.diff() == []
        assert (await conversation.history()).items == []
        await recorder.shutdown()
    lines = [json.loads(line) for line in recording.read_text().splitlines()[1:]]
    calls = {line["call"]: line["args"] for line in lines if "call" in line}
    assert calls["run_command"] == {
        "name": "review",
        "args": {"Text": "all", "Files": [], "Attachments": []},
    }
    assert calls["prompt_subagent"] == {"agent_id": "sa1", "text": "hello"}
    returns = {line["return"]: line for line in lines if "return" in line}
    assert returns["commands"]["result"] == [] and returns["commands"]["error"] is None
    for name in ("run_command", "cancel_subagent", "prompt_subagent"):
        assert returns[name]["error"]["reason"] == "unsupported"
    assert returns["diff"]["result"] == [] and returns["diff"]["error"] is None
    assert returns["close"]["error"] is None  # shutdown closed the conversation


async def test_replay_serves_recorded_models_and_exits(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    source = SCRIPT + (
        '\n[[models]]\nid = "rec-model"\nname = "Recorded"\nefforts = ["low"]\n'
        'context_sizes = [{ id = "default", tokens = 42 }]\n'
        '\n[[prompts]]\ntext = "bye"\n[[prompts.steps]]\nkind = "exit"\nmessage = "gone"\n'
    )
    recording = tmp_path / "r.jsonl"
    recorder = RecordingProvider(
        FakeProvider(parse_script(source)), recording, clock=trio.current_time
    )
    async with recorder:
        recorded_models = await recorder.models()
        log = EventLog()
        conversation: Conversation = await recorder.open(OpenRequest(events=log))
        await conversation.send(Prompt(text="bye"))
        await log.wait_for(lambda e: e.kind is EventKind.EXIT)
    replayer = replay_provider(recording, time_scale=0)
    async with replayer:
        assert await replayer.models() == recorded_models
        log2 = EventLog()
        conversation = await replayer.open(OpenRequest(events=log2))
        with pytest.raises(ValueError, match="no steer"):
            await conversation.steer(Prompt(text="x"))
        await conversation.send(Prompt(text="bye"))
        await log2.wait_for(lambda e: e.kind is EventKind.EXIT)
        with pytest.raises(Closed):
            await conversation.send(Prompt(text="bye"))
    assert stream(log2.events) == stream(log.events)


async def test_shutdown_is_recorded_as_closes_and_replayed_only_on_close(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    recording = tmp_path / "r.jsonl"
    recorder = RecordingProvider(
        FakeProvider(parse_script(SCRIPT)), recording, clock=trio.current_time
    )
    async with recorder:
        log = EventLog()
        conversation: Conversation = await recorder.open(OpenRequest(events=log))
        await conversation.send(Prompt(text="tools"))
        await log.pending()
    # leaving the provider expired the request and ended the turn
    assert [e.kind for e in log.events[-2:]] == [EventKind.INTERACTION, EventKind.TURN]
    replayer = replay_provider(recording)
    async with replayer:
        log2 = EventLog()
        conversation = await replayer.open(OpenRequest(events=log2))
        await conversation.send(Prompt(text="tools"))
        await log2.pending()
        count = len(log2.events)
        await trio.sleep(1000)
        assert len(log2.events) == count  # the recorded close waits for a close
    assert stream(log2.events) == stream(log.events)
