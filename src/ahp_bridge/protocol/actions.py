"""Each wire version's ``StateAction`` union, with a fast tagged discriminator, and its tables.

The generator writes ``StateAction`` as a plain (smart) union: slow, with hundreds of errors for
bad input, and unable to tell "unknown type" from "known type, wrong fields". :class:`ActionSet`
builds, per wire version, a union whose callable :class:`~pydantic.Discriminator` picks the
member by ``type``. The module-level names (``ACTION_CLASSES``, ``StateAction``,
``parse_action``, ...) are 0.7.0's; ``actions_v1`` holds 1.0.0's.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Final,
    Literal,
    TypeAlias,
    Union,
    get_args,
    get_origin,
)

from pydantic import ConfigDict, Discriminator, Tag, TypeAdapter, ValidationError

from ahp_bridge.protocol import _generated as _g
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.base import WireModel
from ahp_bridge.protocol.fieldpath import describe

__all__ = [
    "ACTIONS_07",
    "ACTION_CLASSES",
    "ACTION_TYPES",
    "CLIENT_DISPATCHABLE",
    "TOOL_CALL_CONFIRMED",
    "ActionError",
    "ActionSet",
    "StateAction",
    "UnknownAction",
    "UnknownActionType",
    "action_adapter",
    "derive_action_classes",
    "parse_action",
]

TOOL_CALL_CONFIRMED: Final = ActionType.CHAT_TOOL_CALL_CONFIRMED
_APPROVED_TAG: Final = "chat/toolCallConfirmed#approved"
_DENIED_TAG: Final = "chat/toolCallConfirmed#denied"
_UNKNOWN_TAG: Final = "#unknown"

#: Every 0.7.0 action type with a single wire model (``chat/toolCallConfirmed`` has two).
ACTION_CLASSES: Final[Mapping[str, type[WireModel]]] = {
    ActionType.ROOT_AGENTS_CHANGED: _g.RootAgentsChangedAction,
    ActionType.ROOT_ACTIVE_SESSIONS_CHANGED: _g.RootActiveSessionsChangedAction,
    ActionType.ROOT_TERMINALS_CHANGED: _g.RootTerminalsChangedAction,
    ActionType.ROOT_CONFIG_CHANGED: _g.RootConfigChangedAction,
    ActionType.SESSION_READY: _g.SessionReadyAction,
    ActionType.SESSION_CREATION_FAILED: _g.SessionCreationFailedAction,
    ActionType.SESSION_CHAT_ADDED: _g.SessionChatAddedAction,
    ActionType.SESSION_CHAT_REMOVED: _g.SessionChatRemovedAction,
    ActionType.SESSION_CHAT_UPDATED: _g.SessionChatUpdatedAction,
    ActionType.SESSION_DEFAULT_CHAT_CHANGED: _g.SessionDefaultChatChangedAction,
    ActionType.SESSION_TITLE_CHANGED: _g.SessionTitleChangedAction,
    ActionType.SESSION_SERVER_TOOLS_CHANGED: _g.SessionServerToolsChangedAction,
    ActionType.SESSION_ACTIVE_CLIENT_SET: _g.SessionActiveClientSetAction,
    ActionType.SESSION_ACTIVE_CLIENT_REMOVED: _g.SessionActiveClientRemovedAction,
    ActionType.SESSION_WORKING_DIRECTORY_SET: _g.SessionWorkingDirectorySetAction,
    ActionType.SESSION_WORKING_DIRECTORY_REMOVED: _g.SessionWorkingDirectoryRemovedAction,
    ActionType.SESSION_INPUT_NEEDED_SET: _g.SessionInputNeededSetAction,
    ActionType.SESSION_INPUT_NEEDED_REMOVED: _g.SessionInputNeededRemovedAction,
    ActionType.SESSION_CUSTOMIZATIONS_CHANGED: _g.SessionCustomizationsChangedAction,
    ActionType.SESSION_CUSTOMIZATION_TOGGLED: _g.SessionCustomizationToggledAction,
    ActionType.SESSION_CUSTOMIZATION_UPDATED: _g.SessionCustomizationUpdatedAction,
    ActionType.SESSION_CUSTOMIZATION_REMOVED: _g.SessionCustomizationRemovedAction,
    ActionType.SESSION_MCP_SERVER_STATE_CHANGED: _g.SessionMcpServerStateChangedAction,
    ActionType.SESSION_MCP_SERVER_START_REQUESTED: _g.SessionMcpServerStartRequestedAction,
    ActionType.SESSION_MCP_SERVER_STOP_REQUESTED: _g.SessionMcpServerStopRequestedAction,
    ActionType.SESSION_IS_READ_CHANGED: _g.SessionIsReadChangedAction,
    ActionType.SESSION_IS_ARCHIVED_CHANGED: _g.SessionIsArchivedChangedAction,
    ActionType.SESSION_ACTIVITY_CHANGED: _g.SessionActivityChangedAction,
    ActionType.SESSION_CHANGESETS_CHANGED: _g.SessionChangesetsChangedAction,
    ActionType.SESSION_CONFIG_CHANGED: _g.SessionConfigChangedAction,
    ActionType.SESSION_META_CHANGED: _g.SessionMetaChangedAction,
    ActionType.CHAT_TURN_STARTED: _g.ChatTurnStartedAction,
    ActionType.CHAT_DELTA: _g.ChatDeltaAction,
    ActionType.CHAT_RESPONSE_PART: _g.ChatResponsePartAction,
    ActionType.CHAT_TOOL_CALL_START: _g.ChatToolCallStartAction,
    ActionType.CHAT_TOOL_CALL_DELTA: _g.ChatToolCallDeltaAction,
    ActionType.CHAT_TOOL_CALL_READY: _g.ChatToolCallReadyAction,
    ActionType.CHAT_TOOL_CALL_COMPLETE: _g.ChatToolCallCompleteAction,
    ActionType.CHAT_TOOL_CALL_RESULT_CONFIRMED: _g.ChatToolCallResultConfirmedAction,
    ActionType.CHAT_TOOL_CALL_CONTENT_CHANGED: _g.ChatToolCallContentChangedAction,
    ActionType.CHAT_TOOL_CALL_AUTH_REQUIRED: _g.ChatToolCallAuthRequiredAction,
    ActionType.CHAT_TOOL_CALL_AUTH_RESOLVED: _g.ChatToolCallAuthResolvedAction,
    ActionType.CHAT_TURN_COMPLETE: _g.ChatTurnCompleteAction,
    ActionType.CHAT_TURN_CANCELLED: _g.ChatTurnCancelledAction,
    ActionType.CHAT_ERROR: _g.ChatErrorAction,
    ActionType.CHAT_ACTIVITY_CHANGED: _g.ChatActivityChangedAction,
    ActionType.CHAT_WORKING_DIRECTORY_SET: _g.ChatWorkingDirectorySetAction,
    ActionType.CHAT_WORKING_DIRECTORY_REMOVED: _g.ChatWorkingDirectoryRemovedAction,
    ActionType.CHAT_USAGE: _g.ChatUsageAction,
    ActionType.CHAT_REASONING: _g.ChatReasoningAction,
    ActionType.CHAT_PENDING_MESSAGE_SET: _g.ChatPendingMessageSetAction,
    ActionType.CHAT_PENDING_MESSAGE_REMOVED: _g.ChatPendingMessageRemovedAction,
    ActionType.CHAT_QUEUED_MESSAGES_REORDERED: _g.ChatQueuedMessagesReorderedAction,
    ActionType.CHAT_DRAFT_CHANGED: _g.ChatDraftChangedAction,
    ActionType.CHAT_INPUT_REQUESTED: _g.ChatInputRequestedAction,
    ActionType.CHAT_INPUT_ANSWER_CHANGED: _g.ChatInputAnswerChangedAction,
    ActionType.CHAT_INPUT_COMPLETED: _g.ChatInputCompletedAction,
    ActionType.CHAT_TRUNCATED: _g.ChatTruncatedAction,
    ActionType.CHAT_TURNS_LOADED: _g.ChatTurnsLoadedAction,
    ActionType.CHANGESET_STATUS_CHANGED: _g.ChangesetStatusChangedAction,
    ActionType.CHANGESET_FILE_SET: _g.ChangesetFileSetAction,
    ActionType.CHANGESET_FILE_REMOVED: _g.ChangesetFileRemovedAction,
    ActionType.CHANGESET_FILES_REVIEW_CHANGED: _g.ChangesetFilesReviewChangedAction,
    ActionType.CHANGESET_CONTENT_CHANGED: _g.ChangesetContentChangedAction,
    ActionType.CHANGESET_OPERATIONS_CHANGED: _g.ChangesetOperationsChangedAction,
    ActionType.CHANGESET_OPERATION_STATUS_CHANGED: _g.ChangesetOperationStatusChangedAction,
    ActionType.CHANGESET_CLEARED: _g.ChangesetClearedAction,
    ActionType.ANNOTATIONS_SET: _g.AnnotationsSetAction,
    ActionType.ANNOTATIONS_UPDATED: _g.AnnotationsUpdatedAction,
    ActionType.ANNOTATIONS_REMOVED: _g.AnnotationsRemovedAction,
    ActionType.ANNOTATIONS_ENTRY_SET: _g.AnnotationsEntrySetAction,
    ActionType.ANNOTATIONS_ENTRY_REMOVED: _g.AnnotationsEntryRemovedAction,
    ActionType.TERMINAL_DATA: _g.TerminalDataAction,
    ActionType.TERMINAL_INPUT: _g.TerminalInputAction,
    ActionType.TERMINAL_RESIZED: _g.TerminalResizedAction,
    ActionType.TERMINAL_CLAIMED: _g.TerminalClaimedAction,
    ActionType.TERMINAL_TITLE_CHANGED: _g.TerminalTitleChangedAction,
    ActionType.TERMINAL_CWD_CHANGED: _g.TerminalCwdChangedAction,
    ActionType.TERMINAL_EXITED: _g.TerminalExitedAction,
    ActionType.TERMINAL_CLEARED: _g.TerminalClearedAction,
    ActionType.TERMINAL_COMMAND_DETECTION_AVAILABLE: _g.TerminalCommandDetectionAvailableAction,
    ActionType.TERMINAL_COMMAND_EXECUTED: _g.TerminalCommandExecutedAction,
    ActionType.TERMINAL_COMMAND_FINISHED: _g.TerminalCommandFinishedAction,
    ActionType.RESOURCE_WATCH_CHANGED: _g.ResourceWatchChangedAction,
}

_CHANNEL_KIND_BY_PREFIX: Final = {
    "root": "root",
    "session": "session",
    "chat": "chat",
    "terminal": "terminal",
    "changeset": "changeset",
    "annotations": "annotations",
    "resourceWatch": "resourceWatch",
    "automation": "automation",
    "automationRun": "automationRun",
    "canvas": "canvas",
}

#: Action type -> the reducer / channel kind it belongs to.
ACTION_TYPES: Final[dict[str, str]] = {
    t: _CHANNEL_KIND_BY_PREFIX[t.split("/", 1)[0]] for t in [*ACTION_CLASSES, TOOL_CALL_CONFIRMED]
}

#: Action types a client may dispatch in 0.7.0 (everything else is host-only). Per the 0.7.0
#: actions guide and session-channel.md; ``session/defaultChatChanged`` is accepted (the older
#: generated map said host-only). ``chat/toolCallComplete`` / ``chat/toolCallContentChanged``
#: are further restricted to the owning client of a client-contributed tool (a state rule).
CLIENT_DISPATCHABLE: Final[frozenset[str]] = frozenset(
    {
        ActionType.ROOT_CONFIG_CHANGED,
        ActionType.SESSION_TITLE_CHANGED,
        ActionType.SESSION_DEFAULT_CHAT_CHANGED,
        ActionType.SESSION_ACTIVE_CLIENT_SET,
        ActionType.SESSION_ACTIVE_CLIENT_REMOVED,
        ActionType.SESSION_WORKING_DIRECTORY_SET,
        ActionType.SESSION_WORKING_DIRECTORY_REMOVED,
        ActionType.SESSION_CUSTOMIZATION_TOGGLED,
        ActionType.SESSION_MCP_SERVER_START_REQUESTED,
        ActionType.SESSION_MCP_SERVER_STOP_REQUESTED,
        ActionType.SESSION_IS_READ_CHANGED,
        ActionType.SESSION_IS_ARCHIVED_CHANGED,
        ActionType.SESSION_CONFIG_CHANGED,
        ActionType.CHAT_TURN_STARTED,
        ActionType.CHAT_TURN_CANCELLED,
        ActionType.CHAT_TRUNCATED,
        ActionType.CHAT_TOOL_CALL_CONFIRMED,
        ActionType.CHAT_TOOL_CALL_RESULT_CONFIRMED,
        ActionType.CHAT_TOOL_CALL_COMPLETE,
        ActionType.CHAT_TOOL_CALL_CONTENT_CHANGED,
        ActionType.CHAT_PENDING_MESSAGE_SET,
        ActionType.CHAT_PENDING_MESSAGE_REMOVED,
        ActionType.CHAT_QUEUED_MESSAGES_REORDERED,
        ActionType.CHAT_INPUT_ANSWER_CHANGED,
        ActionType.CHAT_INPUT_COMPLETED,
        ActionType.CHAT_DRAFT_CHANGED,
        ActionType.CHAT_WORKING_DIRECTORY_SET,
        ActionType.CHAT_WORKING_DIRECTORY_REMOVED,
        ActionType.TERMINAL_INPUT,
        ActionType.TERMINAL_RESIZED,
        ActionType.TERMINAL_CLAIMED,
        ActionType.TERMINAL_TITLE_CHANGED,
        ActionType.TERMINAL_CLEARED,
        ActionType.ANNOTATIONS_SET,
        ActionType.ANNOTATIONS_UPDATED,
        ActionType.ANNOTATIONS_REMOVED,
        ActionType.ANNOTATIONS_ENTRY_SET,
        ActionType.ANNOTATIONS_ENTRY_REMOVED,
        ActionType.CHANGESET_FILES_REVIEW_CHANGED,
    }
)


class UnknownAction(WireModel):
    """An action whose ``type`` the wire version does not define; every field is kept."""

    type: str


class ActionError(ValueError):
    """A client action that is not a valid action; ``str()`` names the offending field."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnknownActionType(ActionError):
    """The action's ``type`` is a string that the wire version does not define."""

    def __init__(self, action_type: str, version: str = "0.7.0") -> None:
        shown = action_type if len(action_type) <= 80 else action_type[:77] + "..."
        super().__init__(f"action.type: unknown action type {shown!r} in AHP {version}")
        self.action_type = action_type


