"""The 0.7.0 wire as a pure function of the canonical (1.0) state, and 0.7.0 input lifted to it.

The host keeps one state with 1.0 semantics. A 0.7 peer must receive exactly the 0.7.0 wire it
always did, and reduce it with 0.7.0 reducers to the same state as the host's 0.7 snapshot. So
everything that leaves the host for a 0.7 peer goes through :func:`down_actions` (envelopes and
replays) or :func:`down_state` (snapshots), and everything a 0.7 peer sends goes through
:func:`up_action` first. :func:`up_state` exists for the 0.7 reducer path (``reduce_07``), which
runs the 0.7.0 fixtures through the canonical reducers.

What differs, and how it is mapped (ahp-versions.md §1.3-1.4, ahp-versions-diff.md):

=============================  =================================================================
1.0 (canonical)                0.7.0
=============================  =================================================================
``chat/error{part}``           ``chat/error{error: part.error}``
turn error part                ``Turn.error`` (error parts are never in 0.7 response parts)
``chat/turnResume``            ``chat/truncated`` to the turn before, then ``chat/turnStarted``
                               and the reopened turn's parts (``chat/responsePart``, ``chat/usage``)
``chat/turnStarted`` no-op     dropped (1.0 ignores a known turn id; 0.7 would restart the turn)
lifecycle ``failed``           ``creationFailed``
chat ``modifiedAt`` (derived)  the host's time of the chat's last activity (0.7.0's reducer reads
                               a clock), which ``lens.Wire07`` keeps per chat, fed by the envelopes
``toolClientExecution`` input  counts for InputNeeded (0.7 rule): :func:`session_status`, whose
                               result ``lens.Wire07`` keeps per session, fed by the envelopes
``session/customizationToggled``  ``{id, enabled}`` from the first enablement decision
``enablement`` on plugins/MCP  ``enabled`` (also on an active client's plugins, both ways)
``session/workingDirectoryReplaced``  remove + set that rebuild the exact new list
``session/chatsReordered``     ``session/chatRemoved`` + ``session/chatAdded`` in the new order
terminal ``lifecycle``         ``exitCode``; a session claim's ``chat`` is dropped
annotation ``origin``          ``turnId``
changeset ``recomputing``      ``computing``
1.0-only actions               dropped, and the state fields only they maintain are stripped:
                               chat read/archived bits, ``backgroundWork``, ``changesets``,
                               ``movable``, ``canvases``, MCP ``blocking``, summary ``chats``,
                               ``defaultChat``, ``changes``, ``origin``
``_meta`` on results           dropped (``InitializeResult._meta``)
=============================  =================================================================
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ahp_bridge.protocol.actions import ACTION_TYPES

__all__ = [
    "CLOCK_STAMPED",
    "DROPPED",
    "NEEDS_POST_STATE",
    "chats_rebuilt",
    "down_actions",
    "down_state",
    "down_summary",
    "down_turn",
    "session_status",
    "up_action",
    "up_params",
    "up_state",
]

JSON = dict[str, Any]

#: Chat actions whose 0.7.0 reducer stamps ``modifiedAt`` with the reducer's clock (the 0.7
#: reference reads ``Date.now()``; 1.0 derives it from the actions and reads no clock). When
#: one applies is ``activity.chat_activity``; ``lens.Wire07`` keeps the host's time of the last.
CLOCK_STAMPED: Final[frozenset[str]] = frozenset(
    {
        "chat/turnStarted",
        "chat/turnComplete",
        "chat/turnCancelled",
        "chat/error",
        "chat/truncated",
        "chat/inputRequested",
        "chat/inputAnswerChanged",
        "chat/inputCompleted",
    }
)

#: Canonical action types that have no 0.7.0 form and need none: nothing a 0.7 peer keeps
#: changes (the fields they maintain are stripped from 0.7 state).
DROPPED: Final[frozenset[str]] = frozenset(
    {
        "chat/isReadChanged",
        "chat/isArchivedChanged",
        "chat/changesetsChanged",
        "chat/backgroundWorkSet",
        "chat/backgroundWorkRemoved",
        "chat/movableChanged",
        "chat/canvasesChanged",
        "canvas/stateChanged",
        "session/mcpServerBackgroundRequested",
    }
)

#: Canonical actions whose older-wire form is computed from the state they produced.
NEEDS_POST_STATE: Final[frozenset[str]] = frozenset(
    {"chat/turnResume", "session/workingDirectoryReplaced", "session/chatsReordered"}
)

_IS_READ = 32
_IS_ARCHIVED = 64
_ACTIVITY = (1 << 5) - 1
_INPUT_NEEDED = 24
_IN_PROGRESS = 8
_CHAT_ONLY_1_0 = ("changes", "movable", "changesets", "backgroundWork", "canvases")
_SUMMARY_ONLY_1_0 = ("chats", "defaultChat", "origin")


# ── states ────────────────────────────────────────────────────────────────────────────────────


def down_state(kind: str, state: JSON, *, session_status: int | None = None) -> JSON:
    """The 0.7.0 form of a canonical state of a channel of ``kind``.

    ``session_status`` is the 0.7 view of a session's status (see :func:`session_status`).
    """
    match kind:
        case "chat":
            return _chat_state(state)
        case "session":
            return _session_state(state, session_status)
        case "terminal":
            return _terminal_state(state)
        case "annotations":
            return _annotations_state(state)
        case "root":
            return _root_state(state)
        case "changeset":
            return _changeset_state(state)
        case _:
            return state


def _chat_state(state: JSON) -> JSON:
    out = {k: v for k, v in state.items() if k not in _CHAT_ONLY_1_0}
    status = state.get("status")
    if isinstance(status, int):
        out["status"] = status & ~(_IS_READ | _IS_ARCHIVED)
    turns = state.get("turns")
    if isinstance(turns, list):
        out["turns"] = [down_turn(t) for t in turns]
    active = state.get("activeTurn")
    if isinstance(active, dict):
        out["activeTurn"] = _without_error_parts(active)
    return out


def down_turn(turn: Any) -> Any:
    """A finished turn: error parts out of ``responseParts``; an errored turn's into ``error``."""
    if not isinstance(turn, dict):
        return turn
    parts = turn.get("responseParts")
    if not isinstance(parts, list) or not any(_is_error_part(p) for p in parts):
        return turn
    out = {**turn, "responseParts": [p for p in parts if not _is_error_part(p)]}
    last = parts[-1]
    if turn.get("state") == "error" and _is_error_part(last) and "error" in last:
        out["error"] = last["error"]
    return out


