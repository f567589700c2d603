"""The AHP 1.0.0 actions (also 0.9's, minus the 1.0-only types) and who may dispatch them.

0.9.0 and 1.0.0 share one wire contract, 1.0 being additive (ahp-versions.md §0.2): a 0.9 peer
knows every 1.0 action type except :data:`ONLY_1_0`. That list is kept by hand from the 1.0.0
changelog, because the registry's ``ACTION_INTRODUCED_IN`` dates the 1.0 chat and session
additions ``0.9.0`` (ahp-versions.md §1.4).
"""

from __future__ import annotations

from typing import Final

from ahp_bridge.protocol import _generated_v1 as _g1
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
        "chat/isReadChanged",
        "chat/isArchivedChanged",
        "chat/changesetsChanged",
        "chat/backgroundWorkSet",
        "chat/backgroundWorkRemoved",
        "chat/movableChanged",
        "chat/canvasesChanged",
        "canvas/stateChanged",
        "session/chatsReordered",
        "session/mcpServerBackgroundRequested",
    }
)

#: Features this host does not offer: no capability is advertised and nothing is created.
AUTOMATION_TYPES: Final[frozenset[str]] = frozenset(
    {
        "automation/createRequested",
        "automation/removed",
        "automation/set",
        "automation/updateRequested",
        "automationRun/cancelRequested",
        "automationRun/lifecycleChanged",
        "automationRun/primarySessionChanged",
        "automationRun/sessionRemoved",
        "automationRun/sessionSet",
    }
)
CANVAS_TYPES: Final[frozenset[str]] = frozenset({"chat/canvasesChanged", "canvas/stateChanged"})

#: The 1.0.0 ``IS_CLIENT_DISPATCHABLE`` table (types/action-origin.generated.ts at spec/v1.0.0,
#: listed in ahp-versions-diff.md). Everything else is host-only.
CLIENT_DISPATCHABLE_1_0: Final[frozenset[str]] = frozenset(
    {
        "annotations/entryRemoved",
        "annotations/entrySet",
        "annotations/removed",
        "annotations/set",
        "annotations/updated",
        "automation/createRequested",
        "automation/removed",
        "automation/updateRequested",
        "automationRun/cancelRequested",
        "changeset/filesReviewChanged",
        "chat/draftChanged",
        "chat/inputAnswerChanged",
        "chat/inputCompleted",
        "chat/isArchivedChanged",
        "chat/isReadChanged",
        "chat/pendingMessageRemoved",
        "chat/pendingMessageSet",
        "chat/queuedMessagesReordered",
        "chat/toolCallComplete",
        "chat/toolCallConfirmed",
        "chat/toolCallContentChanged",
        "chat/toolCallResultConfirmed",
        "chat/truncated",
        "chat/turnCancelled",
        "chat/turnResume",
        "chat/turnStarted",
        "chat/workingDirectoryRemoved",
        "chat/workingDirectorySet",
        "root/configChanged",
        "session/activeClientRemoved",
        "session/activeClientSet",
        "session/configChanged",
        "session/customizationToggled",
        "session/isArchivedChanged",
        "session/isReadChanged",
        "session/mcpServerBackgroundRequested",
        "session/mcpServerStartRequested",
        "session/mcpServerStopRequested",
        "session/titleChanged",
        "session/workingDirectoryRemoved",
        "session/workingDirectoryReplaced",
        "session/workingDirectorySet",
        "terminal/claimed",
        "terminal/cleared",
        "terminal/input",
        "terminal/resized",
        "terminal/titleChanged",
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
