"""Reading recorded conversations: history, windows, diffs, forks, rewinds and plans."""

from __future__ import annotations

from pydantic import Field

from ._base import GoModel, GoStruct, GoTime, Internal, OmitEmpty, OmitNil
from .items import Item
from .live import SkillLoad, Usage
from .subagents import Subagent


class ReadRequest(GoStruct):
    """Names the conversation to read and its project directory."""

    conversation_id: str
    workdir: str = ""


class History(GoStruct):
    """A reopened conversation's provider-recorded state."""

    items: list[Item] = Field(default_factory=list)
    """The transcript, oldest first; subagent items carry agent_id."""
    subagents: list[Subagent] = Field(default_factory=list)
    """The subagent records the recorded events allow to rebuild."""
    usage: Usage | None = None
    """The AI units as recorded, or None when the record has none."""
    model: str = ""
    """The main agent's model as the record last states it, "" when it does not say."""
    skills: list[SkillLoad] = Field(default_factory=list)
    """Skill loads the record holds, oldest first."""
    truncated: bool = False
    """Only the newest part of a record too large to read whole was returned."""


class WindowRequest(ReadRequest):
    """One recorded item and how many of its agent's items around it to read.

    Embeds ReadRequest. An empty item_id stands for the end of the record.
    """

    agent_id: str = ""
    """"" for the main agent, else a subagent instance ID; only its items are read."""
    item_id: str = ""
    before: int = 0
    after: int = 0


class HistoryWindow(GoStruct):
    """A contiguous run of one agent's recorded items, oldest first and whole (not clipped)."""

    items: list[Item] = Field(default_factory=list)
    at: int = 0
    """Index of the requested item in items; len(items) for the end of the record."""
    start: bool = False
    """items begins with the agent's first recorded item."""
    next: str = ""
    """ID of the item recorded right after items, "" when items ends with the newest."""


class SubagentRequest(ReadRequest):
    """One recorded subagent and how many recorded before it to read (embeds ReadRequest)."""

    agent_id: str = ""
    before: int = 0


class SubagentWindow(GoStruct):
    """A contiguous run of subagents in first-recorded order, ending with the requested one."""

    subagents: list[Subagent] = Field(default_factory=list)
    start: bool = False
    """subagents begins with the first recorded subagent."""


class PreviousConversation(GoStruct):
    """One conversation Importer.previous lists; the title is untrusted provider text."""

    id: str
    title: str = ""
    workdir: str = ""
    created_at: GoTime = None
    updated_at: GoTime = None


class FileDiff(GoModel):
    """One provider-recorded file change.

    before/after hold full file text when available; patch holds a unified diff when that
    is what the provider returns. counts_unknown separates omitted/binary from zero changes.
    """

    counts_unknown: OmitEmpty[bool] = False
    binary: OmitEmpty[bool] = False
    truncated: OmitEmpty[bool] = False
    old_path: OmitEmpty[str] = ""
    path: str
    status: OmitEmpty[str] = ""
    additions: int = 0
    deletions: int = 0
    before: OmitEmpty[str] = ""
    after: OmitEmpty[str] = ""
    patch: OmitEmpty[str] = ""


class ItemDiffRequest(ReadRequest):
    """Names one committed edit of a recorded tool item (embeds ReadRequest)."""

    agent_id: str = ""
    item_id: str = ""
    event_id: str = ""
    path: str = ""


class ItemDiff(GoModel):
    """Only the requested file's recorded patch; an unavailable detail reports status only."""

    path: str
    status: str
    patch: OmitEmpty[str] = ""


class ForkBoundaryRequest(GoStruct):
    """The conversation and owner user item a fork would copy up to."""

    conversation_id: str
    user_item_id: str = ""


class ForkBoundary(GoModel):
    """A fork boundary, including the selected owner turn.

    ``to_event_id`` is the next owner-start event, which the fork excludes; empty means the
    proven current end. ``tail_event_id`` detects an append before the fork starts.
    """

    user_event_id: str
    to_event_id: OmitEmpty[str] = ""
    tail_event_id: str = ""


class ForkRequest(ForkBoundaryRequest):
    """A fork of the exact boundary read before (embeds ForkBoundaryRequest)."""

    boundary: ForkBoundary


class NativeTurnFile(GoModel):
    """One file of a turn's native captured changes."""

    path: str
    kind: str
    additions: OmitEmpty[int] = 0
    deletions: OmitEmpty[int] = 0


class NativeTurnChanges(GoModel):
    """The immutable native captured suffix at its owner's settle boundary (no patches)."""

    status: str = ""
    event_id: OmitEmpty[str] = ""
    files: OmitEmpty[int] = 0
    additions: OmitEmpty[int] = 0
    deletions: OmitEmpty[int] = 0
    omitted: OmitEmpty[int] = 0
    entries: OmitEmpty[list[NativeTurnFile]] = Field(default_factory=list)


class RewindPreview(GoModel):
    """Binds the exact native boundary that begins the discarded suffix.

    ``discarded`` (internal) holds the newest discarded root owner item IDs; ``turns``
    counts all of them. ``files`` are the native forward counts over the suffix.
    """

    user_event_id: str
    tail_event_id: str = ""
    turns: int = 0
    discarded: Internal[list[str]] = Field(default_factory=list)
    files_available: bool = False
    files_reason: OmitEmpty[str] = ""
    files: NativeTurnChanges = Field(default_factory=NativeTurnChanges)


class RewindSkip(GoModel):
    """A file a rewind did not restore, and why."""

    path: str
    reason: str


class RewindResult(GoModel):
    """Every native rewind outcome, keeping whether its optional fields were present.

    Lists are bounded; the omitted counts say how many paths were dropped.
    """

    outcome: str
    error: OmitNil[str | None] = None
    events_removed: OmitNil[int | None] = None
    restored_files: list[str] = Field(default_factory=list)
    skipped_files: list[RewindSkip] = Field(default_factory=list)
    restored_omitted: OmitEmpty[int] = 0
    skipped_omitted: OmitEmpty[int] = 0


class PlanDraft(GoModel):
    """The current scratch plan, distinct from the reviewed snapshot.

    ``exists`` separates a missing or deleted draft from an existing empty plan.
    """

    exists: bool = False
    content: OmitEmpty[str] = ""
    truncated: OmitEmpty[bool] = False
