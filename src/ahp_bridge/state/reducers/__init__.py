"""Pure AHP reducers over plain JSON-shaped dicts, one module per channel kind.

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

_Plain = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any]]

_PLAIN: dict[str, _Plain] = {
    "root": reduce_root,
    "session": reduce_session,
    "terminal": reduce_terminal,
    "changeset": reduce_changeset,
    "annotations": reduce_annotations,
    "resourceWatch": reduce_resource_watch,
}

KINDS = frozenset({*_PLAIN, "chat"})


def reduce(kind: str, state: dict[str, Any], action: dict[str, Any], *, now: str) -> dict[str, Any]:
    """Apply one action to the state of a channel of `kind`.

    `now` (ISO-8601) is the only clock input; the chat reducer stamps it into
    `modifiedAt`. Raises ValueError for an unknown kind or a non-dict action.
    """
    if not isinstance(action, dict):
        raise ValueError(f"action must be a JSON object, got {type(action).__name__}")
    if kind == "chat":
        new = reduce_chat(state, action, now=now)
    else:
        try:
            reducer = _PLAIN[kind]
        except KeyError:
            raise ValueError(
                f"unknown state kind {kind!r}; expected one of {sorted(KINDS)}"
            ) from None
        new = reducer(state, action)
    # Setting a value it already had is still "nothing changed". Shared subtrees compare
    # by identity, so this costs about the length of the changed path.
    return state if new is not state and new == state else new


__all__ = ["KINDS", "reduce"]
