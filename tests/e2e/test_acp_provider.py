"""The ACP provider driving a real ACP agent subprocess (the SDK-built test agent).

What the conformance suite does not cover: the client side the bridge offers the agent (files
confined to the working directory, terminals as real bounded subprocesses), the mapping of every
update kind, faults (a malformed stream, the agent dying mid-turn and the next open restarting it
and reloading the session), options, and named instances (``kind = "acp"``).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_acp import AcpProvider, OptionsError, create_provider

from ahp_bridge import providers
from ahp_bridge.agentapi import (
    AgentAPIError,
    Answer,
    Blob,
    Busy,
    Closed,
    ConversationNotFound,
    Event,
    EventKind,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    OpenRequest,
    Prompt,
    ReadRequest,
    SignedOut,
    ToolStatus,
    TurnState,
    Unsupported,
)
from ahp_bridge.conformance import RecordingSink
from tests.support.acp_agents import TEST_AGENT, sdk_agent_options


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@asynccontextmanager
async def started(tmp_path: Path, **extra: Any) -> AsyncIterator[AcpProvider]:
    provider = create_provider(sdk_agent_options(tmp_path / "store", **extra))
    async with provider:
        yield provider


async def open_conv(provider: AcpProvider, workdir: Path, conversation_id: str = "") -> Any:
    sink = RecordingSink()
    conv = await provider.open(
        OpenRequest(workdir=str(workdir), conversation_id=conversation_id, events=sink)
    )
    return conv, sink


def ended(sink: RecordingSink, start: int) -> Callable[[list[Event]], TurnState | None]:
    def found(events: list[Event]) -> TurnState | None:
        for e in events[start:]:
            if (
                e.kind is EventKind.TURN
                and e.turn is not None
                and e.turn.state != TurnState.WORKING
            ):
                return e.turn.state
        return None

    return found


async def turn(conv: Any, sink: RecordingSink, text: str, **prompt: Any) -> list[Event]:
    """Send ``text``, wait for the turn's end; the events of that turn."""
    start = len(sink)
    await conv.send(Prompt(text=text, **prompt))
    with trio.fail_after(15):
        await sink.wait_for(ended(sink, start))
    return sink.events[start:]


def assistant_text(events: list[Event]) -> str:
    return "".join(
        e.delta.text for e in events if e.delta is not None and e.delta.kind is ItemKind.ASSISTANT
    )


def tool_items(events: list[Event]) -> list[Item]:
    return [e.item for e in events if e.item is not None and e.item.kind is ItemKind.TOOL]


def final_state(events: list[Event]) -> TurnState:
    states = [e.turn.state for e in events if e.turn is not None]
    return states[-1]


# --- files ---------------------------------------------------------------------------------


async def test_write_inside_the_workdir_lands_and_shows_as_a_file_edit(
    tmp_path: Path, workdir: Path
) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        target = workdir / "sub" / "notes.txt"
        events = await turn(conv, sink, f"write {target} hello world")
        assert target.read_text() == "hello world\n"
        assert "Written." in assistant_text(events)
        last = tool_items(events)[-1]
        assert last.tool is not None and last.tool.status is ToolStatus.COMPLETED
        edit = last.tool.file_edits[0]
        assert (edit.path, edit.kind, edit.additions, edit.deletions) == (str(target), "add", 1, 0)
        assert str(target) in last.tool.input  # the location


