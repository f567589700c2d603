"""The 0.8.0 wire as a pure function of the canonical (1.0) state, and 0.8.0 input lifted to it.

The lenses are a chain, each a step from the next newer line: canonical -> 0.9 (``wire09``) ->
0.8 (this module) -> 0.7 (``wire07``) -> 0.6 (``wire06``). This step undoes what 0.9.0 broke
(ahp-versions.md §1.3) and strips the 1.0 additions 0.9's step keeps; what 0.8.0 already shares
with 1.0 (customization ``enablement``, ``auth/required.resource`` as an object, the
working-directory replacement, ``_meta`` on command params, client executions not counting as
InputNeeded: ahp-0.6-0.8-diff.md §4, §7) passes as it is. The ``step_*`` functions take the 0.9
form; ``down_*`` run the chain from the canonical form; ``up_*`` lift 0.8.0 input to it.

=============================  =================================================================
canonical (via 0.9)            0.8.0
=============================  =================================================================
``chat/error{part}``           ``chat/error{error: part.error}`` (no place for ``resumable``)
turn error part                ``Turn.error`` (error parts are never in 0.8 response parts)
``chat/turnResume``            ``chat/truncated`` to the turn before, then ``chat/turnStarted``
                               and the reopened turn's parts (``chat/responsePart``, an open
                               question as ``chat/inputRequested``, ``chat/usage``)
``chat/turnStarted`` no-op     dropped (1.0 ignores a known turn id; 0.8 would restart the turn)
chat ``modifiedAt`` (derived)  the host's time of the chat's last activity (0.8.0's reducer still
                               reads a clock), which ``lens.Wire08`` keeps per chat
lifecycle ``failed``           ``creationFailed``
terminal ``lifecycle``         ``exitCode``; a session claim's ``chat`` is dropped
annotation ``origin``          ``turnId`` (``""`` for an annotation of no turn; lifted back)
changeset ``recomputing``      ``computing``
automation actions             dropped (0.9.0's; never offered by this host either)
1.0 additions 0.9 keeps        stripped: ``ChatState.changes``, a chat summary's ``changes`` and
                               ``movable``, ``SessionSummary.chats``/``defaultChat``, ``origin``
``InitializeResult._meta``     dropped
=============================  =================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from ahp_bridge.protocol import wire09
from ahp_bridge.protocol.actions_v08 import TYPES_0_8

__all__ = [
    "CLOCK_STAMPED",
    "NEEDS_POST_STATE",
    "PASSED",
    "STEPPED",
    "chain",
    "chat_summary",
    "down_actions",
    "down_state",
    "down_summary",
    "down_turn",
    "step_actions",
    "step_state",
    "step_summary",
    "up_action",
    "up_params",
    "up_state",
]

JSON = dict[str, Any]

#: Chat actions whose 0.8.0 (and 0.7.0, 0.6.0) reducer stamps ``modifiedAt`` with the reducer's
#: clock (the reference reads ``Date.now()``; 0.9 derives it from the actions and reads no
#: clock). When one applies is ``activity.chat_activity``; ``lens.Wire08`` keeps the host's time
#: of the last.
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

#: Canonical actions whose 0.8 form is computed from the state they produced (0.9's own
#: rebuild, ``session/chatsReordered``, needs it too).
NEEDS_POST_STATE: Final[frozenset[str]] = frozenset({"chat/turnResume", "session/chatsReordered"})

_TYPES: Final = TYPES_0_8
#: The action types :func:`step_actions` may change or drop (besides the types 0.8 lacks).
STEPPED: Final[frozenset[str]] = frozenset(
    {
        "chat/error",
        "chat/turnStarted",
        "chat/turnResume",
        "chat/responsePart",
        "chat/turnsLoaded",
        "session/chatAdded",
        "session/chatUpdated",
        "terminal/claimed",
        "root/terminalsChanged",
        "annotations/set",
        "annotations/updated",
        "changeset/statusChanged",
    }
)
#: The action types the step passes as they are (most of a stream): ``lens`` skips it for them.
PASSED: Final[frozenset[str]] = _TYPES - STEPPED
_SUMMARY_ONLY_0_9: Final = ("chats", "defaultChat", "origin")
_CHAT_SUMMARY_ONLY_1_0: Final = ("changes", "movable")


def chain(sent: list[JSON], step: Callable[[JSON], list[JSON]]) -> list[JSON]:
    """Each action of the newer line's ``sent`` through one older step, in order. An action a
    step leaves alone stays the same object, and when the step leaves every one alone the
    result is ``sent`` itself: a line that changes nothing of an envelope shares its encode
    with the newer one (``Envelope.frames``)."""
    out: list[JSON] | None = None
    for i, action in enumerate(sent):
        got = step(action)
        if out is None:
            if len(got) == 1 and got[0] is action:
                continue
            out = sent[:i]
        out.extend(got)
    return sent if out is None else out


# ── states ────────────────────────────────────────────────────────────────────────────────────


def down_state(kind: str, state: JSON) -> JSON:
    """The 0.8.0 form of a canonical state of a channel of ``kind``."""
    return step_state(kind, wire09.down_state(kind, state))


def step_state(kind: str, state: JSON) -> JSON:
    """The 0.8.0 form of a 0.9 state."""
    match kind:
        case "chat":
            return _chat_state(state)
        case "session":
            return _session_state(state)
        case "terminal":
            return _terminal_state(state)
        case "annotations":
            items = state.get("annotations")
            if isinstance(items, list):
                return {**state, "annotations": [_annotation(a) for a in items]}
            return state
        case "root":
            terminals = state.get("terminals")
            if isinstance(terminals, list):
                return {**state, "terminals": [_terminal_info(t) for t in terminals]}
            return state
        case "changeset":
            return (
                {**state, "status": "computing"} if state.get("status") == "recomputing" else state
            )
        case _:
            return state


def _chat_state(state: JSON) -> JSON:
    out = {k: v for k, v in state.items() if k != "changes"}
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


def _session_state(state: JSON) -> JSON:
    out = {k: v for k, v in state.items() if k != "origin"}
    if state.get("lifecycle") == "failed":
        out["lifecycle"] = "creationFailed"
    chats = state.get("chats")
    if isinstance(chats, list):
        out["chats"] = [chat_summary(c) for c in chats]
    return out


def chat_summary(summary: Any) -> Any:
    """A ChatSummary (or the changes of one) without 1.0's ``changes`` and ``movable``."""
    if not isinstance(summary, dict) or not any(k in summary for k in _CHAT_SUMMARY_ONLY_1_0):
        return summary
    return {k: v for k, v in summary.items() if k not in _CHAT_SUMMARY_ONLY_1_0}