def _confirmed_tag(value: Any) -> str:
    approved = (
        value.get("approved") if isinstance(value, Mapping) else getattr(value, "approved", None)
    )
    if approved is False:
        return _DENIED_TAG
    if approved is True:
        return _APPROVED_TAG
    # Malformed `approved`: report against the variant the other fields point to.
    has_reason = "reason" in value if isinstance(value, Mapping) else hasattr(value, "reason")
    return _DENIED_TAG if has_reason else _APPROVED_TAG


def derive_action_classes(module: ModuleType) -> dict[str, type[WireModel]]:
    """Action type -> generated model, read off the models' ``type: Literal[...]`` fields.

    ``chat/toolCallConfirmed`` (two models sharing one type) is left out: the union tags its
    variants by ``approved``.
    """
    found: dict[str, list[type[WireModel]]] = {}
    for obj in vars(module).values():
        if not (isinstance(obj, type) and issubclass(obj, WireModel)) or obj is WireModel:
            continue
        field = obj.model_fields.get("type")
        if field is None or get_origin(field.annotation) is not Literal:
            continue
        args = get_args(field.annotation)
        if len(args) == 1 and isinstance(args[0], str) and "/" in args[0]:
            found.setdefault(args[0], []).append(obj)
    return {kind: classes[0] for kind, classes in found.items() if kind != TOOL_CALL_CONFIRMED}


