"""Capabilities: what an adapter really supports, so clients hide what it does not."""

from __future__ import annotations

from pydantic import Field

from ._base import GoModel, Internal, OmitEmpty


class Capabilities(GoModel):
    """What an adapter really supports; unsupported controls are hidden, never faked."""

    plan: OmitEmpty[bool] = False
    """Native plan mode and explicit review."""
    cancel: bool = False
    permissions: bool = False
    questions: bool = False
    session_diff: bool = False
    """The provider records per-conversation file changes (Conversation.diff)."""
    session_diff_needs_tracking: Internal[bool] = False
    """Default native scope limited to Tasks that opted into capture before their first turn."""
    history: bool = False
    fork: OmitEmpty[bool] = False
    """Copies a recorded owner-turn prefix without resending messages (Forker)."""
    rewind: OmitEmpty[bool] = False
    """Discards an open conversation's recorded suffix natively (HistoryRewinder)."""
    context_size: bool = False
    """Per-Task context tiers."""
    context_breakdown: OmitEmpty[bool] = False
    """An on-demand ContextReader, never a stream."""
    usage: bool = False
    """The provider implements QuotaReporter and reports AI units through USAGE events."""
    usage_metrics: OmitEmpty[bool] = False
    """An on-demand UsageMetricsReader."""
    aside: OmitEmpty[bool] = False
    """Conversations implement AsideAsker."""
    titles: bool = False
    """The provider implements Titler and conversations implement set_title."""
    import_: bool = Field(False, alias="import")
    """The provider implements Importer."""
    execution_modes: OmitEmpty[bool] = False
    host_tools: OmitEmpty[bool] = False
    """OpenRequest.tools are registered and the provider implements UtilityRunner."""
    account: OmitEmpty[bool] = False
    """The provider implements AccountManager."""
    device_sign_in: OmitEmpty[bool] = False
    """The provider implements DeviceSignInManager."""
    mcp: OmitEmpty[bool] = False
    """The provider implements MCPConfigurer and conversations implement MCPController."""
    cli_update: OmitEmpty[bool] = False
    """The provider implements CLIUpdater."""
    subagent_models: OmitEmpty[bool] = False
    """The provider implements SubagentModelUser."""
    github_mcp: OmitEmpty[bool] = False
    """The provider implements GitHubMCPUser."""
    assisted_permissions: OmitEmpty[bool] = False
    """OpenRequest.assisted_approval_model is honoured, conversations implement
    AssistedPermissionSetter, and permission requests carry Interaction.assisted."""
    assisted_unavailable: OmitEmpty[str] = ""
    """Why assisted permissions were withdrawn: the running runtime refused the mode."""
    custom_agents: OmitEmpty[bool] = False
    """The provider implements ConfigurationDiscoverer, applies OpenRequest.agent, and
    conversations implement AgentSelector."""