def _terminal_state(state: JSON) -> JSON:
    out = {k: v for k, v in state.items() if k != "lifecycle"}
    lifecycle = state.get("lifecycle")
    if isinstance(lifecycle, dict) and lifecycle.get("exitCode") is not None:
        out["exitCode"] = lifecycle["exitCode"]
    claim = state.get("claim")
    if isinstance(claim, dict) and claim.get("kind") == "session":
        out["claim"] = {k: v for k, v in claim.items() if k != "chat"}
    return out


def _terminal_info(info: Any) -> Any:
    return _terminal_state(info) if isinstance(info, dict) else info


def _annotation(annotation: Any) -> Any:
    if not isinstance(annotation, dict) or "origin" not in annotation:
        return annotation
    out = {k: v for k, v in annotation.items() if k != "origin"}
    origin = annotation.get("origin")
    turn = origin.get("turnId") if isinstance(origin, dict) else None
    # 0.8 requires a turnId: an annotation of no turn (1.0 allows it) says "" (found by the
    # property-based suite, tests/e2e/test_fuzz.py), which a client's "" lifts back from.
    out["turnId"] = turn if isinstance(turn, str) else ""
    return out


def down_summary(summary: JSON) -> JSON:
    """A SessionSummary (or its partial changes) without the 0.9 and 1.0 fields."""
    return step_summary(summary)


def step_summary(summary: JSON) -> JSON:
    if not any(k in summary for k in _SUMMARY_ONLY_0_9):
        return summary
    return {k: v for k, v in summary.items() if k not in _SUMMARY_ONLY_0_9}


