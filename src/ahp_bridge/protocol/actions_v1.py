"""The AHP 1.0.0 actions (also 0.9's, minus the 1.0-only types) and who may dispatch them.

0.9.0 and 1.0.0 share one wire contract, 1.0 being additive (ahp-versions.md §0.2): a 0.9 peer
knows every 1.0 action type except :data:`ONLY_1_0`. That list is kept by hand from the 1.0.0
changelog, because the registry's ``ACTION_INTRODUCED_IN`` dates the 1.0 chat and session
additions ``0.9.0`` (ahp-versions.md §1.4).
"""

from __future__ import annotations

from typing import Final

from ahp_bridge.protocol import _generated_v1 as _g1
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.actions import ActionSet, derive_action_classes

__all__ = [
    "ACTIONS_09",
    "ACTIONS_10",
    "AUTOMATION_TYPES",
    "CANVAS_TYPES",
    "CLIENT_DISPATCHABLE_1_0",
    "ONLY_1_0",
]

#: Action types added in 1.0.0 over 0.9.0 (AHP .NET CHANGELOG [1.0.0]; ahp-py UPSTREAM @adc4fa54).
ONLY_1_0: Final[frozenset[str]] = frozenset(
    {
        ActionType.CHAT_IS_READ_CHANGED,
        ActionType.CHAT_IS_ARCHIVED_CHANGED,
        ActionType.CHAT_CHANGESETS_CHANGED,
        ActionType.CHAT_BACKGROUND_WORK_SET,
        ActionType.CHAT_BACKGROUND_WORK_REMOVED,
        ActionType.CHAT_MOVABLE_CHANGED,
        ActionType.CHAT_CANVASES_CHANGED,
        ActionType.CANVAS_STATE_CHANGED,
        ActionType.SESSION_CHATS_REORDERED,
        ActionType.SESSION_MCP_SERVER_BACKGROUND_REQUESTED,
    }
)

#: Features this host does not offer: no capability is advertised and nothing is created.
AUTOMATION_TYPES: Final[frozenset[str]] = frozenset(
    {
        ActionType.AUTOMATION_CREATE_REQUESTED,
        ActionType.AUTOMATION_REMOVED,
        ActionType.AUTOMATION_SET,
        ActionType.AUTOMATION_UPDATE_REQUESTED,
        ActionType.AUTOMATION_RUN_CANCEL_REQUESTED,
        ActionType.AUTOMATION_RUN_LIFECYCLE_CHANGED,
        ActionType.AUTOMATION_RUN_PRIMARY_SESSION_CHANGED,
        ActionType.AUTOMATION_RUN_SESSION_REMOVED,
        ActionType.AUTOMATION_RUN_SESSION_SET,
    }
)
CANVAS_TYPES: Final[frozenset[str]] = frozenset(
    {ActionType.CHAT_CANVASES_CHANGED, ActionType.CANVAS_STATE_CHANGED}
)

#: The 1.0.0 ``IS_CLIENT_DISPATCHABLE`` table (types/action-origin.generated.ts at spec/v1.0.0,
#: listed in ahp-versions-diff.md). Everything else is host-only.
CLIENT_DISPATCHABLE_1_0: Final[frozenset[str]] = frozenset(
    {
        ActionType.ANNOTATIONS_ENTRY_REMOVED,
        ActionType.ANNOTATIONS_ENTRY_SET,
        ActionType.ANNOTATIONS_REMOVED,
        ActionType.ANNOTATIONS_SET,
        ActionType.ANNOTATIONS_UPDATED,
        ActionType.AUTOMATION_CREATE_REQUESTED,
        ActionType.AUTOMATION_REMOVED,
        ActionType.AUTOMATION_UPDATE_REQUESTED,
        ActionType.AUTOMATION_RUN_CANCEL_REQUESTED,
        ActionType.CHANGESET_FILES_REVIEW_CHANGED,
        ActionType.CHAT_DRAFT_CHANGED,
        ActionType.CHAT_INPUT_ANSWER_CHANGED,
        ActionType.CHAT_INPUT_COMPLETED,
        ActionType.CHAT_IS_ARCHIVED_CHANGED,
        ActionType.CHAT_IS_READ_CHANGED,
        ActionType.CHAT_PENDING_MESSAGE_REMOVED,
        ActionType.CHAT_PENDING_MESSAGE_SET,
        ActionType.CHAT_QUEUED_MESSAGES_REORDERED,
        ActionType.CHAT_TOOL_CALL_COMPLETE,
        ActionType.CHAT_TOOL_CALL_CONFIRMED,
        ActionType.CHAT_TOOL_CALL_CONTENT_CHANGED,
        ActionType.CHAT_TOOL_CALL_RESULT_CONFIRMED,
        ActionType.CHAT_TRUNCATED,
        ActionType.CHAT_TURN_CANCELLED,
        ActionType.CHAT_TURN_RESUME,
        ActionType.CHAT_TURN_STARTED,
        ActionType.CHAT_WORKING_DIRECTORY_REMOVED,
        ActionType.CHAT_WORKING_DIRECTORY_SET,
        ActionType.ROOT_CONFIG_CHANGED,
        ActionType.SESSION_ACTIVE_CLIENT_REMOVED,
        ActionType.SESSION_ACTIVE_CLIENT_SET,
        ActionType.SESSION_CONFIG_CHANGED,
        ActionType.SESSION_CUSTOMIZATION_TOGGLED,
        ActionType.SESSION_IS_ARCHIVED_CHANGED,
        ActionType.SESSION_IS_READ_CHANGED,
        ActionType.SESSION_MCP_SERVER_BACKGROUND_REQUESTED,
        ActionType.SESSION_MCP_SERVER_START_REQUESTED,
        ActionType.SESSION_MCP_SERVER_STOP_REQUESTED,
        ActionType.SESSION_TITLE_CHANGED,
        ActionType.SESSION_WORKING_DIRECTORY_REMOVED,
        ActionType.SESSION_WORKING_DIRECTORY_REPLACED,
        ActionType.SESSION_WORKING_DIRECTORY_SET,
        ActionType.TERMINAL_CLAIMED,
        ActionType.TERMINAL_CLEARED,
        ActionType.TERMINAL_INPUT,
        ActionType.TERMINAL_RESIZED,
        ActionType.TERMINAL_TITLE_CHANGED,
    }
)

_CLASSES_1_0: Final = derive_action_classes(_g1)

#: AHP 1.0.0 (and any 1.x peer, which speaks 1.0 to this host).
ACTIONS_10: Final = ActionSet("1.0.0", _g1, _CLASSES_1_0, CLIENT_DISPATCHABLE_1_0)

#: AHP 0.9.x: the same models without the 1.0-only types.
ACTIONS_09: Final = ActionSet(
    "0.9.0",
    _g1,
    {t: cls for t, cls in _CLASSES_1_0.items() if t not in ONLY_1_0},
    CLIENT_DISPATCHABLE_1_0 - ONLY_1_0,
)
