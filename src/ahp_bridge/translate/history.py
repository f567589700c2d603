"""A provider-recorded History -> AHP ``Turn``s, for a chat reopened after a restart.

The provider owns transcripts; after a restart the bridge rebuilds a chat's completed turns from
``Conversation.history()`` (or ``HistoryReader``) with this pure function, using the same part
shapes the live ``EventTranslator`` emits, so a rebuilt chat reads like the live one did.

How the record maps:

* Each user item of the agent (a steer excepted) starts a turn; its text is the turn's message
  (origin ``user``, or ``agent`` for an autopilot continuation). Items before the first user
  item form a turn with an empty message of origin ``agent`` (a truncated record).
* The turn id is the user item's id (``history:<id>`` for the leading turn), so rebuilding the
  same record again yields the same ids.
* assistant -> markdown part, reasoning -> reasoning part, notice -> systemNotification, a steer
  -> systemNotification (AHP 0.7.0 has no part for a user message inside a turn), tool ->
  toolCall part: completed or failed calls as ``completed`` with their result, calls the record
  shows unfinished as ``cancelled`` (``skipped``), like the reducer leaves them at a turn's end.
  A subagent's tool call gets the ``subagent`` content of the subagents it spawned.
* The record has no turn outcome: rebuilt turns are ``complete``; ``startedAt`` is the first
  item's time and ``duration`` runs to the last item's end, 0 when the record has no times.
* Items of other agents are left out, as in the live chat (``agent_id`` selects a subagent's
  own transcript for its read-only chat).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ahp_bridge.agentapi import (
    DELIVERY_AUTOPILOT,
    DELIVERY_STEER,
    History,
    Item,
    ItemKind,
    ToolStatus,
)

from ._parts import default_subagent_uri, subagent_ref, tool_result
from ._wire import META_PREFIX, drop_none, error_part, iso_from_ms

__all__ = ["INTERRUPTED", "mark_interrupted", "turns_from_history"]

_EPOCH_ISO = iso_from_ms(0)


def turns_from_history(
    history: History,
    *,
    agent_id: str = "",
    subagent_chat_uri: Callable[[str], str] | None = None,
) -> list[dict[str, Any]]:
    """The completed AHP turns, oldest first, that ``history`` records for one agent."""
    chat_uri = subagent_chat_uri or default_subagent_uri
    spawned: dict[str, list[dict[str, Any]]] = {}
    for sub in history.subagents:
        if sub.parent_agent_id == agent_id and sub.parent_tool_call_id:
            spawned.setdefault(sub.parent_tool_call_id, []).append(subagent_ref(sub, chat_uri))
    turns: list[_Builder] = []
    for item in history.items:
        if item.agent_id != agent_id:
            continue
        if item.kind == ItemKind.USER and item.delivery != DELIVERY_STEER:
            turns.append(_Builder(item.id, item))
            continue
        if not turns:
            turns.append(_Builder(f"history:{item.id}", None))
        turns[-1].add(item, spawned)
    return [turn.build() for turn in turns]


class _Builder:
    def __init__(self, turn_id: str, user: Item | None) -> None:
        self.id = turn_id
        origin = "agent" if user is None or user.delivery == DELIVERY_AUTOPILOT else "user"
        self.message = {"text": user.text if user else "", "origin": {"kind": origin}}
        self.parts: list[dict[str, Any]] = []
        self.times: list[datetime] = []
        if user is not None:
            self._time(user)

    def _time(self, item: Item) -> None:
        self.times += [t for t in (item.time, item.ended_at) if t is not None]

    def add(self, item: Item, spawned: dict[str, list[dict[str, Any]]]) -> None:
        self._time(item)
        if item.kind in (ItemKind.ASSISTANT, ItemKind.REASONING) and item.text:
            kind = "markdown" if item.kind == ItemKind.ASSISTANT else "reasoning"
            self.parts.append({"kind": kind, "id": item.id, "content": item.text})
        elif item.kind in (ItemKind.NOTICE, ItemKind.USER) and item.text:  # user: a steer
            meta: dict[str, Any] = {f"{META_PREFIX}itemId": item.id}
            if item.kind == ItemKind.USER:
                meta[f"{META_PREFIX}steer"] = True
            part = {"kind": "systemNotification", "content": item.text, "_meta": meta}
            self.parts.append(part)
        elif item.kind == ItemKind.TOOL and item.tool is not None:
            self.parts.append({"kind": "toolCall", "toolCall": _tool(item, spawned)})

    def build(self) -> dict[str, Any]:
        start = min(self.times) if self.times else None
        end = max(self.times) if self.times else None
        duration = int((end - start).total_seconds() * 1000) if start and end else 0
        started = iso_from_ms(int(start.timestamp() * 1000)) if start else _EPOCH_ISO
        return {
            "id": self.id,
            "startedAt": started,
            "duration": duration,
            "message": self.message,
            "responseParts": self.parts,
            "state": "complete",
        }


def _tool(item: Item, spawned: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    call = item.tool
    assert call is not None
    display = call.title or call.name or "Tool"
    base = drop_none(
        {
            "toolCallId": item.id,
            "toolName": call.name or display,
            "displayName": display,
            "invocationMessage": display,
            "toolInput": call.input or None,
        }
    )
    if call.status not in (ToolStatus.COMPLETED, ToolStatus.FAILED):
        return {**base, "status": "cancelled", "reason": "skipped"}
    result, meta = tool_result(item, call, display, spawned.get(item.id, []))
    state = {**base, "status": "completed", "confirmed": "not-needed", **result}
    if meta:
        state["_meta"] = meta
    return state


INTERRUPTED = "interrupted"
"""``errorType`` of a turn that was running when the bridge stopped."""


def mark_interrupted(
    turns: list[dict[str, Any]], running: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """End the turn that was running when the bridge stopped, as an error, never as running.

    ``running`` is what the host recorded when the turn started (``id``, ``startedAt``,
    ``text``). When the newest rebuilt turn is that turn (same message text) it keeps its parts
    and takes the recorded id; when the provider never recorded the prompt, a turn with the
    recorded message and no parts is added. Its unfinished tool calls are already cancelled.
    """
    if not running:
        return turns
    # Resumable: the conversation reopens after the restart, so `chat/turnResume` can continue.
    part = error_part(
        INTERRUPTED,
        "The bridge stopped while this turn was running; it did not finish.",
        resumable=True,
    )
    text = running.get("text") if isinstance(running.get("text"), str) else ""
    turn_id = running.get("id") if isinstance(running.get("id"), str) else None
    last = turns[-1] if turns else None
    if last is not None and last["message"].get("text") == text:
        ended = {**last, "state": "error", "responseParts": [*last["responseParts"], part]}
        if turn_id and not any(t["id"] == turn_id for t in turns[:-1]):
            ended["id"] = turn_id
        return [*turns[:-1], ended]
    started = running.get("startedAt") if isinstance(running.get("startedAt"), str) else None
    added: dict[str, Any] = {
        "id": turn_id or f"interrupted:{len(turns)}",
        "startedAt": started or _EPOCH_ISO,
        "duration": 0,
        "message": {"text": text, "origin": {"kind": "user"}},
        "responseParts": [part],
        "state": "error",
    }
    return [*turns, added]
