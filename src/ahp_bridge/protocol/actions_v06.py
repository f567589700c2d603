"""The AHP 0.6.0 actions and who may dispatch them.

The models are generated from the 0.6.0 release schema with its generator's wrong text fixed
(``scripts/gen_protocol.py``, ``_schema_text_0_6``): 81 action types, 0.7.0's without the four
working-directory actions 0.7.0 added. Who may dispatch is 0.7.0's table (this host's, with
``session/defaultChatChanged``) without those four, as in 0.6.0's ``action-origin.generated.ts``
(34 upstream; ahp-0.6-0.8-diff.md §1).
"""

from __future__ import annotations

from typing import Final

from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.actions import CLIENT_DISPATCHABLE, ActionSet, derive_action_classes

__all__ = [
    "ACTIONS_06",  # noqa: F822 - built when first asked for (`__getattr__`)
    "CLIENT_DISPATCHABLE_0_6",
    "WORKING_DIRECTORY_TYPES",
]

#: The action types 0.7.0 added (multiroot); 0.8.0 added a fifth, the replacement.
WORKING_DIRECTORY_TYPES: Final[frozenset[str]] = frozenset(
    {
        ActionType.SESSION_WORKING_DIRECTORY_SET,
        ActionType.SESSION_WORKING_DIRECTORY_REMOVED,
        ActionType.SESSION_WORKING_DIRECTORY_REPLACED,
        ActionType.CHAT_WORKING_DIRECTORY_SET,
        ActionType.CHAT_WORKING_DIRECTORY_REMOVED,
    }
)

CLIENT_DISPATCHABLE_0_6: Final[frozenset[str]] = CLIENT_DISPATCHABLE - WORKING_DIRECTORY_TYPES


def __getattr__(name: str) -> ActionSet:
    """``ACTIONS_06``, AHP 0.6.x's actions (the 0.6.0 release), built when first asked for: the
    0.6.0 models are a seventh of what a bridge builds as it starts, for the rarest peers."""
    if name != "ACTIONS_06":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ahp_bridge.protocol import _generated_v06 as _g6

    actions = ActionSet("0.6.0", _g6, derive_action_classes(_g6), CLIENT_DISPATCHABLE_0_6)
    globals()[name] = actions
    return actions
