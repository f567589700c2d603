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

from pydantic import Discriminator, Tag, TypeAdapter, ValidationError

from ahp_bridge.protocol import _generated as _g
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

TOOL_CALL_CONFIRMED: Final = "chat/toolCallConfirmed"
_APPROVED_TAG: Final = "chat/toolCallConfirmed#approved"
_DENIED_TAG: Final = "chat/toolCallConfirmed#denied"
_UNKNOWN_TAG: Final = "#unknown"

#: Every 0.7.0 action type with a single wire model (``chat/toolCallConfirmed`` has two).
ACTION_CLASSES: Final[Mapping[str, type[WireModel]]] = {
    "root/agentsChanged": _g.RootAgentsChangedAction,
    "root/activeSessionsChanged": _g.RootActiveSessionsChangedAction,
    "root/terminalsChanged": _g.RootTerminalsChangedAction,
    "root/configChanged": _g.RootConfigChangedAction,
    "session/ready": _g.SessionReadyAction,
    "session/creationFailed": _g.SessionCreationFailedAction,
    "session/chatAdded": _g.SessionChatAddedAction,
    "session/chatRemoved": _g.SessionChatRemovedAction,
    "session/chatUpdated": _g.SessionChatUpdatedAction,
    "session/defaultChatChanged": _g.SessionDefaultChatChangedAction,
    "session/titleChanged": _g.SessionTitleChangedAction,
    "session/serverToolsChanged": _g.SessionServerToolsChangedAction,
    "session/activeClientSet": _g.SessionActiveClientSetAction,
    "session/activeClientRemoved": _g.SessionActiveClientRemovedAction,
    "session/workingDirectorySet": _g.SessionWorkingDirectorySetAction,
    "session/workingDirectoryRemoved": _g.SessionWorkingDirectoryRemovedAction,
    "session/inputNeededSet": _g.SessionInputNeededSetAction,
    "session/inputNeededRemoved": _g.SessionInputNeededRemovedAction,
    "session/customizationsChanged": _g.SessionCustomizationsChangedAction,
    "session/customizationToggled": _g.SessionCustomizationToggledAction,
    "session/customizationUpdated": _g.SessionCustomizationUpdatedAction,
    "session/customizationRemoved": _g.SessionCustomizationRemovedAction,
    "session/mcpServerStateChanged": _g.SessionMcpServerStateChangedAction,
    "session/mcpServerStartRequested": _g.SessionMcpServerStartRequestedAction,
    "session/mcpServerStopRequested": _g.SessionMcpServerStopRequestedAction,
    "session/isReadChanged": _g.SessionIsReadChangedAction,
    "session/isArchivedChanged": _g.SessionIsArchivedChangedAction,
    "session/activityChanged": _g.SessionActivityChangedAction,
    "session/changesetsChanged": _g.SessionChangesetsChangedAction,
    "session/configChanged": _g.SessionConfigChangedAction,
    "session/metaChanged": _g.SessionMetaChangedAction,
    "chat/turnStarted": _g.ChatTurnStartedAction,
    "chat/delta": _g.ChatDeltaAction,
    "chat/responsePart": _g.ChatResponsePartAction,
    "chat/toolCallStart": _g.ChatToolCallStartAction,
    "chat/toolCallDelta": _g.ChatToolCallDeltaAction,
    "chat/toolCallReady": _g.ChatToolCallReadyAction,
    "chat/toolCallComplete": _g.ChatToolCallCompleteAction,
    "chat/toolCallResultConfirmed": _g.ChatToolCallResultConfirmedAction,
    "chat/toolCallContentChanged": _g.ChatToolCallContentChangedAction,
    "chat/toolCallAuthRequired": _g.ChatToolCallAuthRequiredAction,
    "chat/toolCallAuthResolved": _g.ChatToolCallAuthResolvedAction,
    "chat/turnComplete": _g.ChatTurnCompleteAction,
    "chat/turnCancelled": _g.ChatTurnCancelledAction,
    "chat/error": _g.ChatErrorAction,
    "chat/activityChanged": _g.ChatActivityChangedAction,
    "chat/workingDirectorySet": _g.ChatWorkingDirectorySetAction,
    "chat/workingDirectoryRemoved": _g.ChatWorkingDirectoryRemovedAction,
    "chat/usage": _g.ChatUsageAction,
    "chat/reasoning": _g.ChatReasoningAction,
    "chat/pendingMessageSet": _g.ChatPendingMessageSetAction,
    "chat/pendingMessageRemoved": _g.ChatPendingMessageRemovedAction,
    "chat/queuedMessagesReordered": _g.ChatQueuedMessagesReorderedAction,
    "chat/draftChanged": _g.ChatDraftChangedAction,
    "chat/inputRequested": _g.ChatInputRequestedAction,
    "chat/inputAnswerChanged": _g.ChatInputAnswerChangedAction,
    "chat/inputCompleted": _g.ChatInputCompletedAction,
    "chat/truncated": _g.ChatTruncatedAction,
    "chat/turnsLoaded": _g.ChatTurnsLoadedAction,
    "changeset/statusChanged": _g.ChangesetStatusChangedAction,
    "changeset/fileSet": _g.ChangesetFileSetAction,
    "changeset/fileRemoved": _g.ChangesetFileRemovedAction,
    "changeset/filesReviewChanged": _g.ChangesetFilesReviewChangedAction,
    "changeset/contentChanged": _g.ChangesetContentChangedAction,
    "changeset/operationsChanged": _g.ChangesetOperationsChangedAction,
    "changeset/operationStatusChanged": _g.ChangesetOperationStatusChangedAction,
    "changeset/cleared": _g.ChangesetClearedAction,
    "annotations/set": _g.AnnotationsSetAction,
    "annotations/updated": _g.AnnotationsUpdatedAction,
    "annotations/removed": _g.AnnotationsRemovedAction,
    "annotations/entrySet": _g.AnnotationsEntrySetAction,
    "annotations/entryRemoved": _g.AnnotationsEntryRemovedAction,
    "terminal/data": _g.TerminalDataAction,
    "terminal/input": _g.TerminalInputAction,
    "terminal/resized": _g.TerminalResizedAction,
    "terminal/claimed": _g.TerminalClaimedAction,
    "terminal/titleChanged": _g.TerminalTitleChangedAction,
    "terminal/cwdChanged": _g.TerminalCwdChangedAction,
    "terminal/exited": _g.TerminalExitedAction,
    "terminal/cleared": _g.TerminalClearedAction,
    "terminal/commandDetectionAvailable": _g.TerminalCommandDetectionAvailableAction,
    "terminal/commandExecuted": _g.TerminalCommandExecutedAction,
    "terminal/commandFinished": _g.TerminalCommandFinishedAction,
    "resourceWatch/changed": _g.ResourceWatchChangedAction,
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
        "root/configChanged",
        "session/titleChanged",
        "session/defaultChatChanged",
        "session/activeClientSet",
        "session/activeClientRemoved",
        "session/workingDirectorySet",
        "session/workingDirectoryRemoved",
        "session/customizationToggled",
        "session/mcpServerStartRequested",
        "session/mcpServerStopRequested",
        "session/isReadChanged",
        "session/isArchivedChanged",
        "session/configChanged",
        "chat/turnStarted",
        "chat/turnCancelled",
        "chat/truncated",
        "chat/toolCallConfirmed",
        "chat/toolCallResultConfirmed",
        "chat/toolCallComplete",
        "chat/toolCallContentChanged",
        "chat/pendingMessageSet",
        "chat/pendingMessageRemoved",
        "chat/queuedMessagesReordered",
        "chat/inputAnswerChanged",
        "chat/inputCompleted",
        "chat/draftChanged",
        "chat/workingDirectorySet",
        "chat/workingDirectoryRemoved",
        "terminal/input",
        "terminal/resized",
        "terminal/claimed",
        "terminal/titleChanged",
        "terminal/cleared",
        "annotations/set",
        "annotations/updated",
        "annotations/removed",
        "annotations/entrySet",
        "annotations/entryRemoved",
        "changeset/filesReviewChanged",
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
        self.adapter: TypeAdapter[Any] = TypeAdapter(union)
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
        try:
            model: WireModel = self.adapter.validate_python(data)
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
