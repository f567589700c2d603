"""The AHP 0.8.0 actions and who may dispatch them.

The models are generated from the 0.8.0-dev snapshot with the release's shapes put in
(``scripts/gen_protocol.py``, ``_release_0_8_0``): 86 action types, 0.7.0's 85 and
``session/workingDirectoryReplaced``. Who may dispatch is 0.7.0's table (this host's, with
``session/defaultChatChanged``) plus that new type, as in 0.8.0's ``action-origin.generated.ts``
(39 upstream; ahp-0.6-0.8-diff.md §1).
"""

from __future__ import annotations

from typing import Final

from ahp_bridge.protocol.action_types import TYPES_0_7, ActionType
from ahp_bridge.protocol.actions import CLIENT_DISPATCHABLE, ActionSet, derive_action_classes

__all__ = [
    "ACTIONS_08",  # noqa: F822 - built when first asked for (`__getattr__`)
    "CLIENT_DISPATCHABLE_0_8",
    "TYPES_0_8",
]

CLIENT_DISPATCHABLE_0_8: Final[frozenset[str]] = CLIENT_DISPATCHABLE | {
    ActionType.SESSION_WORKING_DIRECTORY_REPLACED
}

#: 0.8.0's action types, as the 0.7 line's steps need them (``wire08``) without the models:
#: 0.7.0's and ``session/workingDirectoryReplaced`` (``ACTIONS_08.types``, a test checks).
TYPES_0_8: Final[frozenset[str]] = TYPES_0_7 | {ActionType.SESSION_WORKING_DIRECTORY_REPLACED}


def __getattr__(name: str) -> ActionSet:
    """``ACTIONS_08``, AHP 0.8.x's actions (the spec/v0.8.0 release), built when first asked
    for, as ``actions_v06.ACTIONS_06`` is: a 0.8 peer is rare, and its models were a sixth of
    what a bridge builds as it starts (a 0.7 peer's steps need only :data:`TYPES_0_8`)."""
    if name != "ACTIONS_08":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ahp_bridge.protocol import _generated_v08 as _g8

    actions = ActionSet(
        "0.8.0", _g8, derive_action_classes(_g8), frozenset(CLIENT_DISPATCHABLE_0_8)
    )
    globals()[name] = actions
    return actions
