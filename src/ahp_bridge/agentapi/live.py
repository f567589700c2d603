"""Live conversation state the provider reports: activity, context, usage, todos and snapshots.

None of it is a transcript item; most of it is never persisted.
"""

from __future__ import annotations

from pydantic import Field

from ._base import GoModel, GoStruct, GoTime, OmitEmpty, OmitNil, OmitZero


class Retry(GoModel):
    """A model call the provider is retrying."""

    count: int = 0
    """How many times the call was retried so far."""
    reason: OmitEmpty[str] = ""
    """The provider's reason code, such as "rate_limited"."""
    status: OmitEmpty[int] = 0
    """HTTP status of the failed attempt, 0 when unknown."""
    network: OmitEmpty[bool] = False
    """The attempt failed without a response."""
    at: GoTime = None


class Phase(GoModel):
    """Model calls in flight and the oldest running tool call, from the provider's events.

    Covers the running turn and, between turns, subagents still running and compaction. A
    subagent-spawning call is not a running tool: the subagent reports its own.
    """

    calls: OmitEmpty[int] = 0
    """Model calls in flight (main agent, compaction, subagents)."""
    subagents: OmitEmpty[int] = 0
    """How many of those calls are subagents'."""
    model: OmitEmpty[str] = ""
    """The main agent's call's model, else compaction's, else the oldest subagent call's."""
    calls_since: OmitZero[GoTime] = None
    compacting: OmitEmpty[bool] = False
    agent: OmitEmpty[str] = ""
    tool: OmitEmpty[str] = ""
    """The oldest running tool call, "" when none runs."""
    detail: OmitEmpty[str] = ""
    tool_since: OmitZero[GoTime] = None
    tool_subagent: OmitEmpty[bool] = False


class Activity(GoModel):
    """The main agent's live state in the running turn; started afresh each turn."""

    plan: OmitEmpty[bool] = False
    """True only after this turn's explicit native implementation approval."""
    intent: OmitEmpty[str] = ""
    """What the main agent says it is doing."""
    retry: OmitNil[Retry | None] = None
    phase: OmitNil[Phase | None] = None
    """What the agents wait on now; None while no model call is in flight and no tool runs."""


class Todo(GoModel):
    """One row of a TodoList, in the provider's order."""

    id: str
    title: str
    status: str
    """TODO_PENDING, TODO_IN_PROGRESS, TODO_DONE or TODO_BLOCKED."""
    note: OmitEmpty[str] = ""
    """Why a blocked row is blocked."""
    agent_id: OmitEmpty[str] = ""
    """The subagent that first wrote the row; "" for the main agent or unknown."""
    changed_at: OmitZero[GoTime] = None
    """When its status last changed; None when first seen on opening the conversation."""


class TodoList(GoModel):
    """The todo list the agents keep in the conversation; ``known`` is False if unreadable."""

    known: bool = False
    todos: list[Todo] = Field(default_factory=list)


class Context(GoModel):
    """The provider's latest live context usage report (not an estimate).

    ``prompt`` is the input tokens of the latest main-agent call and ``cached`` how many
    came from cache; both 0 until a call reports them.
    """

    used: int = 0
    limit: int = 0
    prompt: OmitEmpty[int] = 0
    cached: OmitEmpty[int] = 0


class Usage(GoModel):
    """What a conversation consumed: its AI units total so far (a later report replaces)."""

    ai_units: float = 0.0


class TokenUsage(GoStruct):
    """One model call, subagents' included. Input includes cache reads and writes."""

    model: str = ""
    time: GoTime = None
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    duration_ms: int = 0
    """The call's own duration when the provider reports it."""
    nano_aiu: int = 0
    cost: float = 0.0


class ModelSelection(GoStruct):
    """Provider-confirmed model settings; None optional fields were not reported."""

    model: str = ""
    effort: str | None = None
    context_size: str | None = None


class BackgroundTask(GoModel):
    """One provider-owned shell process."""

    id: str
    description: OmitEmpty[str] = ""
    command: str
    status: str
    started_at: OmitZero[GoTime] = None
    ended_at: OmitZero[GoTime] = None


class BackgroundTasks(GoModel):
    """Provider-owned shell processes, independent of the foreground turn.

    ``known`` is False when their state cannot be read; tasks then keeps the last known
    snapshot, not a claim of liveness.
    """

    known: bool = False
    tasks: list[BackgroundTask] = Field(default_factory=list)


class ScheduleEntry(GoModel):
    """Provider-owned timing; IDs are strings so native int64 IDs survive a browser."""

    id: str
    recurring: bool = False
    self_paced: OmitEmpty[bool] = False
    interval_ms: OmitEmpty[int] = 0
    cron: OmitEmpty[str] = ""
    timezone: OmitEmpty[str] = ""
    next_run_at: OmitZero[GoTime] = None


class ScheduleSnapshot(GoModel):
    """The open conversation's active native schedules (display metadata, never the prompt).

    Unknown is never an authoritative empty list; truncated keeps a partial catalog.
    """

    supported: bool = False
    known: bool = False
    entries: list[ScheduleEntry] = Field(default_factory=list)
    truncated: OmitEmpty[bool] = False
    reason: OmitEmpty[str] = ""


class AutopilotObjective(GoModel):
    """The objective an autopilot execution works toward."""

    id: int
    objective: str
    status: str
    turn_count: int = 0
    pause_reason: OmitEmpty[str] = ""
    completion_summary: OmitEmpty[str] = ""
    credits_used: OmitNil[float | None] = None
    credit_limit: OmitNil[float | None] = None


class ExecutionState(GoModel):
    """A runtime observation, separate from permission policy.

    A disconnected runtime keeps the last observation with ``known`` False.
    """

    known: bool = False
    mode: OmitEmpty[str] = ""
    objective: OmitNil[AutopilotObjective | None] = None


class MCPServerStatus(GoModel):
    """Lightweight MCP server state, never a URL or tool description; sign_in stays set."""

    name: str
    status: str
    """One of the MCP_* state constants."""
    error: OmitEmpty[str] = ""
    source: OmitEmpty[str] = ""
    remote: OmitEmpty[bool] = False
    sign_in: OmitEmpty[bool] = False
    needs_reconnect: OmitEmpty[bool] = False


class MCPStatusSnapshot(GoModel):
    """The open conversation's MCP servers (not its history).

    ``supported`` is provider capability; ``ready`` means a full initial list arrived;
    ``truncated`` reports states that did not fit the bounded snapshot.
    """

    supported: bool = False
    ready: bool = False
    servers: list[MCPServerStatus] = Field(default_factory=list)
    truncated: OmitEmpty[bool] = False


class SkillLoad(GoStruct):
    """One skill load by the main agent or a subagent (name and description, never the body).

    agent_id and id (the provider's event ID) identify it, so a load seen live and in the
    record counts once.
    """

    id: str = ""
    agent_id: str = ""
    name: str = ""
    description: str = ""
    at: GoTime = None
