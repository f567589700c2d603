"""The copilot provider against the real Copilot CLI and the scripted model server, offline.

One CLI process (server mode) and one model server serve the whole module; each test opens its
own provider (connecting to that CLI) and conversations, and scripts the model with triggers of
its own so tests do not see each other's replies.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_copilot import CopilotProvider, create_provider

from ahp_bridge.agentapi import (
    DELIVERY_STEER,
    AgentAPIError,
    Answer,
    Busy,
    Closed,
    ConversationNotFound,
    EventKind,
    InteractionGone,
    InteractionKind,
    InteractionState,
    ItemKind,
    OpenRequest,
    Prompt,
    SignedOut,
    SubagentStatus,
    ToolStatus,
    TurnState,
)
from tests.support.copilot_cli import CLI_PATH, CliServer, RecordingSink, cli_server, requires_cli
from tests.support.model_server import (
    Hold,
    HttpError,
    ModelServer,
    Reasoning,
    Text,
    ToolCall,
    Usage,
)

pytestmark = requires_cli


@pytest.fixture(scope="module")
def models() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServer]:
    with cli_server(tmp_path_factory.mktemp("copilot-cli")) as srv:
        yield srv


@pytest.fixture
async def provider(cli: CliServer, models: ModelServer) -> AsyncIterator[CopilotProvider]:
    async with create_provider(cli.options(models.base_url)) as p:
        yield p


async def _open(provider: CopilotProvider, workdir: Path, **kw: Any) -> tuple[Any, RecordingSink]:
    sink = RecordingSink()
    conv = await provider.open(OpenRequest(workdir=str(workdir), events=sink, **kw))
    return conv, sink


async def _turn(conv: Any, sink: RecordingSink, text: str) -> Any:
    start = len(sink.snapshot())
    await conv.send(Prompt(text=text))
    return await sink.turn_end(after=start)


async def test_check_and_models(provider: CopilotProvider) -> None:
    await provider.check()
    assert [m.id for m in await provider.models()] == ["fake-model", "fake-model-2"]
    caps = provider.capabilities()
    assert caps.cancel and caps.permissions and caps.questions and caps.history


async def test_streamed_text_and_reasoning(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    models.script(
        "t-stream", [Reasoning("pondering"), Text("Streamed answer", chunks=4), Usage(30, 5)]
    )
    conv, sink = await _open(provider, tmp_path)
    turn = await _turn(conv, sink, "t-stream please")
    assert turn.state is TurnState.COMPLETED

    events = sink.snapshot()
    kinds = [e.kind for e in events]
    first_turn = kinds.index(EventKind.TURN)
    assert sink.turns()[0].state is TurnState.WORKING
    assert first_turn < kinds.index(EventKind.ITEM)  # working before any item
    (user,) = sink.items(ItemKind.USER)
    assert user.text == "t-stream please"
    (answer,) = sink.items(ItemKind.ASSISTANT)
    assert answer.text == "Streamed answer"
    assert sink.deltas(answer) == "Streamed answer"
    (thought,) = sink.items(ItemKind.REASONING)
    assert thought.text == "pondering"
    assert sink.deltas(thought) == "pondering"
    tokens = sink.tokens()
    assert tokens and tokens[-1].input == 30 and tokens[-1].output == 5
    assert [e.title for e in sink.of(EventKind.TITLE)] == ["t-stream please"]
    ctx = sink.contexts()
    assert ctx and ctx[-1].limit > 0 and ctx[-1].used > 0
    await conv.close()


async def test_shell_permission_approved(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    models.script(
        "t-approve",
        [ToolCall("bash", {"command": "echo approved-output", "description": "Echo"})],
        [Text("done")],
    )
    conv, sink = await _open(provider, tmp_path)
    await conv.send(Prompt(text="t-approve"))
    inter = await sink.pending_interaction()
    assert inter.kind is InteractionKind.PERMISSION
    assert inter.detail == "echo approved-output"
    assert inter.intention == "Echo"
    assert {o.id for o in inter.options} >= {"approve-once", "reject"}
    assert any(o.allow_once for o in inter.options)
    tools = sink.items(ItemKind.TOOL)
    assert inter.tool_call_id == tools[0].id
    assert tools[0].tool.status is ToolStatus.RUNNING  # waiting for permission

    with pytest.raises(ValueError, match="decision must be one of"):
        await conv.respond(inter.id, Answer(decision="maybe"))
    await conv.respond(inter.id, Answer(decision="approve-once"))
    turn = await sink.turn_end()
    assert turn.state is TurnState.COMPLETED
    assert sink.interactions()[inter.id].state is InteractionState.ANSWERED
    (tool,) = sink.items(ItemKind.TOOL)
    assert tool.tool.status is ToolStatus.COMPLETED
    assert tool.tool.exit_code == 0
    assert "approved-output" in tool.tool.output
    assert tool.ended_at is not None
    # The model saw the command's output in its next request.
    second = models.chat_requests("t-approve")[-1]
    assert any("approved-output" in json.dumps(m) for m in second.messages if m["role"] == "tool")
    # Answering again: the request is gone.
    with pytest.raises(InteractionGone):
        await conv.respond(inter.id, Answer(decision="approve-once"))
    await conv.close()


async def test_shell_permission_rejected(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    marker = tmp_path / "must-not-exist"
    models.script(
        "t-reject",
        [ToolCall("bash", {"command": f"touch {marker}", "description": "Touch"})],
        [Text("ok then")],
    )
    conv, sink = await _open(provider, tmp_path)
    await conv.send(Prompt(text="t-reject"))
    inter = await sink.pending_interaction()
    await conv.respond(inter.id, Answer(decision="reject"))
    turn = await sink.turn_end()
    assert turn.state in (TurnState.COMPLETED, TurnState.CANCELLED)
    assert sink.interactions()[inter.id].state is InteractionState.REJECTED
    (tool,) = sink.items(ItemKind.TOOL)
    assert tool.tool.status is ToolStatus.FAILED
    assert "rejected" in tool.tool.output.lower()
    assert not marker.exists()
    await conv.close()


async def test_ask_user_question(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    models.script(
        "t-ask",
        [ToolCall("ask_user", {"question": "Which color?", "choices": ["red", "blue"]})],
        [Text("noted")],
    )
    conv, sink = await _open(provider, tmp_path)
    await conv.send(Prompt(text="t-ask"))
    inter = await sink.pending_interaction()
    assert inter.kind is InteractionKind.QUESTION
    (question,) = inter.questions
    assert question.text == "Which color?"
    assert question.choices == ["red", "blue"]
    assert inter.tool_call_id == sink.items(ItemKind.TOOL)[0].id
    await conv.respond(inter.id, Answer(answers=[["blue"]]))
    assert (await sink.turn_end()).state is TurnState.COMPLETED
    assert sink.interactions()[inter.id].state is InteractionState.ANSWERED
    (tool,) = sink.items(ItemKind.TOOL)
    assert "blue" in tool.tool.output
    tool_msgs = [m for m in models.chat_requests("t-ask")[-1].messages if m["role"] == "tool"]
    assert any("blue" in json.dumps(m) for m in tool_msgs)
    await conv.close()


async def test_subagent(provider: CopilotProvider, models: ModelServer, tmp_path: Path) -> None:
    models.script(
        "t-delegate",
        [
            ToolCall(
                "task",
                {
                    "description": "Scout the repo",
                    "prompt": "SUBAGENT-TASK look",
                    "agent_type": "explore",
                    "name": "scout",
                },
            )
        ],
        [Text("main done")],
    )
    models.script("SUBAGENT-TASK", [Text("subagent findings")])
    conv, sink = await _open(provider, tmp_path)
    turn = await _turn(conv, sink, "t-delegate")
    assert turn.state is TurnState.COMPLETED
    subs = sink.subagents()
    assert subs[0].status is SubagentStatus.RUNNING
    final = subs[-1]
    assert final.status is SubagentStatus.COMPLETED
    assert final.name == "scout" and final.description == "Scout the repo"
    spawn = [t for t in sink.items(ItemKind.TOOL) if t.tool.name == "task"]
    assert final.parent_tool_call_id == spawn[0].id
    sub_items = sink.items(ItemKind.ASSISTANT, agent=final.id)
    assert [i.text for i in sub_items] == ["subagent findings"]
    assert [i.text for i in sink.items(ItemKind.ASSISTANT, agent="")] == ["main done"]
    await conv.close()


async def test_cancel_running_turn(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    hold = Hold(threading.Event())
    models.script("t-cancel", [Text("partial "), hold, Text("never")])
    conv, sink = await _open(provider, tmp_path)
    await conv.send(Prompt(text="t-cancel"))
    await trio.to_thread.run_sync(hold.started.wait, 30)
    with pytest.raises(Busy):
        await conv.send(Prompt(text="another"))
    await conv.cancel()
    turn = await sink.turn_end()
    hold.gate.set()
    assert turn.state is TurnState.CANCELLED
    assert turn.reason == "user_initiated"
    # The conversation stays usable.
    models.script("t-after-cancel", [Text("still here")])
    assert (await _turn(conv, sink, "t-after-cancel")).state is TurnState.COMPLETED
    await conv.close()


async def test_steer_joins_running_turn(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    models.script(
        "t-steer", [ToolCall("bash", {"command": "echo s", "description": "S"})], [Text("x")]
    )
    models.script("STEER-TEXT", [Text("steered reply")])
    conv, sink = await _open(provider, tmp_path)
    with pytest.raises(AgentAPIError, match="no turn is running"):
        await conv.steer(Prompt(text="STEER-TEXT too early"))
    await conv.send(Prompt(text="t-steer"))
    inter = await sink.pending_interaction()
    await conv.steer(Prompt(text="STEER-TEXT use caps"))
    await conv.respond(inter.id, Answer(decision="approve-once"))
    assert (await sink.turn_end()).state is TurnState.COMPLETED
    steer_items = [i for i in sink.items(ItemKind.USER) if i.text == "STEER-TEXT use caps"]
    assert len(steer_items) == 1 and steer_items[0].delivery == DELIVERY_STEER
    assert models.chat_requests("STEER-TEXT"), "the model saw the steering message"
    assert "steered reply" in [i.text for i in sink.items(ItemKind.ASSISTANT)]
    await conv.close()


async def test_upstream_error_fails_turn(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    models.script("t-fail", [HttpError(400, "fake upstream failure")])
    conv, sink = await _open(provider, tmp_path)
    turn = await _turn(conv, sink, "t-fail")
    assert turn.state is TurnState.FAILED
    assert "fake upstream failure" in turn.error
    notices = sink.items(ItemKind.NOTICE)
    assert any("fake upstream failure" in n.text for n in notices)
    await conv.close()


async def test_title_model_resume_and_history(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    models.script(
        "t-hist",
        [ToolCall("bash", {"command": "echo h", "description": "H"})],
        [Text("hist answer")],
    )
    conv, sink = await _open(provider, tmp_path)
    await conv.send(Prompt(text="t-hist"))
    inter = await sink.pending_interaction()
    await conv.respond(inter.id, Answer(decision="approve-once"))
    await sink.turn_end()
    conv_id = conv.id()
    assert conv_id

    await conv.set_title('My "chosen"\ntitle')
    await conv.set_model("fake-model-2", "", "")
    await sink.wait_for(lambda e: e.kind is EventKind.MODEL_SELECTION)
    assert sink.model_selections()[-1].model == "fake-model-2"
    with pytest.raises(ValueError, match="empty"):
        await conv.set_title(" \n ")
    await conv.close()
    titles = [e.title for e in sink.of(EventKind.TITLE)]
    assert titles == ["t-hist"], "our own title is not echoed back"
    with pytest.raises(Closed):
        await conv.send(Prompt(text="after close"))

    again, sink2 = await _open(provider, tmp_path, conversation_id=conv_id)
    assert again.id() == conv_id
    history = await again.history()
    kinds = [
        (i.kind, i.text) for i in history.items if i.kind in (ItemKind.USER, ItemKind.ASSISTANT)
    ]
    assert kinds == [(ItemKind.USER, "t-hist"), (ItemKind.ASSISTANT, "hist answer")]
    (tool,) = [i for i in history.items if i.kind is ItemKind.TOOL]
    assert tool.tool.status is ToolStatus.COMPLETED and tool.tool.exit_code == 0
    assert history.model == "fake-model-2"
    # The reopened conversation keeps working.
    models.script("t-hist-2", [Text("second answer")])
    assert (await _turn(again, sink2, "t-hist-2 more")).state is TurnState.COMPLETED
    await again.close()

    with pytest.raises(ConversationNotFound):
        await provider.open(
            OpenRequest(
                conversation_id="00000000-0000-4000-8000-000000000000",
                workdir=str(tmp_path),
                events=RecordingSink(),
            )
        )


async def test_diff_after_file_write(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    target = tmp_path / "notes.txt"
    models.script(
        "t-write",
        [ToolCall("create", {"path": str(target), "file_text": "alpha\nbeta\n"})],
        [Text("written")],
    )
    conv, sink = await _open(provider, tmp_path)
    await conv.send(Prompt(text="t-write"))
    inter = await sink.pending_interaction()
    assert inter.kind is InteractionKind.PERMISSION and str(target) in inter.detail
    await conv.respond(inter.id, Answer(decision="approve-once"))
    assert (await sink.turn_end()).state is TurnState.COMPLETED
    assert target.read_text() == "alpha\nbeta\n"
    (tool,) = sink.items(ItemKind.TOOL)
    assert [e.path for e in tool.tool.file_edits] == [str(target)]
    diffs = await conv.diff()
    (d,) = [d for d in diffs if d.path.endswith("notes.txt")]
    assert d.additions == 2 and "+alpha" in d.patch
    await conv.close()


async def test_commands_and_skill_command(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    skills = tmp_path / "skills"
    (skills / "haiku").mkdir(parents=True)
    (skills / "haiku" / "SKILL.md").write_text(
        "---\nname: haiku\ndescription: Write a haiku about the topic\n---\n"
        "HAIKU-SKILL-BODY: answer in three lines.\n"
    )
    models.script("HAIKU", [Text("three lines")])
    conv, sink = await _open(provider, tmp_path / "skills", skill_directories=[str(skills)])
    commands = await conv.commands()
    assert all(c.kind in ("skill", "command") for c in commands)
    names = {c.name: c for c in commands}
    assert "haiku" in names and names["haiku"].kind == "skill"
    start = len(sink.snapshot())
    try:
        await conv.run_command("haiku", Prompt(text="autumn"))
    except AgentAPIError as exc:  # pragma: no cover - report what the runtime said
        pytest.fail(f"run_command was rejected: {exc}")
    turn = await sink.turn_end(after=start)
    assert turn.state is TurnState.COMPLETED
    with pytest.raises(AgentAPIError, match=r"did not start a prompt turn|could not run"):
        await conv.run_command("no-such-command", Prompt())
    await conv.close()


async def test_approve_for_session_covers_later_writes(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    first, second = tmp_path / "one.txt", tmp_path / "two.txt"
    models.script(
        "t-session",
        [ToolCall("create", {"path": str(first), "file_text": "1\n"})],
        [ToolCall("create", {"path": str(second), "file_text": "2\n"})],
        [Text("both written")],
    )
    conv, sink = await _open(provider, tmp_path)
    await conv.send(Prompt(text="t-session"))
    inter = await sink.pending_interaction()
    assert "approve-for-session" in [o.id for o in inter.options]
    await conv.respond(inter.id, Answer(decision="approve-for-session"))
    assert (await sink.turn_end()).state is TurnState.COMPLETED
    assert first.read_text() == "1\n" and second.read_text() == "2\n"
    assert list(sink.interactions()) == [inter.id], "the second write needed no permission"
    assert sink.interactions()[inter.id].state is InteractionState.ANSWERED
    await conv.close()


async def test_signed_out_without_a_model_provider(cli: CliServer) -> None:
    opts = cli.options("http://127.0.0.1:9/v1")
    del opts["byok"]
    async with create_provider(opts) as provider:
        with pytest.raises(SignedOut, match="signed out"):
            await provider.check()
        with pytest.raises(SignedOut):
            await provider.models()


async def test_cancel_background_subagent(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    hold = Hold(threading.Event(), timeout=60)
    task = {
        "description": "Background work",
        "prompt": "BG-SUBAGENT go",
        "agent_type": "explore",
        "name": "bg",
        "mode": "background",
    }
    models.script("t-background", [ToolCall("task", task)], [Text("launched")])
    models.script("BG-SUBAGENT", [Text("sub working "), hold, Text("sub done")])
    conv, sink = await _open(provider, tmp_path)
    await conv.send(Prompt(text="t-background"))
    await trio.to_thread.run_sync(hold.started.wait, 30)
    sub = (await sink.wait_for(lambda e: e.kind is EventKind.SUBAGENT)).subagent
    assert sub is not None and sub.background and sub.status is SubagentStatus.RUNNING
    with pytest.raises(AgentAPIError, match="no subagent"):
        await conv.cancel_subagent("not-a-subagent")
    await conv.cancel_subagent(sub.id)
    await sink.wait_for(
        lambda e: e.subagent is not None and e.subagent.status is SubagentStatus.CANCELLED
    )
    assert (await sink.turn_end()).state is TurnState.COMPLETED
    hold.gate.set()
    assert "launched" in [i.text for i in sink.items(ItemKind.ASSISTANT, agent="")]
    await conv.close()


async def test_titler_uses_a_throwaway_session_without_tools(
    provider: CopilotProvider, models: ModelServer, cli: CliServer, tmp_path: Path
) -> None:
    from ahp_bridge.agentapi import Titler, TitleRequest, UtilityUsage

    assert isinstance(provider, Titler) and provider.capabilities().titles
    models.script("TITLE-ME fix", [Text("Fix the flaky login test"), Usage(21, 6)])
    seen: list[UtilityUsage] = []
    state = cli.home / "copilot-home" / "session-state"
    state.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in state.iterdir() if not p.name.startswith(".")}
    title = await provider.title(
        TitleRequest(
            model="fake-model",
            workdir=str(tmp_path),
            text="TITLE-ME fix the flaky login test",
            reply="I fixed it.",
            on_usage=seen.append,
        )
    )
    assert title == "Fix the flaky login test"
    (req,) = models.chat_requests("TITLE-ME fix")
    assert req.tool_names == []
    system = [m for m in req.messages if m["role"] == "system"]
    assert system and "short titles" in json.dumps(system)
    assert "I fixed it." in req.last_user_text
    assert [(u.input_tokens, u.output_tokens) for u in seen] == [(21, 6)]
    after = {p.name for p in state.iterdir() if not p.name.startswith(".")}
    assert after == before, "the throwaway session was deleted"

    models.script("TITLE-ME broken", [HttpError(400, "no titles today")])
    with pytest.raises(AgentAPIError, match="no titles today"):
        await provider.title(TitleRequest(model="fake-model", text="TITLE-ME broken"))


async def test_importer_lists_recorded_conversations_and_foreign_locks(
    provider: CopilotProvider, models: ModelServer, cli: CliServer, tmp_path: Path
) -> None:
    from ahp_bridge.agentapi import Importer

    assert isinstance(provider, Importer) and provider.capabilities().import_
    work = tmp_path / "project"
    work.mkdir()
    models.script("t-import", [Text("recorded")])
    conv, sink = await _open(provider, work)
    await _turn(conv, sink, "t-import first message")
    conv_id = conv.id()
    # Our own runtime's open conversation is never reported as in use.
    assert await provider.in_use([conv_id]) == []
    await conv.close()

    listed = await provider.previous(str(work))
    assert [p.id for p in listed] == [conv_id]
    assert listed[0].workdir == str(work) and listed[0].created_at is not None
    assert conv_id not in [p.id for p in await provider.previous(str(tmp_path / "elsewhere"))]
    assert conv_id in [p.id for p in await provider.previous("")]

    # Another Copilot process (a second provider spawning its own CLI on the same data
    # directory) works in the conversation: now it is in use.
    other_opts = {
        "cli_path": str(CLI_PATH),
        "env": {"HOME": str(cli.home)},
        "data_dir": str(cli.home / "copilot-home"),
        "byok": {"base_url": models.base_url, "model": "fake-model"},
    }
    hold = Hold(threading.Event())
    models.script("t-held-elsewhere", [hold, Text("done elsewhere")])
    async with create_provider(other_opts) as other:
        held_sink = RecordingSink()
        held = await other.open(
            OpenRequest(conversation_id=conv_id, workdir=str(work), events=held_sink)
        )
        await held.send(Prompt(text="t-held-elsewhere"))
        await trio.to_thread.run_sync(hold.started.wait, 30)
        assert await provider.in_use([conv_id, "not-a-session"]) == [conv_id]
        hold.gate.set()
        await held_sink.turn_end()
        await held.close()
    assert await provider.in_use([conv_id]) == []


async def test_todos_are_read_from_the_session_database(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    insert = (
        "INSERT INTO todos (id, title, status) VALUES "
        "('t1', 'Write the tests', 'done'), ('t2', 'Fix the bug', 'in_progress')"
    )
    models.script(
        "t-todos",
        [ToolCall("sql", {"description": "Insert todos", "query": insert})],
        [Text("planned")],
    )
    conv, sink = await _open(provider, tmp_path)
    await conv.send(Prompt(text="t-todos"))  # the sql tool needs no permission
    todos_ev = await sink.wait_for(lambda e: e.todos is not None and len(e.todos.todos) == 2)
    assert todos_ev.todos is not None and todos_ev.todos.known
    assert [(t.id, t.title, t.status) for t in todos_ev.todos.todos] == [
        ("t1", "Write the tests", "done"),
        ("t2", "Fix the bug", "in_progress"),
    ]
    assert (await sink.turn_end()).state is TurnState.COMPLETED
    await conv.close()


async def test_prompt_an_idle_background_subagent(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    task = {
        "description": "Chat helper",
        "prompt": "CHAT-SUB start",
        "agent_type": "general-purpose",
        "name": "helper",
        "mode": "background",
    }
    models.script("t-chat-sub", [ToolCall("task", task)], [Text("launched helper")])
    models.script("CHAT-SUB", [Text("first run done")])
    models.script("CHAT-FOLLOWUP", [Text("follow-up done")])
    conv, sink = await _open(provider, tmp_path)
    await conv.send(Prompt(text="t-chat-sub"))
    idle = await sink.wait_for(
        lambda e: e.subagent is not None and e.subagent.status is SubagentStatus.IDLE
    )
    assert idle.subagent is not None
    agent_id = idle.subagent.id
    await sink.turn_end()
    with pytest.raises(AgentAPIError, match="no subagent"):
        await conv.prompt_subagent("nobody", "hi")

    start = len(sink.snapshot())
    await conv.prompt_subagent(agent_id, "CHAT-FOLLOWUP please")

    def again(kind: SubagentStatus) -> Any:
        return lambda e: (
            e.subagent is not None
            and e.subagent.status is kind
            and len(e.subagent.runs) == 2
            and sink.snapshot().index(e) >= start
        )

    running = (await sink.wait_for(again(SubagentStatus.RUNNING))).subagent
    assert running is not None and running.runs[-1].trigger == "user"
    await sink.wait_for(again(SubagentStatus.IDLE))
    texts = [i.text for i in sink.items(ItemKind.ASSISTANT, agent=agent_id)]
    assert texts == ["first run done", "follow-up done"]
    users = [i.text for i in sink.items(ItemKind.USER, agent=agent_id)]
    assert users == ["CHAT-SUB start", "CHAT-FOLLOWUP please"]
    await sink.turn_end(after=start)  # the CLI wakes the main agent with the result
    await conv.close()


async def test_background_shell_tasks_are_reported_and_can_be_stopped(
    provider: CopilotProvider, models: ModelServer, tmp_path: Path
) -> None:
    from ahp_bridge.agentapi import (
        BackgroundTaskController,
        BackgroundTaskInactive,
        BackgroundTaskNotFound,
        Conversation,
    )

    models.script(
        "t-shell-bg",
        [ToolCall("bash", {"command": "sleep 120", "description": "Sleep", "mode": "async"})],
        [Text("sleeping in the background")],
    )
    conv, sink = await _open(provider, tmp_path)
    assert isinstance(conv, BackgroundTaskController) and isinstance(conv, Conversation)
    await conv.send(Prompt(text="t-shell-bg"))
    inter = await sink.pending_interaction()
    await conv.respond(inter.id, Answer(decision="approve-once"))
    ev = await sink.wait_for(
        lambda e: (
            e.background_tasks is not None
            and any(
                t.command == "sleep 120" and t.status == "running" for t in e.background_tasks.tasks
            )
        )
    )
    assert ev.background_tasks is not None and ev.background_tasks.known
    (task,) = [t for t in ev.background_tasks.tasks if t.command == "sleep 120"]
    with pytest.raises(BackgroundTaskNotFound):
        await conv.cancel_background_task("no-such-task")
    after = await conv.cancel_background_task(task.id)
    assert after.known
    assert all(t.status != "running" for t in after.tasks if t.id == task.id)
    with pytest.raises((BackgroundTaskInactive, BackgroundTaskNotFound)):
        await conv.cancel_background_task(task.id)
    # The CLI holds the turn open while its background work runs; stopped, the turn ends.
    assert (await sink.turn_end()).state is TurnState.COMPLETED
    await conv.close()
