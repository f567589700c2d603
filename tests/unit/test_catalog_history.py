"""Rebuilding a reopened chat: interrupted turns end as errors; records are read whole."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import trio

from ahp_bridge.agentapi import (
    History,
    HistoryPager,
    HistoryWindow,
    Item,
    ItemKind,
    ToolCall,
    ToolStatus,
    WindowRequest,
)
from ahp_bridge.host.durable.sessions import read_history
from ahp_bridge.protocol import wire07
from ahp_bridge.protocol.models import wire_adapter
from ahp_bridge.translate.history import INTERRUPTED, mark_interrupted, turns_from_history
from tests.support.wire_schema import v1_0

T = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def at(seconds: float) -> datetime:
    return T + timedelta(seconds=seconds)


def user(item_id: str, text: str, second: float = 0) -> Item:
    return Item(id=item_id, kind=ItemKind.USER, text=text, time=at(second))


def say(item_id: str, text: str, second: float = 0) -> Item:
    return Item(id=item_id, kind=ItemKind.ASSISTANT, text=text, time=at(second))


def running_tool(item_id: str, second: float) -> Item:
    call = ToolCall(name="bash", title="Build", status=ToolStatus.RUNNING, input="make")
    return Item(id=item_id, kind=ItemKind.TOOL, tool=call, time=at(second))


def record(*items: Item) -> History:
    return History(items=list(items))


def valid(turns: list[dict[str, Any]]) -> None:
    """Canonical (1.0) turns, and valid 0.7.0 turns once shown to a 0.7 peer."""
    for turn in turns:
        v1_0().check("Turn", turn)
        wire_adapter("Turn").validate_python(wire07.down_turn(turn))


RUNNING = {"id": "turn-live", "startedAt": "2026-01-02T03:05:00.000Z", "text": "build it"}


def test_nothing_running_leaves_the_turns_alone() -> None:
    turns = turns_from_history(record(user("u1", "hi"), say("a1", "hello")))
    assert mark_interrupted(turns, None) is turns
    assert mark_interrupted(turns, {}) is turns


def test_the_running_turn_ends_as_an_error_keeping_what_it_produced() -> None:
    history = record(
        user("u1", "hi"),
        say("a1", "hello", 1),
        user("u2", "build it", 2),
        say("a2", "Building.", 3),
        running_tool("t1", 4),
    )
    turns = mark_interrupted(turns_from_history(history), RUNNING)
    valid(turns)
    first, last = turns
    assert first["state"] == "complete" and first["id"] == "u1"
    assert last["id"] == "turn-live"  # the id clients knew while it ran
    assert last["state"] == "error"
    markdown, tool, error = last["responseParts"]
    assert error["kind"] == "error" and error["resumable"] is True
    assert error["error"]["errorType"] == INTERRUPTED
    assert "stopped while this turn was running" in error["error"]["message"]
    assert markdown == {"kind": "markdown", "id": "a2", "content": "Building."}
    assert tool["toolCall"]["status"] == "cancelled"
    assert tool["toolCall"]["reason"] == "skipped"


def test_a_prompt_the_provider_never_recorded_gets_its_own_ended_turn() -> None:
    turns = mark_interrupted(turns_from_history(record(user("u1", "hi"))), RUNNING)
    valid(turns)
    assert [t["message"]["text"] for t in turns] == ["hi", "build it"]
    added = turns[-1]
    assert added["id"] == "turn-live"
    assert added["startedAt"] == RUNNING["startedAt"]
    [error] = added["responseParts"]
    assert (added["state"], error["error"]["errorType"]) == ("error", INTERRUPTED)
    assert turns[0]["state"] == "complete"


def test_an_empty_record_with_a_running_turn() -> None:
    turns = mark_interrupted([], {"text": "first"})
    valid(turns)
    assert len(turns) == 1 and turns[0]["message"]["text"] == "first"
    assert turns[0]["id"].startswith("interrupted:")


def test_a_recorded_id_already_used_by_an_earlier_turn_is_not_reused() -> None:
    history = record(user("u1", "same"), user("u2", "same", 1))
    turns = mark_interrupted(turns_from_history(history), {"id": "u1", "text": "same"})
    assert [t["id"] for t in turns] == ["u1", "u2"]
    assert [t["state"] for t in turns] == ["complete", "error"]


# -- reading the record ------------------------------------------------------------------------


class Conversation:
    """Enough of a Conversation for read_history: its id and a (shortened) history."""

    def __init__(self, history: History) -> None:
        self._history = history

    def id(self) -> str:
        return "conv"

    async def history(self) -> History:
        await trio.lowlevel.checkpoint()
        return self._history


class Pager:
    """A HistoryPager over a full item list, with the fake's window semantics."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items
        self.requests: list[WindowRequest] = []

    async def read_history_window(self, req: WindowRequest) -> HistoryWindow:
        self.requests.append(req)
        await trio.lowlevel.checkpoint()
        items = [i for i in self.items if i.agent_id == req.agent_id]
        if req.item_id:
            pos = next(n for n, i in enumerate(items) if i.id == req.item_id)
            high = pos + 1 + req.after
        else:
            pos = high = len(items)
        low = max(0, pos - req.before)
        nxt = items[high].id if high < len(items) else ""
        return HistoryWindow(items=items[low:high], at=pos - low, start=low == 0, next=nxt)


async def test_a_pager_reads_the_whole_record_a_plain_read_shortened() -> None:
    full = [user(f"u{i}", f"prompt {i}", i) for i in range(450)]
    sub = Item(id="s1", kind=ItemKind.ASSISTANT, text="sub", agent_id="agent-1")
    shortened = History(items=[*full[-3:], sub], truncated=True, model="m")
    pager = Pager(full)
    assert isinstance(pager, HistoryPager)
    history = await read_history(pager, Conversation(shortened), "/w")  # type: ignore[arg-type]
    assert [i.id for i in history.items if not i.agent_id] == [f"u{i}" for i in range(450)]
    assert [i.id for i in history.items if i.agent_id] == ["s1"]
    assert not history.truncated and history.model == "m"
    assert len(pager.requests) == 3  # 200 items a window
    assert all(r.conversation_id == "conv" and r.workdir == "/w" for r in pager.requests)


async def test_without_a_pager_the_conversations_history_is_used() -> None:
    plain = record(user("u1", "hi"))
    history = await read_history(object(), Conversation(plain), "/w")  # type: ignore[arg-type]
    assert history is plain
