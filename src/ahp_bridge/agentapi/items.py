"""Transcript items and their parts, streamed deltas and turn transitions."""

from __future__ import annotations

from pydantic import Field

from ._base import GoBytes, GoModel, GoTime, Internal, OmitEmpty, OmitNil, OmitZero
from .enums import CompletionDecision, ItemKind, PlanAction, ToolStatus, TurnState


class Attachment(GoModel):
    """Uploaded content: an upload's metadata, or content a user item carried.

    ``id`` names the web service's stored copy and is empty when it has none.
    """

    id: OmitEmpty[str] = ""
    name: str
    mime: str
    size: OmitEmpty[int] = 0
    not_native: OmitEmpty[bool] = False
    """A document the provider did not pass to the model as a document: the agent got its path."""
    sha256: Internal[str] = ""
    """Hex digest of the content when the provider's record has it; never sent to browsers."""


class Image(GoModel):
    """One image a tool's result returned.

    Adapters fill data, mime and name (or only sha256 when the record keeps just the digest).
    The host stores the bytes, sets id and size and clears data: bytes never reach a browser.
    """

    id: str = ""
    mime: str = ""
    size: int = 0
    name: OmitEmpty[str] = ""
    sha256: Internal[str] = ""
    data: Internal[GoBytes] = b""


class OutputLine(GoModel):
    """One line of a running shell call's output; ``err`` marks stderr."""

    text: str
    err: OmitEmpty[bool] = False


class FileDeclaration(GoModel):
    """Display intent from a completed host tool call: no provenance, no authority to open."""

    artifact_id: str
    path: str
    title: OmitEmpty[str] = ""
    type_hint: OmitEmpty[str] = ""


class FileEdit(GoModel):
    """A native committed mutation, including edits from a failed call.

    Additions and deletions are known only when diff_status is "available".
    """

    path: str
    kind: str
    additions: OmitEmpty[int] = 0
    deletions: OmitEmpty[int] = 0
    diff_status: str


class ToolCall(GoModel):
    """One tool invocation. Input and output are bounded display text (JSON or plain)."""

    name: str
    title: OmitEmpty[str] = ""
    status: ToolStatus
    input: OmitEmpty[str] = ""
    output: OmitEmpty[str] = ""
    edit_event_id: OmitEmpty[str] = ""
    """The completion event whose immutable patch ItemDiffReader fetches."""
    file_edits: OmitEmpty[list[FileEdit]] = Field(default_factory=list)
    file_edits_truncated: OmitEmpty[bool] = False
    progress: OmitEmpty[str] = ""
    """Latest human status of a running call (<= 512 UTF-8 bytes); empty once ended."""
    exit_code: OmitNil[int | None] = None
    """A shell command's exit code when the provider reports one."""
    declaration: OmitNil[FileDeclaration | None] = None
    tail: OmitEmpty[list[OutputLine]] = Field(default_factory=list)
    """Newest output lines of a running shell call (<= 10 of <= 512 bytes); empty once ended."""


class CompletionBlocker(GoModel):
    """Why a completion was blocked; opaque permission-recovery data is omitted."""

    kind: str
    reason: str
    resumable: bool


class TaskCompletion(GoModel):
    """A provider's bounded completion decision (label-safe native facts).

    ``user_item_id`` is the exact user-message ID; empty means it cannot be correlated.
    """

    decision: CompletionDecision
    user_item_id: OmitEmpty[str] = ""
    summary: OmitEmpty[str] = ""
    reason: OmitEmpty[str] = ""
    blocker: OmitNil[CompletionBlocker | None] = None


class PlanReview(GoModel):
    """A native reviewed plan snapshot.

    Pending reviews carry bounded content; transcript entries carry only request identity
    and revision, and a PlanHistoryReader reads the historical body on demand.
    """

    request_id: str
    summary: OmitEmpty[str] = ""
    revision: OmitEmpty[int] = 0
    actions: OmitEmpty[list[PlanAction]] = Field(default_factory=list)
    recommended: OmitEmpty[PlanAction | None] = None
    content: OmitEmpty[str] = ""
    previous: OmitEmpty[str] = ""
    truncated: OmitEmpty[bool] = False
    previous_truncated: OmitEmpty[bool] = False
    previous_unavailable: OmitEmpty[bool] = False


class Item(GoModel):
    """One transcript entry. Text is untrusted provider output.

    A later item with the same agent_id and id replaces an earlier one.
    """

    id: str
    kind: ItemKind
    text: OmitEmpty[str] = ""
    tool: OmitNil[ToolCall | None] = None
    completion: OmitNil[TaskCompletion | None] = None
    """A completion decision kept as a notice; separate from the turn's lifecycle."""
    plan: OmitNil[PlanReview | None] = None
    time: GoTime = None
    """When the item began: a tool call's start, a thought's call start, a message's first text."""
    ended_at: OmitZero[GoTime] = None
    """When a tool call or thought finished, from the provider's record; None while running."""
    agent_id: OmitEmpty[str] = ""
    """Empty for the main agent, otherwise the exact subagent instance ID."""
    delivery: OmitEmpty[str] = ""
    """DELIVERY_STEER on a user item that joined a running turn as a steer."""
    steer_status: OmitEmpty[str] = ""
    """A local receipt before the provider records the user message (STEER_*)."""
    attachments: OmitEmpty[list[Attachment]] = Field(default_factory=list)
    """Uploads a user item carried, never their bytes."""
    images: OmitEmpty[list[Image]] = Field(default_factory=list)
    """Images a tool item's result returned, in the provider's order, with their bytes."""
    images_note: OmitEmpty[str] = ""
    """Set by the host when it did not keep some images; adapters leave it empty."""
    clipped: Internal[bool] = False
    """A text was shortened to bound memory; a HistoryPager reads the item whole."""


class Delta(GoModel):
    """Appends ``text`` to the item ``item_id`` of kind ``kind`` (of agent ``agent_id``)."""

    item_id: str
    kind: ItemKind
    text: str
    agent_id: OmitEmpty[str] = ""


class Turn(GoModel):
    """A turn transition with evidence from the provider."""

    completion: OmitNil[TaskCompletion | None] = None
    """The main agent's receipt from this foreground generation; also match user_item_id."""
    state: TurnState
    error: OmitEmpty[str] = ""
    """The sanitized provider error for FAILED."""
    model: OmitEmpty[str] = ""
    reason: OmitEmpty[str] = ""
    """Why a CANCELLED turn stopped, such as "autopilot_credit_limit"."""
    read_once_hits: Internal[int] = 0
    stall_gave_up: Internal[bool] = False
