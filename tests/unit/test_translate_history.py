"""turns_from_history: a provider-recorded History -> AHP Turns for a reopened chat."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ahp_bridge_copilot.history import rebuild_history

from ahp_bridge.agentapi import (
    History,
    Item,
    ItemKind,
    Subagent,
    SubagentStatus,
    ToolCall,
    ToolStatus,
)
from ahp_bridge.state.reducers import reduce
from ahp_bridge.translate.history import turns_from_history

from .test_translate_support import new_chat, strict, strict_type

T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "copilot"


def at(seconds: float) -> datetime:
    return T + timedelta(seconds=seconds)


def item(kind: ItemKind, item_id: str, text: str = "", second: float = 0, **fields: Any) -> Item:
    return Item(id=item_id, kind=kind, text=text, time=at(second), **fields)


def tool(item_id: str, status: ToolStatus, second: float, **fields: Any) -> Item:
    call = ToolCall(name="bash", title="Run", status=status, **fields)
    return Item(id=item_id, kind=ItemKind.TOOL, tool=call, time=at(second))


def load(turns: list[dict[str, Any]]) -> dict[str, Any]:
    """Put rebuilt turns into a chat the way the host does: one strict chat/turnsLoaded."""
    for turn in turns:
        strict_type("Turn", turn)
    action = {"type": "chat/turnsLoaded", "turns": turns}
    strict(action)
    return reduce("chat", new_chat(), action)


HISTORY = History(
    items=[
        item(ItemKind.USER, "u1", "list files", 0),
        item(ItemKind.REASONING, "r1", "look first", 1),
        item(ItemKind.ASSISTANT, "m1", "Listing.", 2),
        tool("t1", ToolStatus.COMPLETED, 3, input="ls", output="a\nb"),
        tool("t2", ToolStatus.FAILED, 4, output="denied", exit_code=1),
        item(ItemKind.USER, "s1", "also hidden files", 5, delivery="steer"),
        tool("task", ToolStatus.COMPLETED, 6, output="sub done"),
        item(ItemKind.USER, "su", "SUBTASK", 6.5, agent_id="sub-1"),
        item(ItemKind.ASSISTANT, "sm", "sub text", 7, agent_id="sub-1"),
        item(ItemKind.ASSISTANT, "m2", "Done.", 8, ended_at=at(9)),
        item(ItemKind.USER, "u2", "again", 20),
        tool("t3", ToolStatus.RUNNING, 21),
        item(ItemKind.NOTICE, "n1", "The runtime stopped.", 22),
    ],
    subagents=[Subagent(id="sub-1", name="scout", parent_tool_call_id="task", status="completed")],
)


def test_turns_are_cut_at_user_items_with_live_part_shapes() -> None:
    first, second = turns_from_history(HISTORY)
    assert first["id"] == "u1"
    assert first["message"] == {"text": "list files", "origin": {"kind": "user"}}
    assert first["startedAt"] == "2026-01-02T03:04:05.000Z"
    assert first["duration"] == 9000
    assert first["state"] == "complete"
    parts = first["responseParts"]
    assert [p["kind"] for p in parts] == [
        "reasoning",
        "markdown",
        "toolCall",
        "toolCall",
        "systemNotification",
        "toolCall",
        "markdown",
    ]
    assert parts[2]["toolCall"] == {
        "toolCallId": "t1",
        "toolName": "bash",
        "displayName": "Run",
        "invocationMessage": "Run",
        "toolInput": "ls",
        "status": "completed",
        "confirmed": "not-needed",
        "success": True,
        "pastTenseMessage": "Run: done",
        "content": [{"type": "text", "text": "a\nb"}],
    }
    failed = parts[3]["toolCall"]
    assert failed["success"] is False
    assert failed["error"] == {"message": "denied", "code": "1"}
    assert parts[4]["content"] == "also hidden files"
    assert parts[4]["_meta"]["ahpBridge.steer"] is True
    assert parts[5]["toolCall"]["content"][0] == {
        "type": "subagent",
        "resource": "ahp-chat:/subagent/sub-1",
        "title": "scout",
        "agentName": "scout",
    }
    assert "sub text" not in json.dumps(first)
    assert [p["kind"] for p in second["responseParts"]] == ["toolCall", "systemNotification"]
    unfinished = second["responseParts"][0]["toolCall"]
    assert (unfinished["status"], unfinished["reason"]) == ("cancelled", "skipped")
    chat = load([first, second])
    assert [t["id"] for t in chat["turns"]] == ["u1", "u2"]


def test_rebuilding_twice_gives_the_same_turns() -> None:
    assert turns_from_history(HISTORY) == turns_from_history(HISTORY)


def test_a_subagents_own_transcript_for_its_chat() -> None:
    (turn,) = turns_from_history(HISTORY, agent_id="sub-1")
    assert turn["id"] == "su"
    assert turn["message"]["text"] == "SUBTASK"
    assert turn["responseParts"] == [{"kind": "markdown", "id": "sm", "content": "sub text"}]
    load([turn])


def test_a_record_that_starts_mid_turn_gets_an_agent_turn() -> None:
    history = History(items=[item(ItemKind.ASSISTANT, "m0", "tail of a long answer", 0)])
    (turn,) = turns_from_history(history)
    assert turn["id"] == "history:m0"
    assert turn["message"] == {"text": "", "origin": {"kind": "agent"}}
    load([turn])


def test_empty_record_and_items_without_times() -> None:
    assert turns_from_history(History()) == []
    (turn,) = turns_from_history(History(items=[Item(id="u", kind=ItemKind.USER, text="hi")]))
    assert (turn["startedAt"], turn["duration"]) == ("1970-01-01T00:00:00.000Z", 0)


def test_recorded_copilot_history_rebuilds_every_turn() -> None:
    lines = (FIXTURES / "history.jsonl").read_text().splitlines()
    history = rebuild_history(json.loads(line) for line in lines)
    turns = turns_from_history(history)
    chat = load(turns)
    texts = [t["message"]["text"] for t in chat["turns"]]
    assert texts[:3] == ["greet me", "run echo", "run denied"]
    assert "STEER use caps" not in texts
    assert len(texts) == len(
        [
            i
            for i in history.items
            if i.kind is ItemKind.USER and not i.agent_id and i.delivery != "steer"
        ]
    )
    delegate = next(t for t in turns if t["message"]["text"] == "delegate")
    refs = [
        c
        for p in delegate["responseParts"]
        if p["kind"] == "toolCall"
        for c in p["toolCall"].get("content", [])
        if c["type"] == "subagent"
    ]
    assert len(refs) == 1
    (sub,) = history.subagents
    assert sub.status in (SubagentStatus.COMPLETED, SubagentStatus.IDLE)
    (sub_turn,) = turns_from_history(history, agent_id=sub.id)
    assert sub_turn["message"]["text"] == "SUBTASK go"
