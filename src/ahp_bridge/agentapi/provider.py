"""Provider and Conversation, the two Protocols every adapter implements, and OpenRequest.

Lifetime rules every implementation follows:

- A Conversation belongs to the host, never to a request or a client connection.
  Go's ``ctx`` is trio cancellation: cancelling a call (or its caller) cancels only the
  wait for that call, never a turn. Turns run in a nursery the provider owns (started by
  ``async with provider:``) and keep running after the call that started them returns.
- Events go to the EventSink given in OpenRequest.events until ``close`` returns.
  ``emit`` never blocks, so adapters may call it from their own threads.
- Adapters never replay a prompt, never pick "the latest" conversation, and never answer
  a pending interaction on the user's behalf. Only the host may, for permission requests
  of a Task in yolo mode (Answer.auto).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from pydantic import Field

from ._base import GoStruct, Internal
from .capabilities import Capabilities
from .events import EventSink
from .history import FileDiff, History
from .interactions import Answer
from .models import Model
from .prompts import Command, Prompt
from .tools import CallTool, HostTool, ToolHooks

ValidateFile = Callable[[str], Awaitable[str]]
"""Checks a file declaration candidate without granting access or reading bytes and
returns its normalised absolute display path; raises ValueError when it is refused."""


class OpenRequest(GoStruct):
    """Identifies the managed session and its project for Provider.open.

    JSON keys are Go field names; events, validate_file, hooks and call_tool are never
    serialised.
    """

    session_id: str = ""
    """The host's managed-session ID (a UUID)."""
    conversation_id: str = ""
    """The exact provider conversation ID, or "" to create one."""
    workdir: str = ""
    """The absolute, canonical project directory."""
    title: str = ""
    """The user-visible session name."""
    model: str = ""
    """The model for a new conversation; "" is the provider default. Reopening does not
    switch to it (the caller uses set_model), but selecting ``agent`` keeps model, effort
    and context_size when the agent would apply its own model."""
    effort: str = ""
    context_size: str = ""
    agent: str = ""
    """The custom agent selected on create and on every reopen, before anything is sent;
    "" keeps the default. One that cannot be selected fails the open (AgentUnavailable)."""
    events: Internal[EventSink | None] = None
    """Receives every event for this conversation until close returns."""
    validate_file: Internal[ValidateFile | None] = None
    hooks: Internal[ToolHooks] = Field(default_factory=ToolHooks)
    """Host policy for this Task, including calls by its subagents."""
    tools: list[HostTool] = Field(default_factory=list)
    """Host tools, registered beside the adapter's own when Capabilities.host_tools."""
    call_tool: Internal[CallTool | None] = None
    """Runs each host tool call, bound to this Task by the host."""
    skill_directories: list[str] = Field(default_factory=list)
    """Directories of the host's own skills (<name>/SKILL.md), loaded beside discovered ones."""
    compaction_threshold: float = 0.0
    """Share of the context window (0 to 1) at which compaction starts; 0 keeps the default.
    Applies on create and every reopen."""
    assisted_approval_model: str = ""
    """When set, turns on assisted permission review with this reviewer model on create and
    every reopen; the open fails when the runtime does not apply it."""


@runtime_checkable
class Conversation(Protocol):
    """One open provider conversation, owned by the host.

    Cancelling any call cancels only the wait for it; the turn goes on and reports through
    events. Methods raise the agentapi errors named in their docstrings.
    """

    def id(self) -> str:
        """The exact provider conversation ID to persist."""
        ...

    async def history(self) -> History:
        """The provider-recorded transcript and subagents of a reopened conversation."""
        ...

    async def send(self, prompt: Prompt) -> None:
        """Submit one user prompt that starts a turn; return once accepted or rejected.

        The turn continues asynchronously and reports through events. Ambiguous failures
        raise SubmissionUncertain. A prompt sent during a turn runs after it or raises Busy;
        it is never folded into the running turn.
        """
        ...

    async def commands(self) -> list[Command]:
        """The slash commands that become a prompt: skills and prompt commands only."""
        ...

    async def run_command(self, name: str, args: Prompt) -> None:
        """Run one command from commands() with args.text as its arguments.

        Starts a turn like send, with send's outcomes; the user item shows "/name args". A
        result that would not start a prompt turn is a rejection. Unsupported: no commands.
        """
        ...

    async def steer(self, prompt: Prompt) -> None:
        """Add prompt to the running turn before the provider's next model call.

        Only called while a turn runs; never starts one. An accepted steer cannot be
        withdrawn: its user item carries DELIVERY_STEER when used, and a notice item says so
        when the turn ended without using it. Ambiguous failures raise SubmissionUncertain
        and are never resent. Unsupported: the provider cannot steer.
        """
        ...

    async def cancel(self) -> None:
        """Abort the current turn; the conversation stays open."""
        ...

    async def cancel_subagent(self, agent_id: str) -> None:
        """Stop only that agent instance; its final status arrives as a SUBAGENT event."""
        ...

    async def prompt_subagent(self, agent_id: str, text: str) -> None:
        """Send text to an idle subagent (not a turn; the main agent does not see it).

        An accepted prompt moves it back to RUNNING through a SUBAGENT event. Ambiguous
        failures raise SubmissionUncertain and are never resent. Unsupported: no chat.
        """
        ...

    async def respond(self, interaction_id: str, answer: Answer) -> None:
        """Answer a pending interaction; InteractionGone when it is no longer pending."""
        ...

    async def diff(self) -> list[FileDiff]:
        """Provider-recorded file changes; Unsupported when capabilities.session_diff is off."""
        ...

    async def set_model(self, model: str, effort: str, context_size: str) -> None:
        """Apply the complete selection from the next turn on.

        Empty effort means default; context_size is "" or a catalog tier ID. The caller
        validates the selection and never switches during a turn.
        """
        ...

    async def set_title(self, title: str) -> None:
        """Name the conversation in the provider's own store (Unsupported if it cannot)."""
        ...

    async def close(self) -> None:
        """Disconnect without deleting; pending interactions end without a fabricated answer."""
        ...


@runtime_checkable
class Provider(Protocol):
    """Creates and reopens conversations for one provider runtime.

    A provider is an async context manager: ``async with provider:`` starts what it needs,
    including its own trio nursery where turns run (so cancelling a caller never cancels a
    turn), and leaving it shuts down. ``open`` is valid only inside. Optional capabilities
    are separate Protocols (see ``optional``), advertised through capabilities().
    """

    def name(self) -> str:
        """The provider identifier used in persisted records (e.g. PROVIDER_COPILOT)."""
        ...

    def display_name(self) -> str:
        """A human label, e.g. "GitHub Copilot"."""
        ...

    def capabilities(self) -> Capabilities:
        """What this adapter really supports."""
        ...

    async def check(self) -> None:
        """Raise when the runtime is missing or incompatible (SignedOut when signed out).

        Starts no conversation; the error text is shown to the user.
        """
        ...

    async def models(self) -> list[Model]:
        """The models the signed-in account can select.

        An empty list or Unsupported means only the provider default is offered; a provider
        that lists models supports Conversation.set_model.
        """
        ...

    async def open(self, req: OpenRequest) -> Conversation:
        """Create a conversation (empty conversation_id) or reopen exactly that one.

        ConversationNotFound when it no longer exists. Cancelling bounds the open only.
        """
        ...

    async def shutdown(self) -> None:
        """Close every conversation and stop runtimes this provider started (only those)."""
        ...

    async def __aenter__(self) -> Self:
        """Start the provider (its nursery, runtimes it needs)."""
        ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        """Shut the provider down."""
        ...
