"""The 0.7.0 wire as a pure function of the canonical (1.0) state, and 0.7.0 input lifted to it.

The host keeps one state with 1.0 semantics. A 0.7 peer must receive exactly the 0.7.0 wire it
always did, and reduce it with 0.7.0 reducers to the same state as the host's 0.7 snapshot. So
everything that leaves the host for a 0.7 peer goes through :func:`down_actions` (envelopes and
replays) or :func:`down_state` (snapshots), and everything a 0.7 peer sends goes through
:func:`up_action` first. :func:`up_state` exists for the 0.7 reducer path (``reduce_older``),
which runs the 0.7.0 fixtures through the canonical reducers.

0.7 is one step of the chain canonical -> 0.9 (``wire09``) -> 0.8 (``wire08``) -> 0.7 -> 0.6
(``wire06``): the ``step_*`` functions take the 0.8 form and undo what 0.8.0 changed
(ahp-versions.md §1.2, ahp-0.6-0.8-diff.md §4); ``down_*`` run the whole chain; ``lift_*`` take
one 0.7.0 input to 0.8, ``up_*`` all the way to the canonical form. What differs from 1.0, and
how it is mapped (this step's rows first; the others are the 0.8 and 0.9 steps'):

=============================  =================================================================
1.0 (canonical)                0.7.0
=============================  =================================================================
``session/customizationToggled``  ``{id, enabled}`` from the first enablement decision (0.7's
                               ``{id, enabled}`` is lifted as the session-scope decision)
``enablement`` on plugins/MCP  ``enabled`` (also on an active client's plugins, both ways)
``session/workingDirectoryReplaced``  remove + set that rebuild the exact new list
``toolClientExecution`` input  counts for InputNeeded (0.7 rule): :func:`session_status`, whose
                               result ``lens.Wire07`` keeps per session, fed by the envelopes
``auth/required``              not sent (our 0.7.0 defines no such notification)
-- the 0.8 step (``wire08``) --
``chat/error{part}``           ``chat/error{error: part.error}``
turn error part                ``Turn.error`` (error parts are never in 0.7 response parts)
``chat/turnResume``            ``chat/truncated`` to the turn before, then ``chat/turnStarted``
                               and the reopened turn's parts (``chat/responsePart``, ``chat/usage``)
``chat/turnStarted`` no-op     dropped (1.0 ignores a known turn id; 0.7 would restart the turn)
lifecycle ``failed``           ``creationFailed``
chat ``modifiedAt`` (derived)  the host's time of the chat's last activity (0.7.0's reducer reads
                               a clock), which ``lens.Wire08`` keeps per chat, fed by the envelopes
terminal ``lifecycle``         ``exitCode``; a session claim's ``chat`` is dropped
annotation ``origin``          ``turnId``
changeset ``recomputing``      ``computing``
summary ``chats``, ``origin``  stripped, with ``defaultChat``, a chat's ``changes``, ``movable``
``_meta`` on results           dropped (``InitializeResult._meta``)
-- the 0.9 step (``wire09``) --
``session/chatsReordered``     ``session/chatRemoved`` + ``session/chatAdded`` in the new order
1.0-only actions               dropped, and the state fields only they maintain are stripped:
                               chat read/archived bits, ``backgroundWork``, ``changesets``,
                               ``movable``, ``canvases``, MCP ``blocking``
=============================  =================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ahp_bridge.protocol import wire08
from ahp_bridge.protocol.wire08 import CLOCK_STAMPED, down_summary, down_turn

__all__ = [
    "CLOCK_STAMPED",
    "NEEDS_POST_STATE",
    "PASSED",
    "STEPPED",
    "down_actions",
    "down_state",
    "down_summary",
    "down_turn",
    "lift_action",
    "lift_params",
    "lift_state",
    "session_status",
    "step_actions",
    "step_state",
    "up_action",
    "up_params",
    "up_state",
]

JSON = dict[str, Any]

#: Canonical actions whose older-wire form is computed from the state they produced.
NEEDS_POST_STATE: Final[frozenset[str]] = wire08.NEEDS_POST_STATE | {
    "session/workingDirectoryReplaced"
}

#: The action types :func:`step_actions` may change; it passes every other one as it is.
STEPPED: Final[frozenset[str]] = frozenset(
    {
        "session/workingDirectoryReplaced",
        "session/customizationToggled",
        "session/customizationsChanged",
        "session/customizationUpdated",
        "session/activeClientSet",
    }
)
#: The action types the step passes as they are: ``lens`` skips it for them.
PASSED: Final[frozenset[str]] = frozenset(wire08.PASSED | wire08.STEPPED) - STEPPED

_ACTIVITY = (1 << 5) - 1
_INPUT_NEEDED = 24
_IN_PROGRESS = 8


# ── states ────────────────────────────────────────────────────────────────────────────────────


def down_state(kind: str, state: JSON, *, session_status: int | None = None) -> JSON:
    """The 0.7.0 form of a canonical state of a channel of ``kind``.

    ``session_status`` is the 0.7 view of a session's status (see :func:`session_status`).
    """
    return step_state(kind, wire08.down_state(kind, state), session_status=session_status)


def step_state(kind: str, state: JSON, *, session_status: int | None = None) -> JSON:
    """The 0.7.0 form of a 0.8 state."""
    if kind != "session":
        return state
    out = dict(state)
    if session_status is not None:
        out["status"] = session_status
    customizations = state.get("customizations")
    if isinstance(customizations, list):
        out["customizations"] = [_customization(c) for c in customizations]
    clients = state.get("activeClients")
    if isinstance(clients, list):
        out["activeClients"] = [_active_client(c, _customization) for c in clients]
    return out


def _active_client(client: Any, plugin: Callable[[Any], Any]) -> Any:
    items = client.get("customizations") if isinstance(client, dict) else None
    if not isinstance(items, list):
        return client
    return {**client, "customizations": [plugin(c) for c in items]}


def _plugin_up(item: Any) -> Any:
    """A 0.7 client plugin's ``enabled`` as the 1.0 decision list (global scope)."""
    if not isinstance(item, dict) or "enabled" not in item:
        return item
    out = {k: v for k, v in item.items() if k != "enabled"}
    out["enablement"] = [{"kind": "global", "enabled": bool(item["enabled"])}]
    return out