@pytest.mark.parametrize("how", ["dotdot", "absolute", "symlink", "relative"])
async def test_writes_outside_the_workdir_are_refused(
    tmp_path: Path, workdir: Path, how: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    if how == "dotdot":
        path = f"{workdir}/../outside/x.txt"
    elif how == "absolute":
        path = str(outside / "x.txt")
    elif how == "symlink":
        (workdir / "link").symlink_to(outside)
        path = str(workdir / "link" / "x.txt")
    else:
        path = "x.txt"
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        events = await turn(conv, sink, f"write {path} secret")
        assert not (outside / "x.txt").exists() and not (workdir / "x.txt").exists()
        assert "refused" in assistant_text(events)
        failed = tool_items(events)[-1]
        assert failed.tool is not None and failed.tool.status is ToolStatus.FAILED
        reason = {
            "dotdot": "'..'",
            "absolute": "outside",
            "symlink": "outside",
            "relative": "not absolute",
        }
        assert reason[how] in failed.tool.output


async def test_reads_are_confined_too(tmp_path: Path, workdir: Path) -> None:
    (workdir / "a.txt").write_text("inside text\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("do not show\n")
    (workdir / "peek").symlink_to(secret)
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        assert "content: inside text" in assistant_text(
            await turn(conv, sink, f"read {workdir}/a.txt")
        )
        for path in (str(secret), str(workdir / "peek")):
            text = assistant_text(await turn(conv, sink, f"read {path}"))
            assert "refused" in text and "outside" in text and "do not show" not in text


async def test_a_file_over_max_file_bytes_is_refused(tmp_path: Path, workdir: Path) -> None:
    big = workdir / "big.txt"
    big.write_text("x" * 5000)
    async with started(tmp_path, max_file_bytes=1024) as provider:
        conv, sink = await open_conv(provider, workdir)
        text = assistant_text(await turn(conv, sink, f"read {big}"))
        assert "max_file_bytes" in text


# --- terminals -----------------------------------------------------------------------------


async def test_a_terminal_runs_in_the_workdir_and_its_output_shows_on_the_tool_call(
    tmp_path: Path, workdir: Path
) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        events = await turn(conv, sink, "terminal echo one; sleep 0.3; echo two; pwd")
        assert f"exit 0: one\ntwo\n{workdir}" in assistant_text(events)
        tools = tool_items(events)
        running = [t for t in tools if t.tool is not None and t.tool.status is ToolStatus.RUNNING]
        assert any(
            t.tool is not None and [x.text for x in t.tool.tail][:1] == ["one"] for t in running
        )
        last = tools[-1].tool
        assert last is not None and last.status is ToolStatus.COMPLETED
        assert last.exit_code == 0 and "two" in last.output and not last.tail


async def test_a_terminal_is_bounded_in_output_and_time(tmp_path: Path, workdir: Path) -> None:
    async with started(tmp_path, terminal_output_bytes=1024, terminal_timeout=1.0) as provider:
        conv, sink = await open_conv(provider, workdir)
        events = await turn(conv, sink, "terminal head -c 100000 /dev/zero | tr '\\0' a")
        out = tool_items(events)[-1].tool
        assert out is not None and out.exit_code == 0
        assert 900 <= len(out.output) <= 1024
        with trio.fail_after(10):
            events = await turn(conv, sink, "terminal sleep 30")
        killed = tool_items(events)[-1].tool
        assert killed is not None and killed.status is ToolStatus.FAILED
        assert "terminal_timeout" in killed.output


async def test_cancel_kills_a_running_terminal(tmp_path: Path, workdir: Path) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        start = len(sink)
        await conv.send(Prompt(text="terminal sleep 30"))
        with trio.fail_after(10):
            await sink.wait_for(
                lambda evs: next(
                    (
                        e
                        for e in evs[start:]
                        if e.item and e.item.tool and e.item.tool.status is ToolStatus.RUNNING
                    ),
                    None,
                )
            )
            await conv.cancel()
            assert await sink.wait_for(ended(sink, start)) is TurnState.CANCELLED


# --- the mapping ---------------------------------------------------------------------------


async def test_every_update_kind_becomes_its_event(tmp_path: Path, workdir: Path) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        events = await turn(conv, sink, "answer")
        kinds = [(e.delta.kind, e.delta.text) for e in events if e.delta is not None]
        assert (ItemKind.REASONING, "Thinking it over.") in kinds
        assert assistant_text(events) == "Hello from the test agent."
        assert events[0].turn is not None and events[0].turn.state is TurnState.WORKING
        assert events[1].item is not None and events[1].item.kind is ItemKind.USER

        todos = [e.todos for e in await turn(conv, sink, "plan") if e.todos is not None][-1]
        assert [(t.title, t.status) for t in todos.todos] == [
            ("Read the code", "done"),
            ("Fix the bug", "in_progress"),
            ("Write a test", "pending"),
        ]
        plans = [e.todos for e in await turn(conv, sink, "plans") if e.todos is not None]
        assert [[t.title for t in p.todos] for p in plans] == [["Only step"], []]
        assert [e.title for e in await turn(conv, sink, "title") if e.kind is EventKind.TITLE] == [
            "A test title"
        ]
        usage = await turn(conv, sink, "usage")
        context = [e.context for e in usage if e.context is not None][-1]
        tokens = [e.tokens for e in usage if e.tokens is not None][-1]
        assert (context.used, context.limit, tokens.input, tokens.output) == (1200, 200000, 20, 10)
        modes = [e.execution.mode for e in await turn(conv, sink, "mode") if e.execution]
        assert modes == ["careful"]

        await conv.set_model("model-b", "", "")
        selected = [e.model_selection for e in sink.events if e.model_selection is not None]
        assert selected[0] is not None and selected[0].model == "model-a"
        assert selected[-1] is not None and selected[-1].model == "model-b"
        with pytest.raises(AgentAPIError, match="no model"):
            await conv.set_model("model-z", "", "")
        assert [m.id for m in await provider.models()] == ["model-a", "model-b"]

        with trio.fail_after(5):
            while not await conv.commands():
                await trio.sleep(0.02)
        commands = await conv.commands()
        assert [(c.name, c.input_hint) for c in commands] == [("review", ""), ("explain", "path")]
        start = len(sink)
        await conv.run_command("explain", Prompt(text="main.py"))
        await sink.wait_for(ended(sink, start))
        assert assistant_text(sink.events[start:]) == "You said: /explain main.py"
        with pytest.raises(AgentAPIError, match="no command"):
            await conv.run_command("nope", Prompt())


async def test_models_are_probed_with_a_scratch_session_that_is_closed(
    tmp_path: Path, workdir: Path
) -> None:
    async with started(tmp_path) as provider:
        assert [m.id for m in await provider.models()] == ["model-a", "model-b"]
        closed = (tmp_path / "store" / "closed.log").read_text().split()
        assert len(closed) == 1  # the scratch session, and nothing else
        conv, _ = await open_conv(provider, workdir)
        assert conv.id() not in closed


async def test_prompt_content_reaches_the_agent(tmp_path: Path, workdir: Path) -> None:
    (workdir / "f.py").write_text("print(1)\n")
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        from ahp_bridge.agentapi import File

        events = await turn(
            conv,
            sink,
            "look",
            files=[File(path=str(workdir / "f.py"), rel="f.py")],
            attachments=[
                Blob(name="a.png", mime="image/png", data=b"\x89PNG"),
                Blob(name="n.txt", mime="text/plain", data=b"notes"),
            ],
        )
        assert (
            assistant_text(events)
            == 'You said: look {"image": 1, "resource": 1, "resource_link": 1}'
        )
        user = events[1].item
        assert user is not None and [a.name for a in user.attachments] == ["a.png", "n.txt"]


async def test_permission_answers_are_the_chosen_option(tmp_path: Path, workdir: Path) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        for choice, state, said in (
            ("always", InteractionState.ANSWERED, "Ran it (always)."),
            ("deny", InteractionState.REJECTED, "Not allowed."),
        ):
            start = len(sink)
            await conv.send(Prompt(text="permission"))
            with trio.fail_after(10):
                ia = await sink.wait_for(
                    lambda evs, start=start: next(
                        (e.interaction for e in evs[start:] if e.interaction), None
                    )
                )
            assert ia.kind is InteractionKind.PERMISSION and ia.tool_call_id
            assert [(o.id, o.allow_once, o.reject) for o in ia.options] == [
                ("allow", True, False),
                ("always", False, False),
                ("deny", False, True),
            ]
            with pytest.raises(ValueError, match="decision must be one of"):
                await conv.respond(ia.id, Answer(decision="maybe"))
            await conv.respond(ia.id, Answer(decision=choice))
            with trio.fail_after(10):
                await sink.wait_for(ended(sink, start))
            evs = sink.events[start:]
            states = [e.interaction.state for e in evs if e.interaction is not None]
            assert states == [InteractionState.PENDING, state]
            assert assistant_text(evs) == said
            # The tool item the permission names exists before the permission.
            first_tool = next(
                i for i, e in enumerate(evs) if e.item and e.item.id == ia.tool_call_id
            )
            first_ask = next(i for i, e in enumerate(evs) if e.interaction is not None)
            assert first_tool < first_ask


async def test_busy_and_closed(tmp_path: Path, workdir: Path) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        start = len(sink)
        await conv.send(Prompt(text="long"))
        with pytest.raises(Busy, match=r"^a turn is still running; send again when it has ended$"):
            await conv.send(Prompt(text="answer"))
        await conv.close()
        states = [e.turn.state for e in sink.events[start:] if e.turn is not None]
        assert states == [TurnState.WORKING, TurnState.CANCELLED]
        with pytest.raises(Closed, match=r"^the conversation is closed$"):
            await conv.send(Prompt(text="answer"))


# --- faults --------------------------------------------------------------------------------


async def test_malformed_messages_are_dropped_and_logged_by_kind_only(
    tmp_path: Path, workdir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        events = await turn(conv, sink, "garbage")
        assert final_state(events) is TurnState.COMPLETED
        assert assistant_text(events) == "Still here."
        assert provider.agent is not None
        faults = provider.agent.faults
        assert faults["a line that is not JSON"] == 1
        assert faults["a JSON list instead of an object"] == 1
        assert faults["a method that is not a string"] == 1
        assert faults["an id that is neither a number nor a string"] == 1
        assert final_state(await turn(conv, sink, "answer")) is TurnState.COMPLETED
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "malformed session/update" in logged and "unexpected notification x/unknown" in logged
    assert "SECRET-CONTENT" not in caplog.text


async def test_the_agent_dying_mid_turn_is_an_exit_and_reopen_restarts_and_reloads(
    tmp_path: Path, workdir: Path
) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        await turn(conv, sink, "answer")
        conversation_id = conv.id()
        start = len(sink)
        await conv.send(Prompt(text="exit"))
        with trio.fail_after(10):
            await sink.wait_for(
                lambda evs: next((e for e in evs[start:] if e.kind is EventKind.EXIT), None)
            )
        tail = sink.events[start:]
        exit_event = tail[-1]
        assert exit_event.kind is EventKind.EXIT and "exited with code 3" in exit_event.error
        assert [e.turn.state for e in tail if e.turn] == [TurnState.WORKING, TurnState.FAILED]
        with pytest.raises(Closed, match=r"^the ACP agent 'python[0-9.]*' exited with code 3$"):
            await conv.send(Prompt(text="answer"))
        assert "test agent: exiting on purpose" in provider.stderr_tail()
        assert provider.starts == 1

        again, sink2 = await open_conv(provider, workdir, conversation_id)
        assert provider.starts == 2 and again.id() == conversation_id
        history = await again.history()
        texts = [(i.kind, i.text) for i in history.items]
        assert (ItemKind.USER, "answer") in texts
        assert (ItemKind.ASSISTANT, "Hello from the test agent.") in texts
        assert (ItemKind.USER, "exit") in texts
        assert final_state(await turn(again, sink2, "answer")) is TurnState.COMPLETED


async def test_a_killed_agent_fails_the_turn_with_its_signal(tmp_path: Path, workdir: Path) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        start = len(sink)
        await conv.send(Prompt(text="long"))
        with trio.fail_after(10):
            await sink.wait_for(lambda evs: next((e for e in evs[start:] if e.delta), None))
            provider.kill_agent()
            await sink.wait_for(
                lambda evs: next((e for e in evs[start:] if e.kind is EventKind.EXIT), None)
            )
        assert "SIGKILL" in sink.events[-1].error


async def test_an_agent_that_closes_its_stdout_is_ended(tmp_path: Path, workdir: Path) -> None:
    async with started(tmp_path) as provider:
        conv, sink = await open_conv(provider, workdir)
        start = len(sink)
        await conv.send(Prompt(text="hangup"))
        with trio.fail_after(10):
            await sink.wait_for(
                lambda evs: next((e for e in evs[start:] if e.kind is EventKind.EXIT), None)
            )
        assert "SIGKILL" in sink.events[-1].error
        assert final_state(sink.events[start:]) is TurnState.FAILED


async def test_read_history_loads_a_session_another_process_recorded(
    tmp_path: Path, workdir: Path
) -> None:
    async with started(tmp_path) as first:
        conv, sink = await open_conv(first, workdir)
        await turn(conv, sink, "answer")
        conversation_id = conv.id()
    async with started(tmp_path) as second:
        history = await second.read_history(
            ReadRequest(conversation_id=conversation_id, workdir=str(workdir))
        )
        assert [(i.kind, i.text) for i in history.items] == [
            (ItemKind.USER, "answer"),
            (ItemKind.ASSISTANT, "Hello from the test agent."),
        ]
        with pytest.raises(ConversationNotFound, match=r"^the ACP agent has no session 'nope'$"):
            await second.read_history(ReadRequest(conversation_id="nope", workdir=str(workdir)))
        # Read once, the session is reattached on open: the same record, no second load.
        again, sink2 = await open_conv(second, workdir, conversation_id)
        assert [i.text for i in (await again.history()).items] == [i.text for i in history.items]
        assert not any(e.item for e in sink2.events)  # reading emitted nothing
        loaded = (tmp_path / "store" / "loaded.log").read_text().split()
        assert loaded == [conversation_id]
        assert final_state(await turn(again, sink2, "answer")) is TurnState.COMPLETED


async def test_previous_lists_the_agents_sessions_for_a_workdir(
    tmp_path: Path, workdir: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    async with started(tmp_path, probe_models=False) as provider:
        assert provider.capabilities().import_
        ids = []
        for where in (workdir, workdir, workdir, other):
            conv, _ = await open_conv(provider, where)
            ids.append(conv.id())
        listed = await provider.previous(str(workdir))
        assert sorted(p.id for p in listed) == sorted(ids[:3])  # three pages of two, filtered
        assert all(p.workdir == str(workdir) and p.title.startswith("Session ") for p in listed)
        assert {p.id for p in await provider.previous("")} == set(ids)
        assert await provider.in_use(ids) == []


async def test_reopen_of_an_unknown_session_is_not_found(tmp_path: Path, workdir: Path) -> None:
    async with started(tmp_path) as provider:
        with pytest.raises(
            ConversationNotFound, match=r"^the ACP agent has no session 'no-such-session'$"
        ):
            await open_conv(provider, workdir, "no-such-session")


async def test_an_agent_without_load_session_cannot_reopen(tmp_path: Path, workdir: Path) -> None:
    options = sdk_agent_options(tmp_path / "store")
    options["env"] = {**options["env"], "ACP_TEST_NO_LOAD": "1"}  # type: ignore[dict-item]
    async with create_provider(options) as provider:
        assert not provider.capabilities().history
        conv, sink = await open_conv(provider, workdir)
        await turn(conv, sink, "answer")
        with pytest.raises(Unsupported, match="loadSession"):
            await open_conv(provider, workdir, conv.id())


async def test_mode_option_is_applied_on_open(tmp_path: Path, workdir: Path) -> None:
    async with started(tmp_path, mode="careful") as provider:
        _, sink = await open_conv(provider, workdir)
        modes = [e.execution.mode for e in sink.events if e.execution is not None]
        assert modes[-1] == "careful"
    async with started(tmp_path, mode="reckless") as provider:
        with pytest.raises(AgentAPIError, match="not one the agent offers"):
            await open_conv(provider, workdir)


# --- options and instances -----------------------------------------------------------------


def test_options_are_checked_with_a_message_naming_the_key() -> None:
    with pytest.raises(OptionsError, match="needs `command`"):
        create_provider({})
    with pytest.raises(OptionsError, match="unknown ACP provider option 'comand'"):
        create_provider({"comand": ["x"]})
    with pytest.raises(OptionsError, match="`terminal_timeout` must be at least 1"):
        create_provider({"command": ["x"], "terminal_timeout": 0})
    with pytest.raises(OptionsError, match="`env` must be a table"):
        create_provider({"command": ["x"], "env": ["A=1"]})
    assert create_provider({"command": "my-agent --acp"}).options.command == ("my-agent", "--acp")


async def test_a_missing_command_says_so(tmp_path: Path) -> None:
    async with create_provider({"command": ["no-such-acp-agent-xyz"]}) as provider:
        with pytest.raises(AgentAPIError, match="'no-such-acp-agent-xyz' was not found"):
            await provider.check()


async def test_named_instances_run_side_by_side(tmp_path: Path, workdir: Path) -> None:
    one = providers.create("claude", {"kind": "acp", **sdk_agent_options(tmp_path / "a")})
    two = providers.create("codex", {"kind": "acp", **sdk_agent_options(tmp_path / "b")})
    assert isinstance(one, AcpProvider) and isinstance(two, AcpProvider)
    async with one, two:
        assert one.agent is not None and two.agent is not None
        assert one.agent.pid != two.agent.pid
        conv, sink = await open_conv(one, workdir)
        assert final_state(await turn(conv, sink, "answer")) is TurnState.COMPLETED
    with pytest.raises(providers.UnknownProvider, match="'claude' has kind 'acpx'"):
        providers.create("claude", {"kind": "acpx"})
    assert os.path.isfile(TEST_AGENT)


async def test_an_agent_that_needs_a_sign_in_says_how(tmp_path: Path, workdir: Path) -> None:
    options = sdk_agent_options(tmp_path / "store")
    options["env"] = {**options["env"], "ACP_TEST_AUTH": "1"}  # type: ignore[dict-item]
    async with create_provider(options) as provider:
        with pytest.raises(SignedOut, match="Test login: log in first"):
            await provider.models()
        with pytest.raises(SignedOut, match="auth_method"):
            await open_conv(provider, workdir)
    async with create_provider({**options, "auth_method": "test-login"}) as provider:
        conv, sink = await open_conv(provider, workdir)
        assert final_state(await turn(conv, sink, "answer")) is TurnState.COMPLETED
    async with create_provider({**options, "auth_method": "nope"}) as provider:
        with pytest.raises(AgentAPIError, match="'nope' is not one the agent offers"):
            await provider.check()


def doctor(config: Path, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "ahp_bridge.cli",
            "doctor",
            "--config",
            str(config),
            "--provider",
            name,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_doctor_reports_on_an_acp_agent(tmp_path: Path) -> None:
    q = json.dumps
    options = sdk_agent_options(tmp_path / "store")
    env = ", ".join(f"{k} = {q(v)}" for k, v in options["env"].items())  # type: ignore[attr-defined]
    command = ", ".join(q(c) for c in options["command"])  # type: ignore[attr-defined]
    config = tmp_path / "bridge.toml"
    config.write_text(
        "[providers.testagent]\n"
        'kind = "acp"\n'
        f"command = [{command}]\n"
        f'env = {{ {env}, ACP_TEST_AUTH = "1" }}\n'
        "[providers.broken]\n"
        'kind = "acp"\n'
        'command = ["/bin/sh", "-c", "echo the agent broke >&2; exit 2"]\n'
        "[providers.missing]\n"
        'kind = "acp"\n'
        'command = ["no-such-acp-agent-xyz"]\n'
    )
    ok = doctor(config, "testagent")
    assert "it answers initialize: Test Agent 1.0, ACP 1" in ok.stdout
    assert "sign-in methods it offers: test-login" in ok.stdout
    assert "FAIL  it needs a sign-in before a session opens" in ok.stdout
    assert "Test login: log in first" in ok.stdout and ok.returncode == 1
    broken = doctor(config, "broken")
    assert broken.returncode == 1
    assert "FAIL  the agent does not answer initialize" in broken.stdout
    assert "exited with code 2" in broken.stdout and "| the agent broke" in broken.stdout
    missing = doctor(config, "missing")
    assert missing.returncode == 1
    assert "FAIL  the agent command 'no-such-acp-agent-xyz' is not found" in missing.stdout
