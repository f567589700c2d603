"""Go's sentinel errors as exception classes with stable machine-readable reasons.

Go wraps a sentinel (``fmt.Errorf("...: %w", ErrBusy)``); Python raises the class with a
specific message (``raise Busy("turn t1 is running") from exc``) and callers catch the
class. ``reason`` survives transports (gRPC status details, JSON): ``error_for_reason``
rebuilds the right class on the far side.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType


class AgentAPIError(Exception):
    """Base of every contract error. ``reason`` is stable; ``message`` is for people."""

    reason: str = "agentapi_error"
    default_message: str = "agent provider error"

    def __init__(self, message: str = "") -> None:
        self.message = message or self.default_message
        super().__init__(self.message)

    def __reduce__(self) -> tuple[object, ...]:
        return (error_for_reason, (self.reason, self.message))


class ConversationNotFound(AgentAPIError):
    """An exact conversation ID does not exist in the provider's store.

    The caller must not create a replacement.
    """

    reason = "conversation_not_found"
    default_message = "provider conversation not found"


class ItemNotFound(AgentAPIError):
    """A conversation's record has no item with the requested agent and ID."""

    reason = "item_not_found"
    default_message = "recorded item not found"


class InteractionGone(AgentAPIError):
    """The provider no longer considers an interaction pending (answered, expired, ended)."""

    reason = "interaction_gone"
    default_message = "interaction is no longer pending"


class Unsupported(AgentAPIError):
    """An operation the provider does not offer."""

    reason = "unsupported"
    default_message = "operation not supported by this provider"


class Closed(AgentAPIError):
    """Use of a Conversation after close or after its provider runtime exited."""

    reason = "closed"
    default_message = "conversation is closed"


class SubmissionUncertain(AgentAPIError):
    """A send failed after the provider may or may not have accepted the prompt.

    The caller must surface the uncertainty and must not resubmit automatically.
    """

    reason = "submission_uncertain"
    default_message = "prompt submission outcome is unknown"


class Busy(AgentAPIError):
    """The provider rejected a prompt because a turn is still running."""

    reason = "busy"
    default_message = "a turn is already running"


class ForkUncertain(AgentAPIError):
    """A native fork may exist but its identity was not confirmed; never repeat the RPC."""

    reason = "fork_uncertain"
    default_message = "conversation branch outcome is unknown"


class RewindUncertain(AgentAPIError):
    """A native rewind may have changed files or history but its result was lost.

    A caller must not repeat the RPC.
    """

    reason = "rewind_uncertain"
    default_message = "conversation rewind outcome is unknown"


class AgentUnavailable(AgentAPIError):
    """A Task's custom agent could not be selected; it is never swapped for another agent."""

    reason = "agent_unavailable"
    default_message = "custom agent is not available"


class SignedOut(AgentAPIError):
    """Raised by Provider.check when the runtime is installed but has no usable sign-in."""

    reason = "signed_out"
    default_message = "the provider is signed out"


class EnvAccount(AgentAPIError):
    """Refuses a sign-in or sign-out while a token in the service environment takes precedence."""

    reason = "env_account"
    default_message = "a token in the service environment takes precedence"


class SignInRejected(AgentAPIError):
    """The runtime refused a sign-in or sign-out, such as a token GitHub did not accept."""

    reason = "sign_in_rejected"
    default_message = "the sign-in was refused"


class BackgroundTaskNotFound(AgentAPIError):
    """No background shell task has that ID."""

    reason = "background_task_not_found"
    default_message = "background shell task not found"


class BackgroundTaskInactive(AgentAPIError):
    """The background shell task is not running."""

    reason = "background_task_inactive"
    default_message = "background shell task is not running"


class CLIIncompatible(AgentAPIError):
    """The provider SDK refused a runtime release (message says why). Nothing was installed."""

    reason = "cli_incompatible"
    default_message = "this bridge cannot drive that release"


class CLIBusy(AgentAPIError):
    """Refuses a restart while conversations are still open on the runtime. Nothing stopped."""

    reason = "cli_busy"
    default_message = "conversations are still open on the runtime"


class HostToolClash(AgentAPIError):
    """Open refused host tools whose names clash with the provider's own or an MCP server's.

    Go's contract says only that such an open fails; this is ahp-bridge's named form of that
    failure, so the host can refuse exactly those tools (with this message as the reason) and
    open again without them. ``tools`` are the clashing names.
    """

    reason = "host_tool_clash"
    default_message = "host tools clash with the provider's own tools"

    def __init__(self, message: str = "", tools: tuple[str, ...] | list[str] = ()) -> None:
        super().__init__(message)
        self.tools = tuple(tools)

    def __reduce__(self) -> tuple[object, ...]:
        return (HostToolClash, (self.message, self.tools))


ERRORS_BY_REASON: Mapping[str, type[AgentAPIError]] = MappingProxyType(
    {
        cls.reason: cls
        for cls in (
            ConversationNotFound,
            ItemNotFound,
            InteractionGone,
            Unsupported,
            Closed,
            SubmissionUncertain,
            Busy,
            ForkUncertain,
            RewindUncertain,
            AgentUnavailable,
            SignedOut,
            EnvAccount,
            SignInRejected,
            BackgroundTaskNotFound,
            BackgroundTaskInactive,
            CLIIncompatible,
            CLIBusy,
            HostToolClash,
        )
    }
)
"""Every sentinel class by its reason (Go's, and ahp-bridge's HostToolClash)."""


def error_for_reason(reason: str, message: str = "") -> AgentAPIError:
    """Rebuild the error a transport carried as (reason, message).

    An unknown reason gives a plain AgentAPIError that keeps the reason, so nothing is lost.
    """
    cls = ERRORS_BY_REASON.get(reason)
    if cls is not None:
        return cls(message)
    err = AgentAPIError(message)
    err.reason = reason or AgentAPIError.reason
    return err