def _customization(item: Any) -> Any:
    """``enablement`` decisions become 0.7.0's ``enabled``."""
    if not isinstance(item, dict):
        return item
    out = dict(item)
    if "enablement" in out or (
        item.get("type") in ("plugin", "mcpServer", "directory") and "enabled" not in out
    ):
        out["enabled"] = _enabled(out.pop("enablement", None))
    out.pop("childEnablement", None)
    children = item.get("children")
    if isinstance(children, list):
        out["children"] = [_customization(c) for c in children]
    return out


def _enabled(enablement: Any) -> bool:
    """The 0.7 flag for a decision list: the first decision, enabled when there is none."""
    if isinstance(enablement, list) and enablement and isinstance(enablement[0], dict):
        enabled = enablement[0].get("enabled")
        return enabled if isinstance(enabled, bool) else True
    return True


def session_status(previous: int, action: Mapping[str, Any], state: JSON) -> int:
    """The 0.7 view of a session's status after ``action`` produced the canonical ``state``.

    0.7.0 counts every input-needed entry (0.8 and 1.0 skip ``toolClientExecution``) and
    otherwise only the flags move, so the 0.7 activity is carried from ``previous`` and
    recomputed on the input queue's actions with the 0.7 rule.
    """
    status = state.get("status")
    flags = status & ~_ACTIVITY if isinstance(status, int) else 0
    activity = previous & _ACTIVITY
    if action.get("type") in ("session/inputNeededSet", "session/inputNeededRemoved"):
        queue = state.get("inputNeeded") or []
        if queue:
            activity = _INPUT_NEEDED
        else:
            activity &= ~(_INPUT_NEEDED & ~_IN_PROGRESS)
    return flags | activity


# ── actions: canonical -> 0.7 ─────────────────────────────────────────────────────────────────


def down_actions(
    kind: str, action: JSON, *, changed: bool = True, post: JSON | None = None
) -> list[JSON]:
    """The 0.7.0 actions a 0.7 peer receives for one canonical action: none, one or several.

    ``changed`` says whether the canonical reducer changed the state; ``post`` is the state
    after it (needed by the expansions, whose exact 0.7 form depends on the result).
    """
    sent = wire08.down_actions(kind, action, changed=changed, post=post)
    return wire08.chain(sent, lambda a: step_actions(a, changed=changed, post=post))


