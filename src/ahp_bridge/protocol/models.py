"""The AHP 0.7.0 wire models: everything generated, plus the hand-written fixes.

Import wire types from here, not from ``_generated``. On top of the generated classes this
module provides:

* :class:`ActionEnvelope` / :class:`ReconnectReplayResult` whose ``action`` uses the tagged
  :data:`~ahp_bridge.protocol.actions.StateAction` (fast, and relays unknown action types);
  ``origin`` is optional, as server-originated envelopes omit it on the wire.
* Tagged unions for the schema's named ``oneOf`` types that the generator inlined
  (:data:`Customization`, :data:`ResponsePart`, :data:`ChatInputQuestion`, ...), each built
  with :func:`tagged_union`. Open unions (``Customization``) keep unknown variants.
* :data:`WIRE_TYPES`: schema ``$defs`` name -> Python type, for code (and tests) that validate
  by schema name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Union

from pydantic import Discriminator, Field, Tag, TypeAdapter

from ahp_bridge.protocol import _generated as _g
from ahp_bridge.protocol._generated import *  # noqa: F403 - this module is the public face
from ahp_bridge.protocol.actions import StateAction, UnknownAction
from ahp_bridge.protocol.base import WireModel

__all__ = [  # noqa: RUF022 - grouped by meaning
    "ActionEnvelope",
    "ReconnectReplayResult",
    "ReconnectResult",
    "StateAction",
    "UnknownAction",
    "UnknownVariant",
    "tagged_union",
    "SessionStatus",
    "StringOrMarkdown",
    "ChatOrigin",
    "ChatSource",
    "ChangesetOperationTarget",
    "ChatInputQuestion",
    "ChatInputAnswer",
    "ChatInputAnswerValue",
    "Customization",
    "ChildCustomization",
    "CustomizationLoadState",
    "McpServerState",
    "MessageAttachment",
    "ResponsePart",
    "SessionInputRequest",
    "ToolCallContributor",
    "ToolCallConfirmationState",
    "ToolCallRiskAssessment",
    "ToolCallState",
    "ToolResultContent",
    "TerminalClaim",
    "TerminalContentPart",
    "UNION_SPECS",
    "WIRE_TYPES",
    "wire_adapter",
]


class UnknownVariant(WireModel):
    """A variant of an open union that 0.7.0 does not define; all its fields are kept."""


def _tag_getter(key: str, tags: frozenset[str], fallback: bool) -> Any:
    def get(value: Any) -> str | None:
        tag = value.get(key) if isinstance(value, Mapping) else getattr(value, key, None)
        if isinstance(tag, str | bool) and str(tag) in tags:
            return str(tag)
        return "#unknown" if fallback and isinstance(tag, str) else None

    return get


def tagged_union(key: str, members: Mapping[str, Any], *, open_union: bool = False) -> Any:
    """Build ``Annotated[Union[...], Discriminator]`` choosing ``members[value[key]]``.

    With ``open_union=True`` an unknown (string) tag validates to :class:`UnknownVariant` and
    round-trips unchanged instead of failing: the schema says such unions may grow.
    """
    choices: list[Any] = [Annotated[cls, Tag(tag)] for tag, cls in members.items()]
    if open_union:
        choices.append(Annotated[UnknownVariant, Tag("#unknown")])
    return Annotated[
        Union[tuple(choices)],  # noqa: UP007
        Discriminator(
            _tag_getter(key, frozenset(members), open_union),
            custom_error_type="invalid_union_tag",
            custom_error_message=f"`{key}` must be one of: {', '.join(members)}",
        ),
    ]


class ActionEnvelope(_g.ActionEnvelope):  # type: ignore[no-redef]
    """Envelope of every state action (``action`` notification, reconnect replay)."""

    action: StateAction  # type: ignore[assignment]
    origin: _g.ActionOrigin | None = None


class ReconnectReplayResult(_g.ReconnectReplayResult):  # type: ignore[no-redef]
    """``reconnect`` result when the host can replay the gap."""

    actions: list[ActionEnvelope]


ReconnectResult = Annotated[
    Annotated[ReconnectReplayResult, Tag("replay")]
    | Annotated[_g.ReconnectSnapshotResult, Tag("snapshot")],
    Discriminator(_tag_getter("type", frozenset({"replay", "snapshot"}), False)),
]

#: A bitset (Idle=1, Error=2, InProgress=8, InputNeeded=24, IsRead=32, IsArchived=64); flags
#: combine and unknown bits must survive, so any non-negative integer is valid.
SessionStatus = Annotated[int, Field(ge=0)]
StringOrMarkdown = str | _g.StringOrMarkdown1

#: Schema ``oneOf`` name -> (tag key, {tag value: member class}, open union?). Checked against
#: the schema by a unit test, so a spec change that adds or renames a variant fails loudly.
UNION_SPECS: Final[dict[str, tuple[str, dict[str, type[WireModel]], bool]]] = {
    "ChatOrigin": (
        "kind",
        {
            "user": _g.ChatOrigin1,
            "fork": _g.ChatOrigin2,
            "sideChat": _g.ChatOrigin3,
            "tool": _g.ChatOrigin4,
        },
        False,
    ),
    "ChatSource": ("kind", {"fork": _g.ForkChatSource, "sideChat": _g.SideChatSource}, False),
    "ChangesetOperationTarget": (
        "kind",
        {"resource": _g.ChangesetOperationTarget1, "range": _g.ChangesetOperationTarget2},
        False,
    ),
    "ChatInputQuestion": (
        "kind",
        {
            "text": _g.ChatInputTextQuestion,
            "number": _g.ChatInputNumberQuestion,
            "integer": _g.ChatInputNumberQuestion,
            "boolean": _g.ChatInputBooleanQuestion,
            "single-select": _g.ChatInputSingleSelectQuestion,
            "multi-select": _g.ChatInputMultiSelectQuestion,
        },
        False,
    ),
    "ChatInputAnswer": (
        "state",
        {
            "draft": _g.ChatInputAnswered,
            "submitted": _g.ChatInputAnswered,
            "skipped": _g.ChatInputSkipped,
        },
        False,
    ),
    "ChatInputAnswerValue": (
        "kind",
        {
            "text": _g.ChatInputTextAnswerValue,
            "number": _g.ChatInputNumberAnswerValue,
            "boolean": _g.ChatInputBooleanAnswerValue,
            "selected": _g.ChatInputSelectedAnswerValue,
            "selected-many": _g.ChatInputSelectedManyAnswerValue,
        },
        False,
    ),
    # Open: hosts may add customization types; unknown ones are relayed unchanged.
    "Customization": (
        "type",
        {
            "plugin": _g.PluginCustomization,
            "directory": _g.DirectoryCustomization,
            "mcpServer": _g.McpServerCustomization,
        },
        True,
    ),
    "ChildCustomization": (
        "type",
        {
            "agent": _g.AgentCustomization,
            "skill": _g.SkillCustomization,
            "prompt": _g.PromptCustomization,
            "rule": _g.RuleCustomization,
            "hook": _g.HookCustomization,
            "mcpServer": _g.McpServerCustomization,
        },
        True,
    ),
    "CustomizationLoadState": (
        "kind",
        {
            "loading": _g.CustomizationLoadingState,
            "loaded": _g.CustomizationLoadedState,
            "degraded": _g.CustomizationDegradedState,
            "error": _g.CustomizationErrorState,
        },
        False,
    ),
    "McpServerState": (
        "kind",
        {
            "starting": _g.McpServerStartingState,
            "ready": _g.McpServerReadyState,
            "authRequired": _g.McpServerAuthRequiredState,
            "error": _g.McpServerErrorState,
            "stopped": _g.McpServerStoppedState,
        },
        False,
    ),
    "MessageAttachment": (
        "type",
        {
            "simple": _g.SimpleMessageAttachment,
            "embeddedResource": _g.MessageEmbeddedResourceAttachment,
            "resource": _g.MessageResourceAttachment,
            "annotations": _g.MessageAnnotationsAttachment,
            "chat": _g.MessageChatAttachment,
        },
        False,
    ),
    # Open: reducers carry unknown part kinds through unchanged (reducer fixture 103).
    "ResponsePart": (
        "kind",
        {
            "markdown": _g.MarkdownResponsePart,
            "contentRef": _g.ResourceReponsePart,
            "toolCall": _g.ToolCallResponsePart,
            "reasoning": _g.ReasoningResponsePart,
            "systemNotification": _g.SystemNotificationResponsePart,
            "inputRequest": _g.InputRequestResponsePart,
        },
        True,
    ),
    "SessionInputRequest": (
        "kind",
        {
            "chatInput": _g.SessionChatInputRequest,
            "toolConfirmation": _g.SessionToolConfirmationRequest,
            "toolClientExecution": _g.SessionToolClientExecutionRequest,
            "toolAuthentication": _g.SessionToolAuthenticationRequest,
        },
        False,
    ),
    "ToolCallContributor": (
        "kind",
        {"client": _g.ToolCallClientContributor, "mcp": _g.ToolCallMcpContributor},
        False,
    ),
    "ToolCallState": (
        "status",
        {
            "streaming": _g.ToolCallStreamingState,
            "pending-confirmation": _g.ToolCallPendingConfirmationState,
            "running": _g.ToolCallRunningState,
            "auth-required": _g.ToolCallAuthRequiredState,
            "pending-result-confirmation": _g.ToolCallPendingResultConfirmationState,
            "completed": _g.ToolCallCompletedState,
            "cancelled": _g.ToolCallCancelledState,
        },
        False,
    ),
    "ToolCallConfirmationState": (
        "status",
        {
            "pending-confirmation": _g.ToolCallPendingConfirmationState,
            "pending-result-confirmation": _g.ToolCallPendingResultConfirmationState,
        },
        False,
    ),
    "ToolCallRiskAssessment": (
        "status",
        {
            "loading": _g.ToolCallRiskAssessmentLoadingState,
            "complete": _g.ToolCallRiskAssessmentCompleteState,
        },
        False,
    ),
    "ToolResultContent": (
        "type",
        {
            "text": _g.ToolResultTextContent,
            "embeddedResource": _g.ToolResultEmbeddedResourceContent,
            "resource": _g.ToolResultResourceContent,
            "fileEdit": _g.ToolResultFileEditContent,
            "terminal": _g.ToolResultTerminalContent,
            "subagent": _g.ToolResultSubagentContent,
        },
        False,
    ),
    "TerminalClaim": (
        "kind",
        {"client": _g.TerminalClientClaim, "session": _g.TerminalSessionClaim},
        False,
    ),
    "TerminalContentPart": (
        "type",
        {"unclassified": _g.TerminalUnclassifiedPart, "command": _g.TerminalCommandPart},
        False,
    ),
}

_TAGGED: Final[dict[str, Any]] = {
    name: tagged_union(key, members, open_union=is_open)
    for name, (key, members, is_open) in UNION_SPECS.items()
}
ChatOrigin = _TAGGED["ChatOrigin"]
ChatSource = _TAGGED["ChatSource"]
ChangesetOperationTarget = _TAGGED["ChangesetOperationTarget"]
ChatInputQuestion = _TAGGED["ChatInputQuestion"]
ChatInputAnswer = _TAGGED["ChatInputAnswer"]
ChatInputAnswerValue = _TAGGED["ChatInputAnswerValue"]
Customization = _TAGGED["Customization"]
ChildCustomization = _TAGGED["ChildCustomization"]
CustomizationLoadState = _TAGGED["CustomizationLoadState"]
McpServerState = _TAGGED["McpServerState"]
MessageAttachment = _TAGGED["MessageAttachment"]
ResponsePart = _TAGGED["ResponsePart"]
SessionInputRequest = _TAGGED["SessionInputRequest"]
ToolCallContributor = _TAGGED["ToolCallContributor"]
ToolCallState = _TAGGED["ToolCallState"]
ToolCallConfirmationState = _TAGGED["ToolCallConfirmationState"]
ToolCallRiskAssessment = _TAGGED["ToolCallRiskAssessment"]
ToolResultContent = _TAGGED["ToolResultContent"]
TerminalClaim = _TAGGED["TerminalClaim"]
TerminalContentPart = _TAGGED["TerminalContentPart"]

_UNIONS: Final[dict[str, Any]] = {
    "StateAction": StateAction,
    "ReconnectResult": ReconnectResult,
    "SessionStatus": SessionStatus,
    "StringOrMarkdown": StringOrMarkdown,
    **_TAGGED,
}


def _wire_types() -> dict[str, Any]:
    types: dict[str, Any] = {
        name: obj
        for name, obj in vars(_g).items()
        if isinstance(obj, type) and issubclass(obj, WireModel) and obj.__module__ == _g.__name__
    }
    types["ActionEnvelope"] = ActionEnvelope
    types["ReconnectReplayResult"] = ReconnectReplayResult
    types.update(_UNIONS)
    return types


#: Schema ``$defs`` name -> the Python type that validates it (a class or a union alias).
WIRE_TYPES: Final[dict[str, Any]] = _wire_types()
_ADAPTERS: dict[str, TypeAdapter[Any]] = {}


def wire_adapter(name: str) -> TypeAdapter[Any]:
    """Return a cached :class:`TypeAdapter` for the schema type ``name`` (KeyError if unknown)."""
    adapter = _ADAPTERS.get(name)
    if adapter is None:
        adapter = _ADAPTERS[name] = TypeAdapter(WIRE_TYPES[name])
    return adapter
