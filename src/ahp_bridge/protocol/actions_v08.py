"""The AHP 0.8.0 actions and who may dispatch them.

The models are generated from the 0.8.0-dev snapshot with the release's shapes put in
(``scripts/gen_protocol.py``, ``_release_0_8_0``): 86 action types, 0.7.0's 85 and
``session/workingDirectoryReplaced``. Who may dispatch is 0.7.0's table (this host's, with
``session/defaultChatChanged``) plus that new type, as in 0.8.0's ``action-origin.generated.ts``
(39 upstream; ahp-0.6-0.8-diff.md §1).
"""

from __future__ import annotations

from typing import Final

from ahp_bridge.protocol import _generated_v08 as _g8
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.actions import CLIENT_DISPATCHABLE, ActionSet, derive_action_classes

__all__ = ["ACTIONS_08", "CLIENT_DISPATCHABLE_0_8"]

CLIENT_DISPATCHABLE_0_8: Final[frozenset[str]] = CLIENT_DISPATCHABLE | {
    ActionType.SESSION_WORKING_DIRECTORY_REPLACED
}

#: AHP 0.8.x (the spec/v0.8.0 release).
ACTIONS_08: Final = ActionSet(
    "0.8.0", _g8, derive_action_classes(_g8), frozenset(CLIENT_DISPATCHABLE_0_8)
)