def step_actions(action: JSON, *, changed: bool = True, post: JSON | None = None) -> list[JSON]:
    """The 0.7.0 actions for one 0.8 action (``changed``, ``post``: of its canonical envelope)."""
    match action.get("type"):
        case "session/workingDirectoryReplaced":
            return _directories_rebuilt(action, post) if changed and post is not None else []
        case "session/customizationToggled":
            return [_toggled(action)]
        case "session/customizationsChanged":
            items = action.get("customizations")
            if isinstance(items, list):
                return [{**action, "customizations": [_customization(c) for c in items]}]
            return [action]
        case "session/customizationUpdated":
            return [{**action, "customization": _customization(action.get("customization"))}]
        case "session/activeClientSet":
            client = _active_client(action.get("activeClient"), _customization)
            return [{**action, "activeClient": client}]
        case _:
            return [action]


def _directories_rebuilt(action: JSON, post: JSON) -> list[JSON]:
    """Remove the target and every directory of the new list, then add the new list in order.

    Only the target can be in the old list without being in the new one, so this empties it
    whatever the 0.7 peer held, and the sets rebuild the exact new order.
    """
    new = [d for d in post.get("workingDirectories") or [] if isinstance(d, str)]
    removed = [action.get("directory"), *[d for d in new if d != action.get("directory")]]
    out: list[JSON] = [{"type": "session/workingDirectoryRemoved", "directory": d} for d in removed]
    out.extend({"type": "session/workingDirectorySet", "directory": d} for d in new)
    return out


def _toggled(action: JSON) -> JSON:
    out = {k: v for k, v in action.items() if k != "enablement"}
    out["enabled"] = _enabled(action.get("enablement"))
    return out


# ── input: 0.7 -> canonical ───────────────────────────────────────────────────────────────────


def up_action(kind: str, action: JSON, *, channel: str = "") -> JSON:
    """The canonical form of an action a 0.7 peer sent (already valid 0.7.0).

    ``channel`` is where it was dispatched (an annotation's origin names its session).
    """
    return wire08.up_action(kind, lift_action(kind, action), channel=channel)


def lift_action(kind: str, action: JSON) -> JSON:
    """The 0.8 form of a 0.7.0 action."""
    match action.get("type"):
        case "session/customizationToggled":
            out = {k: v for k, v in action.items() if k != "enabled"}
            out["enablement"] = [{"kind": "session", "enabled": bool(action.get("enabled"))}]
            return out
        case "session/activeClientSet":
            client = _active_client(action.get("activeClient"), _plugin_up)
            return {**action, "activeClient": client}
        case _:
            return action


def up_params(method: str, params: JSON) -> JSON:
    """The canonical form of a 0.7 peer's (already valid) request params."""
    return wire08.up_params(method, lift_params(method, params))


def lift_params(method: str, params: JSON) -> JSON:
    if method == "createSession" and isinstance(params.get("activeClient"), dict):
        return {**params, "activeClient": _active_client(params["activeClient"], _plugin_up)}
    return params


def up_state(kind: str, state: JSON, *, channel: str = "") -> JSON:
    """The canonical form of a 0.7.0 state (the inverse of :func:`down_state`)."""
    return wire08.up_state(kind, lift_state(kind, state), channel=channel)


def lift_state(kind: str, state: JSON) -> JSON:
    """The 0.8 form of a 0.7.0 state: plugins' decision lists, and 0.8's status rule."""
    if kind != "session":
        return state
    out = dict(state)
    clients = state.get("activeClients")
    if isinstance(clients, list):
        out["activeClients"] = [_active_client(c, _plugin_up) for c in clients]
    queue = state.get("inputNeeded") or []
    status = state.get("status")
    only_client = bool(queue) and all(
        isinstance(r, dict) and r.get("kind") == "toolClientExecution" for r in queue
    )
    if only_client and isinstance(status, int) and status & _ACTIVITY == _INPUT_NEEDED:
        out["status"] = (status & ~_ACTIVITY) | _IN_PROGRESS
    return out
