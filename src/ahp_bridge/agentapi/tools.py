"""Host tools, tool hooks, and throwaway utility and title calls."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

from pydantic import Field

from ._base import Duration, GoModel, GoStruct, Internal, OmitEmpty, RawJSON
from .live import TokenUsage
from .prompts import Blob


class HostTool(GoStruct):
    """A tool the host runs in-process.

    Adapters register it as given, without a permission prompt and never deferred, and
    forward each call to the open request's call_tool; they never interpret it. Its name is
    unique among the conversation's tools: a clash with a provider or MCP tool fails the
    open. ``parameters`` is the JSON Schema object of the arguments.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)


class HostToolCall(GoStruct):
    """One call of a HostTool."""

    name: str
    call_id: str = ""
    """The provider's tool call ID (the ItemKind.TOOL item's id). A call repeated with the
    same call_id gets the first one's result without reaching call_tool again."""
    task_id: str = ""
    """The conversation's OpenRequest.session_id; empty for utility calls."""
    agent_id: str = ""
    """The subagent instance that made the call; empty for the main agent or unknown."""
    arguments: RawJSON = b""
    """The model's JSON object as received, at most MAX_HOST_TOOL_ARGUMENTS bytes."""


class HostToolResult(GoStruct):
    """What a host tool call returns."""

    text: str = ""
    """What the model sees."""
    failed: bool = False
    """A refused or failed call; text says why."""
    payload: RawJSON = b""
    """Optional JSON the host keeps for its own display; never sent to the model."""


CallTool = Callable[[HostToolCall], Awaitable[HostToolResult]]
"""Runs one host tool call. It returns promptly and stops when cancelled (the call was
cancelled or the conversation closed)."""


class ToolUse(GoStruct):
    """A provider tool call, for pre-execution or failure hooks.

    Providers normalise raw patch strings to ``args["patch"]``.
    """

    permission_kind: str = ""
    """From verified provider metadata or a permission request."""
    tool: str = ""
    args: dict[str, Any] = Field(default_factory=dict)
    workdir: str = ""
    agent_id: str = ""
    """The subagent making the call; "" for the main agent."""


class ToolVerdict(GoStruct):
    """Adds host context to a call, refuses it (``deny``), or replaces its ``args``.

    ``args`` None leaves the arguments as they are.
    """

    context: str = ""
    deny: str = ""
    args: dict[str, Any] | None = None


class ToolHooks(GoStruct):
    """Host policy hooks bound to one Task, including calls by its subagents.

    All are optional async callables and never serialised. ``failed`` also receives native
    automatic permission denials (with permission_kind) and returns the text to report.
    """

    pre: Internal[Callable[[ToolUse], Awaitable[ToolVerdict]] | None] = None
    succeeded: Internal[Callable[[ToolUse], Awaitable[None]] | None] = None
    """Observes completed calls without changing their result."""
    failed: Internal[Callable[[ToolUse, str], Awaitable[str]] | None] = None
    prompt: Internal[Callable[[], Awaitable[str]] | None] = None
    """Adds host context to a prompt as its turn starts."""


class UtilityUsage(GoStruct):
    """What one utility call's model requests reported, summed (0 when not reported)."""

    input_tokens: int = 0
    output_tokens: int = 0
    credits: float = 0.0
    tokens: list[TokenUsage] = Field(default_factory=list)
    """Each reported model call, for dated usage accounting."""


OnUsage = Callable[[UtilityUsage], None]
"""Receives a call's summed usage once before it returns; not called when none reported."""


class UtilityRequest(GoStruct):
    """One UtilityRunner call."""

    model: str = ""
    """A model ID from Provider.models."""
    workdir: str = ""
    purpose: str = ""
    """Names the job in the provider's client name and logs, such as "title"."""
    system: str = ""
    prompt: str = ""
    attachments: list[Blob] = Field(default_factory=list)
    tools: list[HostTool] = Field(default_factory=list)
    call_tool: Internal[CallTool | None] = None
    """As in OpenRequest; its calls have no task_id."""
    timeout: Duration = timedelta(0)
    """When positive, also bounds the whole call."""
    response_schema: dict[str, Any] | None = None
    """Optional JSON Schema the provider enforces; callers still validate."""
    on_usage: Internal[OnUsage | None] = None


class TitleRequest(GoStruct):
    """One Titler call."""

    model: str = ""
    """A model ID from Provider.models."""
    workdir: str = ""
    text: str = ""
    """The Task's first message, sanitized and clipped; may be empty."""
    images: list[Blob] = Field(default_factory=list)
    """The first message's images, only when the model accepts them."""
    reply: str = ""
    """The agent's reply to the first message, when the title waited for the first turn."""
    on_usage: Internal[OnUsage | None] = None


class AsideAnswer(GoModel):
    """The bounded result of one aside question."""

    text: str = ""
    truncated: OmitEmpty[bool] = False
