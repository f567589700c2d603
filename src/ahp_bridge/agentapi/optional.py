"""Optional capabilities: each a runtime-checkable Protocol an adapter may also implement.

Check with ``isinstance(provider, HistoryReader)`` (or on a conversation), and only use one
that Capabilities advertises. Go's ``ctx`` is trio cancellation: cancelling a call cancels
only the wait, never a turn, and does not prove the provider stopped its work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from .account import Account, CLIRelease, DeviceCode, Quota
from .customizations import ConfigurationCatalog
from .history import (
    ForkBoundary,
    ForkBoundaryRequest,
    ForkRequest,
    History,
    HistoryWindow,
    ItemDiff,
    ItemDiffRequest,
    NativeTurnChanges,
    PlanDraft,
    PreviousConversation,
    ReadRequest,
    RewindPreview,
    RewindResult,
    SubagentRequest,
    SubagentWindow,
    WindowRequest,
)
from .items import PlanReview
from .live import BackgroundTasks, MCPStatusSnapshot
from .mcp import MCPCallbackSignIn, MCPServer, MCPServerConfig, MCPStatus, MCPTool
from .metrics import ContextAttribution, ContextInfo, TaskUsageMetrics
from .models import CustomModel
from .prompts import CommandResult, Prompt
from .tools import AsideAnswer, TitleRequest, UtilityRequest

# --- Provider-level capabilities -------------------------------------------------------


@runtime_checkable
class HistoryReader(Protocol):
    """Reads a conversation's record without opening it: nothing sent, nothing changed.

    No other client is shut out. ConversationNotFound means the exact ID has no record.
    """

    async def read_history(self, req: ReadRequest) -> History: ...


@runtime_checkable
class HistoryPager(Protocol):
    """A HistoryReader that reads one agent's record a window at a time.

    Sends and changes nothing and also reads an open conversation's record.
    ConversationNotFound: the record is gone; ItemNotFound: no item req.item_id of
    req.agent_id.
    """

    async def read_history_window(self, req: WindowRequest) -> HistoryWindow: ...


@runtime_checkable
class SubagentPager(Protocol):
    """A HistoryReader that reads recorded subagents a window at a time.

    ConversationNotFound: the record is gone; ItemNotFound: no subagent req.agent_id.
    """

    async def read_subagents(self, req: SubagentRequest) -> SubagentWindow: ...


@runtime_checkable
class ItemDiffReader(Protocol):
    """Reads one immutable committed edit from the recorded native event.

    Sends nothing, resumes no conversation, never reads the current file.
    """

    async def read_item_diff(self, req: ItemDiffRequest) -> ItemDiff: ...


@runtime_checkable
class PlanHistoryReader(Protocol):
    """Reads a native reviewed plan snapshot without opening or resuming the conversation.

    ``request_id`` is an exact native boundary.
    """

    async def read_plan_review(self, req: ReadRequest, request_id: str) -> PlanReview: ...


@runtime_checkable
class Importer(Protocol):
    """Lists recorded conversations and which are held open elsewhere (Capabilities.import_)."""

    async def previous(self, workdir: str) -> list[PreviousConversation]:
        """Conversations recorded with exactly workdir; "" lists all local ones."""
        ...

    async def in_use(self, ids: list[str]) -> list[str]:
        """The IDs among ids another process holds open (a snapshot; never our runtime)."""
        ...


@runtime_checkable
class Titler(Protocol):
    """Titles a Task's first message (Capabilities.titles)."""

    async def title(self, req: TitleRequest) -> str:
        """The model's reply as it came (the caller cleans it).

        Runs in a throwaway conversation without tools, deleted whatever the outcome.
        """
        ...


@runtime_checkable
class UtilityRunner(Protocol):
    """Runs one throwaway model call with only host tools (Capabilities.host_tools).

    The whole system message is req.system, the only tools req.tools: no provider tools, no
    discovered configuration, no session store, every permission request rejected. Returns
    the final reply as it came and deletes the conversation whatever the outcome.
    """

    async def run_utility(self, req: UtilityRequest) -> str: ...


@runtime_checkable
class Forker(Protocol):
    """Forks a recorded owner-turn prefix (Capabilities.fork).

    Boundary reads use only the record, never opening the source. fork revalidates the
    exact boundary and never retries an uncertain RPC: any error after a possible native
    side effect is ForkUncertain; other errors guarantee no fork exists.
    """

    async def read_fork_boundary(self, req: ForkBoundaryRequest) -> ForkBoundary: ...

    async def fork(self, req: ForkRequest) -> str:
        """The new conversation's ID."""
        ...


@runtime_checkable
class QuotaReporter(Protocol):
    """Reads the signed-in account's quotas, sorted by type (Capabilities.usage)."""

    async def quota(self) -> list[Quota]: ...