def _without_error_parts(turn: JSON) -> JSON:
    parts = turn.get("responseParts")
    if not isinstance(parts, list) or not any(_is_error_part(p) for p in parts):
        return turn
    return {**turn, "responseParts": [p for p in parts if not _is_error_part(p)]}


def _is_error_part(part: Any) -> bool:
    return isinstance(part, dict) and part.get("kind") == "error"


def _session_state(state: JSON, status07: int | None) -> JSON:
    out = {k: v for k, v in state.items() if k != "origin"}
    if state.get("lifecycle") == "failed":
        out["lifecycle"] = "creationFailed"
    if status07 is not None:
        out["status"] = status07
    chats = state.get("chats")
    if isinstance(chats, list):
        out["chats"] = [_chat_summary(c) for c in chats]
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


def _chat_summary(summary: Any) -> Any:
    if not isinstance(summary, dict):
        return summary
    return {k: v for k, v in summary.items() if k not in ("changes", "movable")}


def _customization(item: Any) -> Any:
    """``enablement`` decisions become 0.7.0's ``enabled``; MCP ``blocking`` is dropped."""
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
    state = item.get("state")
    if isinstance(state, dict) and "blocking" in state:
        out["state"] = {k: v for k, v in state.items() if k != "blocking"}
    return out


def _enabled(enablement: Any) -> bool:
    """The 0.7 flag for a decision list: the first decision, enabled when there is none."""
    if isinstance(enablement, list) and enablement and isinstance(enablement[0], dict):
        enabled = enablement[0].get("enabled")
        return enabled if isinstance(enabled, bool) else True
    return True


def _terminal_state(state: JSON) -> JSON:
    out = {k: v for k, v in state.items() if k != "lifecycle"}
    lifecycle = state.get("lifecycle")
    if isinstance(lifecycle, dict) and lifecycle.get("exitCode") is not None:
        out["exitCode"] = lifecycle["exitCode"]
    claim = state.get("claim")
    if isinstance(claim, dict) and claim.get("kind") == "session":
        out["claim"] = {k: v for k, v in claim.items() if k != "chat"}
    return out


def _annotations_state(state: JSON) -> JSON:
    items = state.get("annotations")
    if not isinstance(items, list):
        return state
    return {**state, "annotations": [_annotation(a) for a in items]}