# ── actions: canonical -> 0.8 ─────────────────────────────────────────────────────────────────


def down_actions(
    kind: str, action: JSON, *, changed: bool = True, post: JSON | None = None
) -> list[JSON]:
    """The 0.8.0 actions a 0.8 peer receives for one canonical action: none, one or several.

    ``changed`` says whether the canonical reducer changed the state; ``post`` is the state
    after it (needed by the rebuilds, whose exact form depends on the result).
    """
    sent = wire09.down_actions(kind, action, changed=changed, post=post)
    return chain(sent, lambda a: step_actions(a, changed=changed, post=post))


def step_actions(action: JSON, *, changed: bool = True, post: JSON | None = None) -> list[JSON]:
    """The 0.8.0 actions for one 0.9 action (``changed``, ``post``: of its canonical envelope);
    every type in :data:`STEPPED` has its case here, every other 0.8 type is passed."""
    match action.get("type"):
        case "chat/error":
            return [_chat_error(action)]
        case "chat/turnStarted":
            return [action] if changed else []
        case "chat/turnResume":
            return _turn_resumed(post) if changed and post is not None else []
        case "chat/responsePart":
            return [] if _is_error_part(action.get("part")) else [action]
        case "chat/turnsLoaded":
            turns = action.get("turns")
            if isinstance(turns, list) and any(down_turn(t) is not t for t in turns):
                return [{**action, "turns": [down_turn(t) for t in turns]}]
            return [action]
        case "session/chatAdded":
            summary = action.get("summary")
            shown = chat_summary(summary)
            return [action] if shown is summary else [{**action, "summary": shown}]
        case "session/chatUpdated":
            changes = action.get("changes")
            shown = chat_summary(changes)
            return [action] if shown is changes else [{**action, "changes": shown}]
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
        case kind_of:
            return [action] if kind_of in _TYPES else []


def _chat_error(action: JSON) -> JSON:
    out = {k: v for k, v in action.items() if k != "part"}
    part = action.get("part")
    out["error"] = part.get("error") if isinstance(part, dict) else None
    return out


def _turn_resumed(post: JSON) -> list[JSON]:
    """Reopening the latest turn, said without ``chat/turnResume``: truncate it away, start it
    again, refill it."""
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
            # An open request is re-asked, so the older reducer derives InputNeeded as 1.0 does.
            out.append({"type": "chat/inputRequested", "request": part.get("request")})
        else:
            out.append({"type": "chat/responsePart", "turnId": active.get("id"), "part": part})
    if active.get("usage") is not None:
        out.append({"type": "chat/usage", "turnId": active.get("id"), "usage": active["usage"]})
    return out


# ── input: 0.8 -> canonical ───────────────────────────────────────────────────────────────────


def up_action(kind: str, action: JSON, *, channel: str = "") -> JSON:
    """The canonical form of an action a 0.8 peer sent (already valid 0.8.0).

    ``channel`` is where it was dispatched (an annotation's origin names its session).
    """
    match action.get("type"):
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
    """The canonical form of a 0.8 peer's (already valid) request params: 0.8.0's commands
    are 1.0's (a session-level ``createSession.fork``, gone in 0.9, is refused by the host as
    any fork is)."""
    return params


def _annotation_up(annotation: JSON, channel: str) -> JSON:
    out = {k: v for k, v in annotation.items() if k != "turnId"}
    session = channel.removesuffix("/annotations")
    origin: JSON = {"session": session}
    if annotation.get("turnId"):  # "" is the older lines' "of no turn"
        origin["turnId"] = annotation["turnId"]
    out["origin"] = origin
    return out


def up_state(kind: str, state: JSON, *, channel: str = "") -> JSON:
    """The canonical form of a 0.8.0 state (the inverse of :func:`down_state`)."""
    match kind:
        case "chat":
            turns = state.get("turns")
            if isinstance(turns, list):
                return {**state, "turns": [_turn_up(t) for t in turns]}
            return state
        case "session":
            if state.get("lifecycle") == "creationFailed":
                return {**state, "lifecycle": "failed"}
            return state
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
