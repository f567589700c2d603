"""The ACP adapter's plain parts: the hardened transport, the mapping, the bounds, the options."""

from __future__ import annotations

import asyncio
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from acp import schema as S
from acp.exceptions import RequestError
from ahp_bridge_acp.mapping import SessionMapper, fold_history
from ahp_bridge_acp.options import AcpOptions, OptionsError
from ahp_bridge_acp.process import AgentProcess, StderrTail
from ahp_bridge_acp.terminals import Terminal
from ahp_bridge_acp.transport import AgentTransport, _malformed
from ahp_bridge_acp.workspace import Workspace

from ahp_bridge.agentapi import (
    EventKind,
    InteractionState,
    ItemKind,
    Prompt,
    ToolStatus,
    TurnState,
)

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("message", "kind"),
    [
        ([1], "a JSON list instead of an object"),
        ("x", "a JSON str instead of an object"),
        ({"jsonrpc": "2.0", "method": 3}, "a method that is not a string"),
        ({"jsonrpc": "2.0", "id": [1], "result": 1}, "an id that is neither a number nor a string"),
        (
            {"jsonrpc": "2.0", "id": True, "result": 1},
            "an id that is neither a number nor a string",
        ),
        ({"jsonrpc": "2.0", "id": 1}, "a response without result or error"),
        ({"jsonrpc": "2.0", "id": 1, "error": "bad"}, "an error that is not an object"),
        ({"jsonrpc": "2.0"}, "neither a request, a notification nor a response"),
        (
            {"jsonrpc": "2.0", "method": "x", "params": 5},
            "params that are neither an object nor an array",
        ),
        ({"jsonrpc": "2.0", "method": "session/update", "params": {}}, ""),
        ({"jsonrpc": "2.0", "id": "a", "result": None}, ""),
        ({"jsonrpc": "2.0", "id": 4, "method": "fs/read_text_file", "params": {}}, ""),
    ],
)
def test_malformed_messages_are_named_by_kind(message: object, kind: str) -> None:
    assert _malformed(message) == kind


def test_the_transport_skips_junk_and_over_long_lines() -> None:
    async def run() -> list[object]:
        reader = asyncio.StreamReader(limit=64)
        reader.feed_data(b"not json\n")
        reader.feed_data(b'{"jsonrpc":"2.0","method":"' + b"x" * 500 + b'"}\n')
        reader.feed_data(b"[1]\n\n")
        reader.feed_data(b'{"jsonrpc":"2.0","method":"ok"}\n')
        reader.feed_eof()
        transport = AgentTransport(reader, None, max_bytes=64)  # type: ignore[arg-type]
        got = [await transport.receive(), await transport.receive()]
        assert dict(transport.faults) == {
            "a line that is not JSON": 1,
            "a message over max_message_bytes (64)": 1,
            "a JSON list instead of an object": 1,
        }
        return got

    assert asyncio.run(run()) == [{"jsonrpc": "2.0", "method": "ok"}, None]


def test_stderr_keeps_the_newest_bytes() -> None:
    tail = StderrTail(10)
    for chunk in (b"0123456", b"789ab", b"cdef"):
        tail.feed(chunk)
    assert tail.text() == "6789abcdef" and tail.total == 16


def test_terminal_output_is_cut_at_a_character_boundary() -> None:
    term = Terminal(id="t", command="x", limit=4)
    term.append("aé".encode() + b"bcd")  # 6 bytes: a, é (2), b, c, d; the cut splits é
    assert term.truncated and term.text() == "bcd"
    term.append("é".encode())
    assert term.text() == "cdé"


def test_workspace_resolves_only_inside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path / "out"
    outside.mkdir()
    (root / "escape").symlink_to(outside)
    (root / "ok").symlink_to(root / "sub")
    ws = Workspace([str(root)], max_bytes=100)
    assert ws.resolve(str(root / "sub" / "f")) == root / "sub" / "f"
    assert ws.resolve(str(root / "ok" / "f")) == root / "sub" / "f"
    for bad, why in (
        ("rel.txt", "is not absolute"),
        (f"{root}/sub/../sub/f", "contains '..'"),
        (str(root / "escape" / "f"), "is outside the session's working directories"),
        (str(outside), "is outside the session's working directories"),
    ):
        with pytest.raises(RequestError, match=f"^the path {re.escape(repr(bad))} {why}") as exc:
            ws.resolve(bad)
        assert (exc.value.code, exc.value.data) == (-32602, {"reason": str(exc.value)})
    write = ws.write(str(root / "new" / "deep.txt"), "hi")
    assert (write.before, (root / "new" / "deep.txt").read_text()) == (None, "hi")
    assert ws.write(str(root / "new" / "deep.txt"), "again").before == "hi"
    with pytest.raises(RequestError, match="has 101 bytes, more than the bridge's max_file_bytes"):
        ws.write(str(root / "big.txt"), "x" * 101)
    assert not (root / "big.txt").exists()
    (root / "lines.txt").write_text("a\nb\nc\n")
    assert ws.read(str(root / "lines.txt"), 2, 1) == "b\n"


