"""Pure AHP reducers over plain JSON-shaped dicts, one module per channel kind, at AHP 1.0.

Reducers never mutate their input: they copy along the changed path, share the
rest, and return the very same object when an action changes nothing. An
unknown action type is a no-op, so newer peers cannot corrupt older state.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .annotations import reduce_annotations
from .changeset import reduce_changeset
from .chat import reduce_chat
from .resource_watch import reduce_resource_watch
from .root import reduce_root
from .session import reduce_session
from .terminal import reduce_terminal

_Reducer = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]

_REDUCERS: dict[str, _Reducer] = {
    "root": reduce_root,
    "session": reduce_session,
    "chat": reduce_chat,
    "terminal": reduce_terminal,
    "changeset": reduce_changeset,
    "annotations": reduce_annotations,
    "resourceWatch": reduce_resource_watch,
}

KINDS = frozenset(_REDUCERS)


def reduce(kind: str, state: dict[str, Any], action: dict[str, Any]) -> dict[str, Any]:
    """Apply one action to the state of a channel of `kind` (AHP 1.0 semantics, no clock).

    Raises ValueError for an unknown kind or a non-dict action.
    """
    if not isinstance(action, dict):
        raise ValueError(f"action must be a JSON object, got {type(action).__name__}")
    try:
        reducer = _REDUCERS[kind]
    except KeyError:
        raise ValueError(f"unknown state kind {kind!r}; expected one of {sorted(KINDS)}") from None
    new = reducer(state, action)
    # Setting a value it already had is still "nothing changed". Shared subtrees compare
    # by identity, so this costs about the length of the changed path.
    return state if new is not state and new == state else new


__all__ = ["KINDS", "reduce"]