class ActionSet:
    """One wire version's actions: their models, the tagged union and client-dispatch rules.

    The union picks the member by ``type`` (and, for the two ``chat/toolCallConfirmed``
    variants, by ``approved``); unknown types validate to :class:`UnknownAction`, which keeps
    every field, so envelopes from newer peers are relayed; :meth:`parse` instead raises
    :class:`UnknownActionType` so the host can reject.
    """

    def __init__(
        self,
        version: str,
        module: ModuleType,
        classes: Mapping[str, type[WireModel]],
        dispatchable: frozenset[str],
    ) -> None:
        self.version = version
        self.classes: Mapping[str, type[WireModel]] = classes
        self.types: dict[str, str] = {
            t: _CHANNEL_KIND_BY_PREFIX[t.split("/", 1)[0]] for t in [*classes, TOOL_CALL_CONFIRMED]
        }
        self.dispatchable = dispatchable
        members: tuple[Any, ...] = (
            *(Annotated[cls, Tag(tag)] for tag, cls in classes.items()),
            Annotated[module.ChatToolCallApprovedAction, Tag(_APPROVED_TAG)],
            Annotated[module.ChatToolCallDeniedAction, Tag(_DENIED_TAG)],
            Annotated[UnknownAction, Tag(_UNKNOWN_TAG)],
        )
        known = frozenset(classes)

        def tag(value: Any) -> str | None:
            kind = value.get("type") if isinstance(value, Mapping) else getattr(value, "type", None)
            if not isinstance(kind, str):
                return None
            if kind in known:
                return kind
            if kind == TOOL_CALL_CONFIRMED:
                return _confirmed_tag(value)
            return _UNKNOWN_TAG

        union: Any = Annotated[
            Union[members],  # noqa: UP007
            Discriminator(
                tag,
                custom_error_type="invalid_action_type",
                custom_error_message="`type` must be a string naming the action",
            ),
        ]
        self.union: Any = union
        self.adapter: TypeAdapter[Any] = TypeAdapter(union, config=ConfigDict(defer_build=True))
        self._tags = frozenset({*classes, _APPROVED_TAG, _DENIED_TAG, _UNKNOWN_TAG})

    def parse(self, data: Mapping[str, Any], root: str = "action") -> WireModel:
        """Validate one bare action (no envelope) and return its wire model.

        Raises :class:`UnknownActionType` for a well-formed but unknown ``type``, and
        :class:`ActionError` (message ``"action.<path>: <reason>"``) for anything else wrong.
        """
        if not isinstance(data, Mapping):
            raise ActionError(f"{root}: must be an object")
        kind = data.get("type")
        if kind is None:
            raise ActionError(f"{root}.type: Field required")
        if not isinstance(kind, str):
            raise ActionError(f"{root}.type: must be a string")
        if kind not in self.types:
            raise UnknownActionType(kind, self.version)
        # A known type is validated by its own model: the union's discriminator is a Python
        # callable pydantic calls back for every action (the confirmations, two models behind
        # one type, still go through it).
        cls = self.classes.get(kind) if kind != TOOL_CALL_CONFIRMED else None
        try:
            model: WireModel = (
                cls.model_validate(data) if cls is not None else self.adapter.validate_python(data)
            )
        except ValidationError as exc:
            raise ActionError(describe(exc, root, data, skip=self._tags)) from None
        return model


#: AHP 0.7.0: our specification's actions.
ACTIONS_07: Final = ActionSet("0.7.0", _g, ACTION_CLASSES, CLIENT_DISPATCHABLE)

#: The tagged union of every 0.7.0 action, plus :class:`UnknownAction` for unknown types.
if TYPE_CHECKING:
    StateAction: TypeAlias = WireModel
else:
    StateAction = ACTIONS_07.union

action_adapter: Final[TypeAdapter[Any]] = ACTIONS_07.adapter


def parse_action(data: Mapping[str, Any], root: str = "action") -> WireModel:
    """Validate one bare 0.7.0 action (see :meth:`ActionSet.parse`)."""
    return ACTIONS_07.parse(data, root)