def mapper() -> SessionMapper:
    return SessionMapper(lambda: NOW, lambda _: ("out\nlast", 0, True), text_limit=1024)


def test_tool_updates_merge_and_end_with_the_terminal_output() -> None:
    m = mapper()
    m.begin_turn(Prompt(text="go"))
    start = S.ToolCallStart(
        session_update="tool_call",
        tool_call_id="c1",
        title="Edit f",
        kind="edit",
        status="pending",
        content=[
            S.FileEditToolCallContent(type="diff", path="/w/f", old_text="a\n", new_text="a\nb\n")
        ],
        locations=[S.ToolCallLocation(path="/w/f", line=2)],
    )
    (event,) = m.update(start)
    assert event.item is not None and event.item.tool is not None
    tool = event.item.tool
    assert (tool.name, tool.title, tool.status) == ("edit", "Edit f", ToolStatus.PENDING)
    assert tool.file_edits[0].additions == 1 and "/w/f:2" in tool.input
    # An update without content keeps the diff; terminal content adds the terminal.
    progress = S.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id="c1",
        status="completed",
        content=[
            S.FileEditToolCallContent(type="diff", path="/w/f", old_text="a\n", new_text="a\nb\n"),
            S.TerminalToolCallContent(type="terminal", terminal_id="t1"),
        ],
    )
    (done,) = m.update(progress)
    assert done.item is not None and done.item.tool is not None
    assert done.item.tool.status is ToolStatus.COMPLETED
    assert done.item.tool.output == "out\nlast" and done.item.tool.exit_code == 0
    assert done.item.ended_at == NOW


def test_a_permission_names_a_tool_item_that_exists() -> None:
    m = mapper()
    m.begin_turn(Prompt(text="go"))
    pending, events = m.permission(
        S.ToolCallUpdate(tool_call_id="c9", title="Run ls", kind="execute"),
        [
            S.PermissionOption(option_id="y", name="Yes", kind="allow_once"),
            S.PermissionOption(option_id="n", name="No", kind="reject_always"),
        ],
    )
    assert [e.kind for e in events] == [EventKind.ITEM, EventKind.INTERACTION]
    assert events[0].item is not None and events[0].item.id == "c9"
    ia = pending.interaction
    assert ia.tool_call_id == "c9" and [(o.allow_once, o.reject) for o in ia.options] == [
        (True, False),
        (False, True),
    ]
    (rejected,) = m.resolve(ia.id, "n")
    assert rejected.interaction is not None
    assert rejected.interaction.state is InteractionState.REJECTED
    assert m.resolve(ia.id, "n") == []


def test_turn_ends_by_stop_reason_and_late_output_is_dropped() -> None:
    m = mapper()
    m.begin_turn(Prompt(text="go"))
    m.cancelling = True
    ends = m.end_turn("end_turn")
    assert ends[-1].turn is not None and ends[-1].turn.state is TurnState.CANCELLED
    late = S.AgentMessageChunk(
        session_update="agent_message_chunk", content=S.TextContentBlock(type="text", text="late")
    )
    assert m.update(late) == []
    m.begin_turn(Prompt(text="again"))
    out = m.end_turn("max_tokens")
    assert [e.kind for e in out] == [EventKind.ITEM, EventKind.TURN]
    assert out[0].item is not None and out[0].item.kind is ItemKind.NOTICE
    m.begin_turn(Prompt(text="third"))
    refused = m.end_turn("refusal")[-1].turn
    assert refused is not None and refused.state is TurnState.FAILED and refused.error


def test_models_come_from_config_options_or_the_unstable_field() -> None:
    m = mapper()
    option = S.SessionConfigOptionSelect(
        id="model",
        name="Model",
        category="model",
        type="select",
        current_value="b",
        options=[S.SessionConfigSelectOption(value=v, name=v.upper()) for v in ("a", "b")],
    )
    (selected,) = m.config_options([option])
    assert selected.model_selection is not None and selected.model_selection.model == "b"
    assert [(x.id, x.name) for x in m.models] == [("a", "A"), ("b", "B")]
    assert m.unstable_model_state({"availableModels": [{"modelId": "z"}]}) == []  # config wins
    other = mapper()
    other.unstable_model_state({"currentModelId": "z", "availableModels": [{"modelId": "z"}]})
    assert other.unstable_models and [x.id for x in other.models] == ["z"]


