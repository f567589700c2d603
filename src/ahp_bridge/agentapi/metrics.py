"""On-demand context window and usage metric snapshots of an open conversation."""

from __future__ import annotations

from pydantic import Field

from ._base import GoModel, GoTime, OmitEmpty, OmitNil


class ContextInfo(GoModel):
    """Occupied tokens apart from the advertised prompt allowance and the effective budget."""

    model: str = ""
    total_tokens: int = 0
    limit: int = 0
    prompt_token_limit: int = 0
    compaction_threshold: int = 0
    buffer_tokens: int = 0
    system_tokens: int = 0
    conversation_tokens: int = 0
    tool_definition_tokens: int = 0
    mcp_tools_tokens: int = 0


class ContextCategories(GoModel):
    """Capacity categories of a context window (they overlap source records)."""

    system_prompt: int = 0
    custom_instructions: int = 0
    system_tools: int = 0
    mcp_tools: int = 0
    messages: int = 0
    free_space: int = 0
    buffer: int = 0


class ContextSource(GoModel):
    """Bounded display metadata of one context source, never its content."""

    id: str
    kind: str = ""
    label: str = ""
    parent_id: OmitEmpty[str] = ""
    tokens: int = 0


class ContextAttribution(GoModel):
    """The runtime's native context total with categories and sources (not additive)."""

    model: str = ""
    model_source: str = ""
    total_tokens: int = 0
    limit: int = 0
    prompt_token_limit: int = 0
    compaction_threshold: int = 0
    buffer_tokens: int = 0
    compactions: int = 0
    categories: ContextCategories = Field(default_factory=ContextCategories)
    entries: list[ContextSource] = Field(default_factory=list)
    truncated: OmitEmpty[bool] = False


class UsageTokenDetail(GoModel):
    """A provider-labelled token row; the host never sums or reprices them."""

    type: str
    tokens: int = 0


class UsageMetricCodeChanges(GoModel):
    """Code changes a conversation made."""

    files: int = 0
    added: int = 0
    removed: int = 0


class UsageMetricModel(GoModel):
    """Usage through one model."""

    model: str
    requests: int = 0
    premium_request_cost: float = 0.0
    ai_units: OmitNil[float | None] = None
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: OmitNil[int | None] = None
    cache_expires_at: OmitNil[GoTime] = None
    token_details: list[UsageTokenDetail] = Field(default_factory=list)


class UsageMetricAgent(GoModel):
    """Usage by one agent."""

    id: str
    name: OmitEmpty[str] = ""
    display_name: OmitEmpty[str] = ""
    api_duration_ms: int = 0
    ai_units: float = 0.0
    models: list[UsageMetricModel] = Field(default_factory=list)


class TaskUsageMetrics(GoModel):
    """A transient native usage snapshot; models and agents overlap, never add them up."""

    started_at: GoTime = None
    current_model: OmitEmpty[str] = ""
    user_requests: int = 0
    premium_request_cost: float = 0.0
    api_duration_ms: int = 0
    ai_units: OmitNil[float | None] = None
    last_input: int = 0
    last_output: int = 0
    code_changes: UsageMetricCodeChanges = Field(default_factory=UsageMetricCodeChanges)
    token_details: list[UsageTokenDetail] = Field(default_factory=list)
    models: list[UsageMetricModel] = Field(default_factory=list)
    agents: list[UsageMetricAgent] = Field(default_factory=list)
    truncated: OmitEmpty[bool] = False
