"""Assistant text, reasoning and notices as response parts of the running turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ahp_bridge.agentapi import Event, Item, ItemKind

from .._wire import META_PREFIX, Emitted
from .context import ChatContext
from .turns import PerTurn, Turn, TurnLifecycle


@dataclass
class _TurnText:
    open_key: tuple[str, str] | None = None
    """The (kind, item id) whose part the next delta of that item extends, if still open."""
    open_part: str = ""
    text: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    """The text emitted per (kind, item id), as chunks: joined only when a whole item comes."""
    notices: set[str] = field(default_factory=set)


class TextParts:
    """Text items and deltas as ``chat/responsePart`` and its streaming ``chat/delta``.

    One part is open at a time: a delta of its item extends it, anything else shown in the
    turn between (a tool call, a question, another part) closes it.
    """

    def __init__(self, ctx: ChatContext, turns: TurnLifecycle) -> None:
        self._ctx = ctx
        self._turns = turns
        self._state = PerTurn(_TurnText)

    def close(self, turn: Turn) -> None:
        """Something else is shown in the turn: the next text starts a new part."""
        self._state.of(turn).open_key = None

    def on_item(self, item: Item) -> list[Emitted]:
        """A whole assistant, reasoning or notice item of this chat's agent."""
        if item.kind in (ItemKind.ASSISTANT, ItemKind.REASONING):
            return self._text(item.kind, item.id, full=item.text)
        if item.kind == ItemKind.NOTICE:
            return self._notice(item)
        return []

    def on_delta(self, event: Event) -> list[Emitted]:
        delta = event.delta
        if delta is None or delta.agent_id != self._ctx.agent_id:
            return []
        if delta.kind not in (ItemKind.ASSISTANT, ItemKind.REASONING):
            return []
        return self._text(delta.kind, delta.item_id, append=delta.text)

    def _text(
        self, kind: ItemKind, item_id: str, *, full: str | None = None, append: str = ""
    ) -> list[Emitted]:
        turn = self._turns.content_turn()
        if turn is None:
            return []
        state = self._state.of(turn)
        key = (str(kind), item_id)
        chunks = state.text.setdefault(key, [])
        if full is not None:
            # An item replaces earlier versions; AHP can only append, so only a longer
            # version of what was streamed adds anything (a rewrite keeps the streamed text).
            seen = "".join(chunks)
            chunks[:] = [seen]
            if not full.startswith(seen):
                return []
            append = full[len(seen) :]
        if not append:
            return []
        chunks.append(append)
        markdown = kind == ItemKind.ASSISTANT
        if state.open_key == key:
            delta = {
                "type": "chat/delta" if markdown else "chat/reasoning",
                "turnId": turn.id,
                "partId": state.open_part,
                "content": append,
            }
            return [self._ctx.chat(delta)]
        part_id = self._ctx.new_id()
        state.open_key, state.open_part = key, part_id
        part = {"kind": "markdown" if markdown else "reasoning", "id": part_id, "content": append}
        return [self._ctx.chat({"type": "chat/responsePart", "turnId": turn.id, "part": part})]

    def _notice(self, item: Item) -> list[Emitted]:
        turn = self._turns.content_turn()
        if turn is None:
            return []
        state = self._state.of(turn)
        if item.id in state.notices or not item.text:
            return []
        state.notices.add(item.id)
        part: dict[str, Any] = {"kind": "systemNotification", "content": item.text}
        meta: dict[str, Any] = {f"{META_PREFIX}itemId": item.id}
        if item.completion is not None:
            meta[f"{META_PREFIX}completion"] = item.completion.to_json()
        part["_meta"] = meta
        state.open_key = None
        return [self._ctx.chat({"type": "chat/responsePart", "turnId": turn.id, "part": part})]