@runtime_checkable
class AccountManager(Protocol):
    """Manages the runtime's sign-in for all its conversations (Capabilities.account)."""

    async def account(self) -> Account: ...

    async def sign_in(self, token: str) -> Account:
        """Validate and store token; it goes to the runtime only, never logged or kept.

        EnvAccount while an environment token takes precedence; SignInRejected when refused.
        """
        ...

    async def sign_out(self) -> Account:
        """Remove the stored sign-in in effect."""
        ...


ShowDeviceCode = Callable[[DeviceCode], None]


@runtime_checkable
class DeviceSignInManager(Protocol):
    """Signs the runtime in through GitHub's device flow (Capabilities.device_sign_in)."""

    async def device_sign_in(self, show: ShowDeviceCode) -> Account:
        """Start the flow and call show with the code (again for a second approval).

        Returns once the sign-in is approved and in effect; raises when refused or expired;
        cancelling stops waiting.
        """
        ...


Quiesce = Callable[[], Awaitable[None]]


@runtime_checkable
class CLIUpdater(Protocol):
    """Updates the provider runtime, only to a release its SDK accepts (Capabilities.cli_update)."""

    async def cli_release(self) -> CLIRelease:
        """The installed and newest release."""
        ...

    async def update_cli(self, version: str) -> None:
        """Install version (a latest cli_release reported); CLIIncompatible if refused.

        A running runtime keeps serving; only new starts wait while files are replaced.
        """
        ...

    async def restart_cli(self, quiesce: Quiesce) -> None:
        """Stop a runtime whose release was replaced, so the next use starts the new one.

        quiesce is awaited first to close idle conversations; its error, or anything still
        running (CLIBusy), leaves the runtime running. Without such a runtime: no-op.
        """
        ...

    def cli_outdated(self) -> bool:
        """Whether the running runtime's release was replaced on disk since it started."""
        ...

    async def restart_runtime(self, reason: str) -> None:
        """Stop the running runtime whatever runs on it; a running turn ends cancelled with
        reason as its note. Without a running runtime: no-op."""
        ...

    def runtime_stalls(self) -> int:
        """Turns whose model requests stalled twice since the runtime started."""
        ...


@runtime_checkable
class MCPConfigurer(Protocol):
    """Edits the provider's user-wide MCP configuration, for conversations opened later."""

    async def mcp_servers(self) -> list[MCPServer]: ...

    async def add_mcp_server(self, cfg: MCPServerConfig) -> None: ...

    async def update_mcp_server(self, cfg: MCPServerConfig) -> None:
        """Replace an existing server's transport fields, keeping the rest of its entry."""
        ...

    async def remove_mcp_server(self, name: str) -> None: ...

    async def set_mcp_server_enabled(self, name: str, enabled: bool) -> None: ...


@runtime_checkable
class ConfigurationDiscoverer(Protocol):
    """Lists native skills, agents, hooks and instructions without opening a conversation.

    Hook and instruction rows never include actions or content. Empty project_paths
    selects global sources. Unsupported applies per kind.
    """

    async def discover_skills(
        self, project_paths: list[str], skill_directories: list[str]
    ) -> ConfigurationCatalog: ...

    async def discover_agents(self, project_paths: list[str]) -> ConfigurationCatalog: ...

    async def discover_hooks(self, project_paths: list[str]) -> ConfigurationCatalog: ...

    async def discover_instructions(self, project_paths: list[str]) -> ConfigurationCatalog: ...


@runtime_checkable
class SkillGlobalSetter(Protocol):
    """Adds a name to, or removes it from, the provider's global disabled-skills list.

    Applies to every skill of that name in every project. Unsupported: no such setting.
    """

    async def set_skill_globally_disabled(self, name: str, disabled: bool) -> None: ...


@runtime_checkable
class CustomModelUser(Protocol):
    """Offers the owner's custom models next to the provider's own (replaces them)."""

    def set_custom_models(self, models: list[CustomModel]) -> None: ...


@runtime_checkable
class SubagentModelUser(Protocol):
    """Limits every subagent started afterwards to these model IDs (Capabilities.subagent_models).

    The first is the fallback when the Task's own model is not among them; [] lifts the limit.
    """

    def set_subagent_models(self, models: list[str]) -> None: ...


@runtime_checkable
class GitHubMCPUser(Protocol):
    """Turns the runtime's built-in GitHub MCP server on or off (off until the first call)."""

    def set_github_mcp(self, on: bool) -> None: ...


SessionRecorder = Callable[[str, bool], Awaitable[None]]
"""Persists (session_id, active) before inference; raising prevents use of the session."""


@runtime_checkable
class UsageSessionRecorder(Protocol):
    """Lets the host persist ownership of provider sessions before inference.

    Configure it before starting or checking the provider. active=True marks ownership
    before inference; False follows a successful disconnect. A recorder error prevents use
    of the session without deleting its history.
    """

    def set_usage_session_recorder(self, recorder: SessionRecorder) -> None: ...


# --- Conversation-level capabilities ---------------------------------------------------


