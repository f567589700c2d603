"""The jobs the engine hands the shell (`effects.Run`): frozen plans, never callables.

A chat's jobs run on that chat's worker, one at a time, in the order the engine hands them out:
the engine hands out the next only when the shell reported the last one done (`inputs.JobDone`),
so it alone decides what runs next (a send held back until a cancelled turn has really ended,
a reopen before a call when the client tools changed, a replacement conversation when the
provider forgot this one). Other jobs (catalog writes, reads of the provider's customizations,
changesets or commands) run wherever the shell runs them; those with a ticket report back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ahp_bridge import agentapi
from ahp_bridge.translate.commands import Call

__all__ = [
    "ArchiveTurns",
    "CallChat",
    "CloseConversation",
    "FeatureCall",
    "FollowUpFailed",
    "Job",
    "OpenConversation",
    "Opened",
    "Persist",
    "ReadTurns",
    "ReloadCustomizations",
    "RestartMcpServer",
    "SetMcpServerEnabled",
    "SetSkillDisabled",
    "ShellJob",
]


# -- calls a chat's worker makes on its conversation -----------------------------------------


@dataclass(frozen=True, slots=True)
class SetSkillDisabled:
    """`SkillGlobalSetter.set_skill_globally_disabled(name, disabled)` (the provider's own
    setting), then `CustomizationsReloader.reload_customizations` when the conversation has it."""

    name: str
    disabled: bool


@dataclass(frozen=True, slots=True)
class SetMcpServerEnabled:
    """`MCPController.set_mcp_server_enabled(name, enabled)`."""

    name: str
    enabled: bool


@dataclass(frozen=True, slots=True)
class RestartMcpServer:
    """`MCPController.restart_mcp_server(name)`."""

    name: str


@dataclass(frozen=True, slots=True)
class ReloadCustomizations:
    """Nothing on the conversation: the session's customizations (and MCP states when
    `mcp`) are read again once the calls before it are done (`shell` reads them)."""

    session: str
    mcp: bool = False


FeatureCall = SetSkillDisabled | SetMcpServerEnabled | RestartMcpServer | ReloadCustomizations


@dataclass(frozen=True, slots=True)
class CallChat:
    """One call on the chat's open conversation, and `then` right after it in the same job.

    `then` holds calls that must reach the provider before anything else it does: a denial's
    suggestion (`Steer`) goes with the denial (`Respond`), or the turn it steers may end first.
    A failure of one of them is `FollowUpFailed` (the call itself went through).
    """

    chat: str
    call: Call | FeatureCall
    then: tuple[Call, ...] = ()


class FollowUpFailed(Exception):
    """A `CallChat.then` call failed after the call itself succeeded."""

    def __init__(self, index: int, error: BaseException) -> None:
        super().__init__(str(error))
        self.index = index
        self.error = error


@dataclass(frozen=True, slots=True)
class OpenConversation:
    """Open the chat's conversation (`request.conversation_id` "" for a new one), with the sink
    and the host tool callback the shell adds; the result is the conversation's id.

    `replacing`: close the conversation the chat has first (a reopen with other tools, a
    replacement for one the provider forgot). `record`: the catalog gets the chat's conversation
    before the chat is published (a new chat), with the turns of an imported conversation.
    The result is an `Opened`.
    """

    chat: str
    request: agentapi.OpenRequest
    replacing: bool = False
    record: bool = False
    default: bool = False


@dataclass(frozen=True, slots=True)
class Opened:
    """What an `OpenConversation` gives back: the conversation's id and what it can do."""

    conversation_id: str
    #: Turns of an imported conversation, read when the chat is recorded (`record`).
    turns: list[dict[str, Any]] | None = None
    #: The conversation implements MCPController (its MCP servers can be controlled).
    mcp: bool = False


@dataclass(frozen=True, slots=True)
class CloseConversation:
    """Let the chat's conversation go (closed, never deleted); bounded by `timeouts.close`.
    `stop`: the chat is gone, its worker ends after this."""

    chat: str
    doing: str = "close"
    stop: bool = False


# -- work elsewhere --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Persist:
    """A catalog write (`host.durable.catalog.Catalog.<op>(*args, **fields)`), queued in order."""

    op: str
    args: tuple[Any, ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ShellJob:
    """A named piece of shell work about a channel (a read of the provider's customizations, a
    changeset refresh, a mention index to build, watches to release): the shell's services
    register the names they run."""

    name: str
    channel: str = ""
    data: Any = None


@dataclass(frozen=True, slots=True)
class ArchiveTurns:
    """Keep turns a chat evicted from its live state (absolute indices `start`...), in order
    with every other archive job; nothing is fed back."""

    chat: str
    start: int
    turns: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class ReadTurns:
    """Read a chat's archived turns [start, stop) back, oldest first (after every
    `ArchiveTurns` handed out before it); the result is the list of turns."""

    chat: str
    start: int
    stop: int


Job = (
    CallChat | OpenConversation | CloseConversation | Persist | ShellJob | ArchiveTurns | ReadTurns
)