def _annotation(annotation: Any) -> Any:
    if not isinstance(annotation, dict) or "origin" not in annotation:
        return annotation
    out = {k: v for k, v in annotation.items() if k != "origin"}
    origin = annotation.get("origin")
    turn = origin.get("turnId") if isinstance(origin, dict) else None
    # 0.7 requires a turnId: an annotation of no turn (1.0 allows it) says "" (found by the
    # property-based suite, tests/e2e/test_fuzz.py), which a 0.7 client's "" lifts back from.
    out["turnId"] = turn if isinstance(turn, str) else ""
    return out


def _root_state(state: JSON) -> JSON:
    terminals = state.get("terminals")
    if not isinstance(terminals, list):
        return state
    return {**state, "terminals": [_terminal_info(t) for t in terminals]}


def _terminal_info(info: Any) -> Any:
    return _terminal_state(info) if isinstance(info, dict) else info


def _changeset_state(state: JSON) -> JSON:
    if state.get("status") != "recomputing":
        return state
    return {**state, "status": "computing"}


def down_summary(summary: JSON) -> JSON:
    """A SessionSummary (or its partial changes) without the 1.0-only fields."""
    if not any(k in summary for k in _SUMMARY_ONLY_1_0):
        return summary
    return {k: v for k, v in summary.items() if k not in _SUMMARY_ONLY_1_0}


def session_status(previous: int, action: Mapping[str, Any], state: JSON) -> int:
    """The 0.7 view of a session's status after ``action`` produced the canonical ``state``.

    0.7.0 counts every input-needed entry (1.0 skips ``toolClientExecution``) and otherwise only
    the flags move, so the 0.7 activity is carried from ``previous`` and recomputed on the input
    queue's actions with the 0.7 rule.
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
    kind_of = action.get("type")
    if kind_of in DROPPED:
        return []
    match kind_of:
        case "chat/error":
            return [_chat_error(action)]
        case "chat/turnStarted":
            return [action] if changed else []
        case "chat/turnResume":
            return _turn_resumed(post) if changed and post is not None else []
        case "chat/responsePart":
            part = action.get("part")
            return [] if _is_error_part(part) else [action]
        case "chat/turnsLoaded":
            turns = action.get("turns")
            if isinstance(turns, list) and any(down_turn(t) is not t for t in turns):
                return [{**action, "turns": [down_turn(t) for t in turns]}]
            return [action]
        case "session/workingDirectoryReplaced":
            return _directories_rebuilt(action, post) if changed and post is not None else []
        case "session/chatsReordered":
            return chats_rebuilt(post, _chat_summary) if changed and post is not None else []
        case "session/customizationToggled":
            return [_toggled(action)]
        case "session/customizationsChanged":
            items = action.get("customizations")
            if isinstance(items, list):
                return [{**action, "customizations": [_customization(c) for c in items]}]
            return [action]
        case "session/customizationUpdated":
            return [{**action, "customization": _customization(action.get("customization"))}]
        case "session/mcpServerStateChanged":
            state = action.get("state")
            if isinstance(state, dict) and "blocking" in state:
                return [{**action, "state": {k: v for k, v in state.items() if k != "blocking"}}]
            return [action]
        case "session/chatAdded":
            return [{**action, "summary": _chat_summary(action.get("summary"))}]
        case "session/activeClientSet":
            return [
                {
                    **action,
                    "activeClient": _active_client(action.get("activeClient"), _customization),
                }
            ]
        case "session/chatUpdated":
            changes = action.get("changes")
            if isinstance(changes, dict) and ("changes" in changes or "movable" in changes):
                return [{**action, "changes": _chat_summary(changes)}]
            return [action]
        case "terminal/claimed":
            claim = action.get("claim")
            if isinstance(claim, dict) and claim.get("kind") == "session" and "chat" in claim:
                return [{**action, "claim": {k: v for k, v in claim.items() if k != "chat"}}]
            return [action]
        case "root/terminalsChanged":
            terminals = action.get("terminals")
            if isinstance(terminals, list):
                return [{**action, "terminals": [_terminal_info(t) for t in terminals]}]
            return [action]
        case "annotations/set":
            return [{**action, "annotation": _annotation(action.get("annotation"))}]
        case "annotations/updated":
            return [_annotation(action)]
        case "changeset/statusChanged":
            if action.get("status") == "recomputing":
                return [{**action, "status": "computing"}]
            return [action]
        case _:
            return [action] if kind_of in ACTION_TYPES else []


def _chat_error(action: JSON) -> JSON:
    out = {k: v for k, v in action.items() if k != "part"}
    part = action.get("part")
    out["error"] = part.get("error") if isinstance(part, dict) else None
    return out


def _turn_resumed(post: JSON) -> list[JSON]:
    """Reopening the latest turn, said in 0.7.0: truncate it away, start it again, refill it."""
    active = post.get("activeTurn")
    if not isinstance(active, dict):
        return []
    turns = post.get("turns") or []
    truncate: JSON = {"type": "chat/truncated"}
    if turns:
        truncate["turnId"] = turns[-1].get("id")
    started = {
        "type": "chat/turnStarted",
        "turnId": active.get("id"),
        "startedAt": active.get("startedAt"),
        "message": active.get("message"),
    }
    out = [truncate, started]
    for part in active.get("responseParts") or []:
        if _is_error_part(part):
            continue
        if isinstance(part, dict) and part.get("kind") == "inputRequest" and "response" not in part:
            # An open request is re-asked, so the 0.7 reducer derives InputNeeded as 1.0 does.
            out.append({"type": "chat/inputRequested", "request": part.get("request")})
        else:
            out.append({"type": "chat/responsePart", "turnId": active.get("id"), "part": part})
    if active.get("usage") is not None:
        out.append({"type": "chat/usage", "turnId": active.get("id"), "usage": active["usage"]})
    return out


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


def chats_rebuilt(post: JSON, summary: Callable[[Any], Any] = lambda c: c) -> list[JSON]:
    """A new chat order said without `session/chatsReordered`: remove all, add back in order."""
    chats = [c for c in post.get("chats") or [] if isinstance(c, dict)]
    out: list[JSON] = [{"type": "session/chatRemoved", "chat": c.get("resource")} for c in chats]
    out.extend({"type": "session/chatAdded", "summary": summary(c)} for c in chats)
    if post.get("defaultChat") is not None:
        out.append({"type": "session/defaultChatChanged", "defaultChat": post["defaultChat"]})
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
    match action.get("type"):
        case "session/customizationToggled":
            out = {k: v for k, v in action.items() if k != "enabled"}
            out["enablement"] = [{"kind": "session", "enabled": bool(action.get("enabled"))}]
            return out
        case "session/activeClientSet":
            client = _active_client(action.get("activeClient"), _plugin_up)
            return {**action, "activeClient": client}
        case "annotations/set":
            annotation = action.get("annotation")
            if isinstance(annotation, dict):
                return {**action, "annotation": _annotation_up(annotation, channel)}
            return action
        case "annotations/updated":
            return _annotation_up(action, channel) if "turnId" in action else action
        case "chat/error":  # only in the reducer path: clients cannot dispatch it
            out = {k: v for k, v in action.items() if k != "error"}
            out["part"] = {"kind": "error", "error": action.get("error")}
            return out
        case _:
            return action


def up_params(method: str, params: JSON) -> JSON:
    """The canonical form of a 0.7 peer's (already valid) request params."""
    if method == "createSession" and isinstance(params.get("activeClient"), dict):
        return {**params, "activeClient": _active_client(params["activeClient"], _plugin_up)}
    return params