@runtime_checkable
class AsideAsker(Protocol):
    """Answers a transient question from an open conversation's context with its model.

    Not added to history; starts no turn or tool. Cancelling only stops waiting.
    """

    async def ask_aside(self, question: str) -> AsideAnswer | None: ...


@runtime_checkable
class AgentSelector(Protocol):
    """Selects the custom agent for the next turns (Capabilities.custom_agents).

    "" selects the default agent; never called during a turn. AgentUnavailable when the id
    cannot be selected.
    """

    async def select_agent(self, id: str) -> None: ...


@runtime_checkable
class AssistedPermissionSetter(Protocol):
    """Turns assisted permission review on (with a reviewer model) or off ("")."""

    async def set_assisted_permissions(self, approval_model: str) -> None:
        """Fails unless the runtime reports the mode applied."""
        ...

    async def assisted_permissions_on(self) -> bool:
        """Read the runtime's mode back, e.g. after a change failed or timed out."""
        ...


@runtime_checkable
class BackgroundTaskController(Protocol):
    """Stops a provider-owned shell process independently of the foreground turn.

    The returned snapshot is freshly read when known. BackgroundTaskNotFound /
    BackgroundTaskInactive when there is nothing to stop.
    """

    async def cancel_background_task(self, task_id: str) -> BackgroundTasks: ...


@runtime_checkable
class CommandExecutor(Protocol):
    """Runs commands with typed results as well as prompts.

    None means an agent prompt was submitted. Ambiguous failures raise SubmissionUncertain
    and are never retried implicitly.
    """

    async def execute_command(self, name: str, args: Prompt) -> CommandResult | None: ...


@runtime_checkable
class ContextReader(Protocol):
    """Reads an open conversation's current window; None until the runtime initialised it.

    Runs no model, changes nothing, resumes no closed conversation.
    """

    async def context_info(self) -> ContextInfo | None: ...

    async def context_attribution(self) -> ContextAttribution | None: ...


@runtime_checkable
class CustomizationsReloader(Protocol):
    """Refreshes an open conversation's discovered configuration without closing it.

    Changes apply on the next turn. Unsupported: nothing changed; other errors may follow a
    partial reload and must not be retried by closing and reopening.
    """

    async def reload_customizations(self) -> None: ...


@runtime_checkable
class HistoryRewinder(Protocol):
    """Discards an open conversation's recorded suffix natively (Capabilities.rewind).

    preview_rewind is read-only. rewind issues the native request once: any error after a
    possible side effect is RewindUncertain; other errors guarantee nothing was sent.
    """

    async def preview_rewind(self, user_item_id: str) -> RewindPreview: ...

    async def rewind(self, user_event_id: str, mode: str) -> RewindResult:
        """mode is REWIND_CONVERSATION or REWIND_CONVERSATION_AND_FILES."""
        ...


@runtime_checkable
class MCPController(Protocol):
    """A conversation's own MCP servers; changes last while it stays open."""

    async def mcp_status(self) -> list[MCPStatus]: ...

    async def set_mcp_server_enabled(self, name: str, enabled: bool) -> None: ...

    async def restart_mcp_server(self, name: str) -> None: ...

    async def mcp_sign_in(self, name: str, again: bool) -> str:
        """Start a remote server's OAuth sign-in; the URL to open, "" if a kept one sufficed.

        again discards a kept sign-in first. The provider waits on a loopback address.
        """
        ...


@runtime_checkable
class MCPStatusReader(Protocol):
    """Event-backed MCP server state and on-demand tools of an open conversation."""

    async def mcp_status_snapshot(self) -> MCPStatusSnapshot: ...

    async def mcp_tools(self, name: str) -> list[MCPTool]: ...


@runtime_checkable
class MCPCallbackController(Protocol):
    """OAuth sign-in of an MCP server with a host-delivered callback.

    The provider owns discovery, PKCE, exchange, storage and reconnect. Unsupported is
    effect-free; other errors must not start a fallback.
    """

    async def mcp_sign_in_callback(
        self, name: str, again: bool, redirect_uri: str
    ) -> MCPCallbackSignIn: ...

    async def complete_mcp_sign_in(self, authorization_id: str, callback_url: str) -> None: ...


@runtime_checkable
class PlanDraftReader(Protocol):
    """Reads the current scratch plan of an already open conversation."""

    async def read_plan_draft(self) -> PlanDraft: ...


@runtime_checkable
class TurnChangeReader(Protocol):
    """Snapshots a finalized foreground owner turn's native captured changes.

    Reads native captures, never Git or files; refuses a boundary followed by another
    ordinary owner turn. ``user_item_id`` names the owner turn.
    """

    async def turn_changes(self, user_item_id: str) -> NativeTurnChanges: ...


@runtime_checkable
class UsageMetricsReader(Protocol):
    """Reads accumulated native metrics of an open conversation (Capabilities.usage_metrics).

    Does not resume, run a model, or update the host usage ledger.
    """

    async def usage_metrics(self) -> TaskUsageMetrics | None: ...