def test_a_replay_folds_into_history_items() -> None:
    m = mapper()
    m.replaying = True
    events = m.update(
        S.UserMessageChunk(
            session_update="user_message_chunk", content=S.TextContentBlock(type="text", text="hi")
        )
    )
    for piece in ("hel", "lo"):
        events += m.update(
            S.AgentMessageChunk(
                session_update="agent_message_chunk",
                content=S.TextContentBlock(type="text", text=piece),
            )
        )
    items = fold_history(events)
    assert [(i.kind, i.text) for i in items] == [
        (ItemKind.USER, "hi"),
        (ItemKind.ASSISTANT, "hello"),
    ]


def test_a_replayed_local_command_record_is_not_the_users_words() -> None:
    """Claude Code keeps the /model claude-agent-acp runs at each session's start (and its
    output) as user messages; replayed, they would open the first turn's prompt."""
    m = mapper()
    m.replaying = True
    texts = [
        "<command-name>/model</command-name>\n  <command-message>model</command-message>\n"
        "  <command-args>default</command-args>",
        "<local-command-stdout>Set model to claude-sonnet-4-6</local-command-stdout>",
        "e2e hello",
        "<command-name>/x</command-name> and words of the user's own",
    ]
    events = []
    for text in texts:
        events += m.update(
            S.UserMessageChunk(
                session_update="user_message_chunk",
                content=S.TextContentBlock(type="text", text=text),
            )
        )
    items = fold_history(events)
    assert [(i.kind, i.text) for i in items] == [(ItemKind.USER, texts[2] + texts[3])]


def test_a_minimal_environment_keeps_only_the_basics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SECRET", "x")
    opts = AcpOptions.parse({"command": ["a"], "inherit_env": False, "env": {"K": 1}})
    env = opts.environment()
    assert (
        "SOME_SECRET" not in env and env["K"] == "1" and env.get("PATH") == os.environ.get("PATH")
    )
    assert "SOME_SECRET" in AcpOptions.parse({"command": ["a"]}).environment()


@pytest.mark.parametrize(
    ("stop_grace", "ending"), [(0.0, "was killed by SIGTERM"), (None, "exited with code 7")]
)
def test_stop_grace_is_how_long_an_agent_may_take_to_exit_at_end_of_input(
    stop_grace: float | None, ending: str
) -> None:
    """codex-acp ignores end of input: ``stop_grace`` sends SIGTERM sooner than the 3 s default.

    The agent here exits by itself a second after its stdin closes: within the default grace it
    gets to, with ``stop_grace = 0`` it is terminated first.
    """
    raw: dict[str, object] = {"command": ["/bin/sh", "-c", "cat >/dev/null; sleep 1; exit 7"]}
    if stop_grace is not None:
        raw["stop_grace"] = stop_grace
    opts = AcpOptions.parse(raw)

    async def run() -> str:
        async def handler(method: str, params: object, is_notification: bool) -> None:
            return None

        agent = await AgentProcess.spawn(opts, handler)
        await agent.stop(eof_grace=opts.stop_grace)
        return agent.describe_exit()

    assert asyncio.run(run()) == f"the ACP agent 'sh' {ending}"


def test_stop_grace_is_refused_below_zero() -> None:
    with pytest.raises(OptionsError, match=r"^`stop_grace` must be at least 0$"):
        AcpOptions.parse({"command": ["a"], "stop_grace": -1})


def edit_call(call_id: str, status: str, old: str | None, new: str, path: str = "/w/f") -> Any:
    return S.ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        kind="edit",
        status=status,
        content=[S.FileEditToolCallContent(type="diff", path=path, old_text=old, new_text=new)],
    )


def test_the_conversations_changes_are_the_diffs_of_its_completed_tool_calls() -> None:
    """Conversation.diff: before is the first completed call's oldText, after the latest
    newText; a diff shown while a call waits for permission (Codex shows one) is no change
    until the call completes, and a denied or failed call changes nothing."""
    m = mapper()
    m.begin_turn(Prompt(text="go"))
    m.update(edit_call("c1", "pending", "a\n", "b\n"))
    m.update(edit_call("c2", "failed", None, "new\n", path="/w/g"))
    assert m.file_diffs() == []
    m.update(edit_call("c1", "completed", "a\n", "b\n"))
    m.update(edit_call("c1", "completed", "a\n", "b\n"))  # counted once
    m.update(edit_call("c3", "completed", "b\n", "b\nc\n"))
    m.update(edit_call("c4", "completed", None, "new\n", path="/w/g"))
    m.update(edit_call("c5", "completed", "x\n", "y\n", path="/w/h"))
    m.update(edit_call("c6", "completed", "y\n", "x\n", path="/w/h"))  # back as it was
    assert [d.model_dump(exclude_defaults=True) for d in m.file_diffs()] == [
        {
            "path": "/w/f",
            "status": "modified",
            "additions": 2,
            "deletions": 1,
            "before": "a\n",
            "after": "b\nc\n",
        },
        {"path": "/w/g", "status": "added", "additions": 1, "after": "new\n"},
    ]