def _annotation_up(annotation: JSON, channel: str) -> JSON:
    out = {k: v for k, v in annotation.items() if k != "turnId"}
    session = channel.removesuffix("/annotations")
    origin: JSON = {"session": session}
    if annotation.get("turnId"):  # "" is 0.7's "of no turn"
        origin["turnId"] = annotation["turnId"]
    out["origin"] = origin
    return out


def up_state(kind: str, state: JSON, *, channel: str = "") -> JSON:
    """The canonical form of a 0.7.0 state (the inverse of :func:`down_state`)."""
    match kind:
        case "chat":
            out = dict(state)
            turns = state.get("turns")
            if isinstance(turns, list):
                out["turns"] = [_turn_up(t) for t in turns]
            return out
        case "session":
            out = dict(state)
            if state.get("lifecycle") == "creationFailed":
                out["lifecycle"] = "failed"
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
        case "terminal":
            out = {k: v for k, v in state.items() if k != "exitCode"}
            if "exitCode" in state:
                out["lifecycle"] = {"status": "exited", "exitCode": state["exitCode"]}
            else:
                out["lifecycle"] = {"status": "running"}
            return out
        case "annotations":
            items = state.get("annotations")
            if isinstance(items, list):
                return {
                    **state,
                    "annotations": [
                        _annotation_up(a, channel) if isinstance(a, dict) else a for a in items
                    ],
                }
            return state
        case _:
            return state


def _turn_up(turn: Any) -> Any:
    if not isinstance(turn, dict) or "error" not in turn:
        return turn
    out = {k: v for k, v in turn.items() if k != "error"}
    if turn.get("state") == "error" and turn.get("error") is not None:
        parts = list(turn.get("responseParts") or [])
        out["responseParts"] = [*parts, {"kind": "error", "error": turn["error"]}]
    return out
