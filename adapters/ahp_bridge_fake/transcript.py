"""The fake's own record of one conversation, so a reopen can return its History.

The record is the conversation's settings (``meta``) plus the transcript events it emitted,
folded into items, subagents, usage and model exactly as a reader of the event stream
would fold them. With a data directory it lives on disk as one JSONL file per conversation
(a ``{"meta": ...}`` line whenever the settings change, an ``{"event": ...}`` line per
transcript event in Go JSON), so a reopen survives a process restart; the items then stay on
disk only, read back when a reopen asks for the History or a rewind for what it removes, so a
conversation of thousands of turns costs the process an index of its prompts, not its text.
Without a data directory the folded record is kept in memory.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ahp_bridge_support.private import private_file

from ahp_bridge.agentapi import (
    Event,
    EventKind,
    History,
    Item,
    ItemKind,
    Subagent,
    Usage,
)

# Events that change what History returns; the others (turns, interactions, live state)
# are not part of a conversation's record.
RECORDED_KINDS = frozenset(
    {
        EventKind.ITEM,
        EventKind.DELTA,
        EventKind.SUBAGENT,
        EventKind.USAGE,
        EventKind.MODEL_SELECTION,
    }
)


@dataclass
class Meta:
    """A conversation's settings as the fake keeps them."""

    id: str
    title: str = ""
    workdir: str = ""
    model: str = ""
    effort: str = ""
    context_size: str = ""
    title_set: bool = False
    """The caller named it (set_title): the provider no longer titles it."""


class _Fold:
    """Transcript events folded as a reader of the stream folds them."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], Item] = {}
        self.subagents: dict[str, Subagent] = {}

    def fold(self, event: Event) -> None:
        if event.kind is EventKind.ITEM and event.item is not None:
            item = event.item
            self.items[(item.agent_id, item.id)] = item.model_copy(deep=True)
        elif event.kind is EventKind.DELTA and event.delta is not None:
            delta = event.delta
            key = (delta.agent_id, delta.item_id)
            current = self.items.get(key)
            if current is None:
                self.items[key] = Item(
                    id=delta.item_id, kind=delta.kind, text=delta.text, agent_id=delta.agent_id
                )
            else:
                current.text += delta.text
        elif event.kind is EventKind.SUBAGENT and event.subagent is not None:
            self.subagents[event.subagent.id] = event.subagent.model_copy(deep=True)

    def truncate(self, user_item_id: str) -> int:
        """Drop the main agent's user item and everything after it; how many items went."""
        keys = list(self.items)
        at = next((i for i, k in enumerate(keys) if k == ("", user_item_id)), None)
        if at is None:
            return 0
        for key in keys[at:]:
            del self.items[key]
        kept = {item.id for item in self.items.values()}
        self.subagents = {
            k: sa for k, sa in self.subagents.items() if sa.parent_tool_call_id in kept
        }
        return len(keys) - at

    def prompt_keys(self) -> dict[tuple[str, str], None]:
        return {
            key: None
            for key, item in self.items.items()
            if item.kind is ItemKind.USER and not item.delivery
        }


class Transcript:
    """One conversation's record: settings and folded transcript, optionally on disk."""

    def __init__(self, meta: Meta, file: Path | None = None) -> None:
        self.meta = meta
        self.file = file
        #: The folded record, in memory only without a file (with one, it is read back).
        self._memory: _Fold | None = _Fold() if file is None else None
        #: The user items that started a turn (no steer delivery), in order: the index a file
        #: keeps in memory (prompt numbers for a rewind).
        self._prompts: dict[tuple[str, str], None] = {}
        self.usage: Usage | None = None

    @property
    def prompts(self) -> int:
        """How many prompts started a turn (user items without a steer delivery)."""
        return len(self._prompts)

    # -- folding -------------------------------------------------------------------------

    def _fold(self, event: Event) -> None:
        if self._memory is not None:
            self._memory.fold(event)
        if event.kind is EventKind.ITEM and event.item is not None:
            item = event.item
            if item.kind is ItemKind.USER and not item.delivery:
                self._prompts.setdefault((item.agent_id, item.id), None)
        elif event.kind is EventKind.USAGE and event.usage is not None:
            self.usage = event.usage.model_copy()
        elif event.kind is EventKind.MODEL_SELECTION and event.model_selection is not None:
            self.meta.model = event.model_selection.model
            self.meta.effort = event.model_selection.effort or ""
            self.meta.context_size = event.model_selection.context_size or ""

    def _record(self) -> _Fold:
        """The folded record: in memory, or read back from the file."""
        if self._memory is not None:
            return self._memory
        assert self.file is not None
        return Transcript.load(self.file, keep=True)._memory or _Fold()

    def truncate(self, user_item_id: str) -> int:
        """Drop the main agent's user item ``user_item_id`` and everything recorded after it
        (a rewind); returns how many items went, 0 when no such item is recorded."""
        record = self._record()
        removed = record.truncate(user_item_id)
        if removed == 0:
            return 0
        self._prompts = record.prompt_keys()
        self._append({"rewind": user_item_id})
        return removed

    def turn_of(self, user_item_id: str) -> int | None:
        """The 1-based prompt number of the main agent's user item ``user_item_id``."""
        number = 0
        for agent, item_id in self._prompts:
            if agent:
                continue
            number += 1
            if item_id == user_item_id:
                return number
        return None

    def record(self, event: Event) -> None:
        """Fold a transcript event into the record (and append it to the file)."""
        if event.kind not in RECORDED_KINDS:
            return
        self._fold(event)
        self._append({"event": event.to_json()})

    def save_meta(self) -> None:
        """Persist the current settings (after a change)."""
        self._append({"meta": asdict(self.meta)})

    def _append(self, line: dict[str, Any]) -> None:
        if self.file is None:
            return
        if not self.file.exists():
            private_file(self.file)  # a transcript is the user's only, whatever the umask
        with self.file.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")

    # -- reading -------------------------------------------------------------------------

    def history(self) -> History:
        """The recorded state: items oldest first, subagents, usage and model."""
        record = self._record()
        return History(
            items=[item.model_copy(deep=True) for item in record.items.values()],
            subagents=[sa.model_copy(deep=True) for sa in record.subagents.values()],
            usage=self.usage.model_copy() if self.usage else None,
            model=self.meta.model,
        )

    @classmethod
    def load(cls, file: Path, *, keep: bool = False) -> Transcript:
        """Rebuild a record from its JSONL file (its folded items kept in memory only with
        `keep`); a damaged line names the file and line."""
        transcript: Transcript | None = None
        with file.open(encoding="utf-8") as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    entry = json.loads(line)
                    if "meta" in entry:
                        meta = Meta(**entry["meta"])
                        if transcript is None:
                            transcript = cls(meta)  # folds in memory while it reads
                        else:
                            transcript.meta = meta
                    elif transcript is not None and "event" in entry:
                        transcript._fold(Event.from_json(entry["event"]))
                    elif transcript is not None and "rewind" in entry:
                        transcript.truncate(str(entry["rewind"]))
                    else:
                        raise ValueError("expected a meta line first, then meta or event lines")
                except (ValueError, TypeError) as exc:
                    raise ValueError(
                        f"{file}:{number}: damaged conversation record: {exc}"
                    ) from exc
        if transcript is None:
            raise ValueError(f"{file}: empty conversation record")
        transcript.file = file
        if not keep:
            transcript._memory = None
        return transcript
