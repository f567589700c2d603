"""The 0.6.0 wire as a pure function of the canonical (1.0) state, and 0.6.0 input lifted to it.

The last step of the chain canonical -> 0.9 (``wire09``) -> 0.8 (``wire08``) -> 0.7
(``wire07``) -> 0.6: the ``step_*`` functions take the 0.7 form and undo what 0.7.0 changed
(multiroot, side chats, lazy tool input, terminal results: ahp-0.6-0.8-diff.md §2.1, §8);
``down_*`` run the whole chain; ``lift_*`` take one 0.6.0 input to 0.7, ``up_*`` all the way to
the canonical form. This step's rows (everything in ``wire07``'s table applies as well):

=================================  =============================================================
canonical (via 0.7)                0.6.0
=================================  =============================================================
``workingDirectories`` (a list)    ``workingDirectory``, its first entry (none when it is empty):
                                   session and chat states, summaries, ``session/chatAdded`` and
                                   ``session/chatUpdated``, ``root/sessionSummaryChanged``; a 0.6
                                   ``createSession.workingDirectory`` is the one-entry list
the five working-directory actions  dropped: 0.6 has no action that changes a working
                                   directory, so a 0.6 peer sees a change in its next snapshot
                                   (this host fixes them when a session is made)
``toolInput`` as a ``ContentRef``  left out (it is optional; 0.6 has only inline strings)
``chat/toolCallDelta`` without     ``content: ""`` (0.6 requires it); a delta that says nothing
``content``                        else is not sent
``chat/toolCallReady``             without ``contributor`` and ``intention``
terminal tool result ``result``    a ``terminalComplete`` entry after the ``terminal`` one (its
                                   ``exitCode``, ``preview``, ``truncated``), both ways; ``isPty``
                                   dropped (also from terminal states)
``type: "chat"`` attachment        ``{type: "simple", label}`` in every message
side-chat ``origin``               left out of chat states and summaries; capability
                                   ``multipleChats.sideChat`` and ``multipleWorkingDirectories``
                                   left out of the agents' capabilities
``createChat.source``              a 0.6 ``{chat, turnId}`` is lifted as ``{kind: "fork", ...}``
``auth/required.resource``         the resource identifier (``resource.resource``), a string
=================================  =============================================================
"""

from __future__ import annotations

from typing import Any, Final

from ahp_bridge.protocol import wire07, wire08
from ahp_bridge.protocol.actions_v06 import WORKING_DIRECTORY_TYPES

__all__ = [
    "PASSED",
    "STEPPED",
    "down_actions",
    "down_state",
    "down_summary",
    "lift_action",
    "lift_params",
    "lift_state",
    "notification",
    "step_actions",
    "step_state",
    "step_summary",
    "up_action",
    "up_params",
    "up_state",
]

JSON = dict[str, Any]

_TOOL_CALL_READY_ONLY_0_7: Final = ("contributor", "intention")

#: The action types :func:`step_actions` may change or drop; it passes every other one.
STEPPED: Final[frozenset[str]] = WORKING_DIRECTORY_TYPES | {
    "chat/toolCallReady",
    "chat/toolCallDelta",
    "chat/toolCallComplete",
    "chat/toolCallContentChanged",
    "chat/toolCallConfirmed",
    "chat/responsePart",
    "chat/turnStarted",
    "chat/pendingMessageSet",
    "chat/draftChanged",
    "chat/turnsLoaded",
    "session/chatAdded",
    "session/chatUpdated",
    "session/inputNeededSet",
    "root/agentsChanged",
}
#: The action types the step passes as they are: ``lens`` skips it for them.
PASSED: Final[frozenset[str]] = frozenset(wire07.PASSED | wire07.STEPPED) - STEPPED


# ── values ────────────────────────────────────────────────────────────────────────────────────


def _directories(value: JSON) -> JSON:
    """``workingDirectories`` as 0.6's ``workingDirectory`` (its first entry, if any)."""
    if "workingDirectories" not in value:
        return value
    out = {k: v for k, v in value.items() if k != "workingDirectories"}
    dirs = value["workingDirectories"]
    if isinstance(dirs, list) and dirs:
        out["workingDirectory"] = dirs[0]
    return out


def _summary_of_chat(summary: Any) -> Any:
    """A ChatSummary (or the changes of one): one directory, no side-chat origin."""
    if not isinstance(summary, dict):
        return summary
    out = _directories(summary)
    origin = summary.get("origin")
    if isinstance(origin, dict) and origin.get("kind") == "sideChat":
        out = {k: v for k, v in out.items() if k != "origin"}
    return out


def _message(message: Any) -> Any:
    """A Message whose chat attachments (0.7's) are said as simple ones with their label."""
    if not isinstance(message, dict):
        return message
    attachments = message.get("attachments")
    if not isinstance(attachments, list) or not any(_is_chat_attachment(a) for a in attachments):
        return message
    shown = [
        {"type": "simple", "label": a.get("label", "")} if _is_chat_attachment(a) else a
        for a in attachments
    ]
    return {**message, "attachments": shown}


def _is_chat_attachment(attachment: Any) -> bool:
    return isinstance(attachment, dict) and attachment.get("type") == "chat"


def _pending(pending: Any) -> Any:
    if not isinstance(pending, dict) or "message" not in pending:
        return pending
    message = _message(pending["message"])
    return pending if message is pending["message"] else {**pending, "message": message}


def _results(content: Any) -> Any:
    """ToolResultContent entries: a terminal's ``result`` as a ``terminalComplete`` after it."""
    if not isinstance(content, list) or not any(_is_terminal_result(c) for c in content):
        return content
    out: list[Any] = []
    for entry in content:
        if not _is_terminal_result(entry):
            out.append(entry)
            continue
        out.append({k: v for k, v in entry.items() if k not in ("result", "isPty")})
        if "result" in entry:
            complete: JSON = {"type": "terminalComplete", "resource": entry.get("resource")}
            result = entry["result"]
            if isinstance(result, dict):
                complete.update(
                    (k, result[k]) for k in ("exitCode", "preview", "truncated") if k in result
                )
            out.append(complete)
    return out


def _is_terminal_result(entry: Any) -> bool:
    return (
        isinstance(entry, dict)
        and entry.get("type") == "terminal"
        and ("result" in entry or "isPty" in entry)
    )


def _tool_call(call: Any) -> Any:
    """A tool-call state: no lazy input, terminal results and messages as 0.6 says them."""
    if not isinstance(call, dict):
        return call
    out = call
    if isinstance(call.get("toolInput"), dict):
        out = {k: v for k, v in out.items() if k != "toolInput"}
    content = call.get("content")
    shown = _results(content)
    if shown is not content:
        out = {**out, "content": shown}
    suggestion = call.get("userSuggestion")
    message = _message(suggestion)
    if message is not suggestion:
        out = {**out, "userSuggestion": message}
    return out


def _part(part: Any) -> Any:
    if isinstance(part, dict) and part.get("kind") == "toolCall":
        call = _tool_call(part.get("toolCall"))
        return part if call is part.get("toolCall") else {**part, "toolCall": call}
    return part


def _turn(turn: Any) -> Any:
    if not isinstance(turn, dict):
        return turn
    out = dict(turn)
    if "message" in turn:
        out["message"] = _message(turn["message"])
    parts = turn.get("responseParts")
    if isinstance(parts, list):
        out["responseParts"] = [_part(p) for p in parts]
    return out


def _input_request(request: Any) -> Any:
    if isinstance(request, dict) and isinstance(request.get("toolCall"), dict):
        call = _tool_call(request["toolCall"])
        return request if call is request["toolCall"] else {**request, "toolCall": call}
    return request


def _agent(agent: Any) -> Any:
    """An AgentInfo without 0.7's capabilities (multiple working directories, side chats)."""
    caps = agent.get("capabilities") if isinstance(agent, dict) else None
    if not isinstance(caps, dict):
        return agent
    shown = {k: v for k, v in caps.items() if k != "multipleWorkingDirectories"}
    chats = caps.get("multipleChats")
    if isinstance(chats, dict) and "sideChat" in chats:
        shown["multipleChats"] = {k: v for k, v in chats.items() if k != "sideChat"}
    return {**agent, "capabilities": shown}


# ── states ────────────────────────────────────────────────────────────────────────────────────


def down_state(kind: str, state: JSON, *, session_status: int | None = None) -> JSON:
    """The 0.6.0 form of a canonical state of a channel of ``kind`` (``session_status``: the
    0.7 view of a session's status, whose rule 0.6 shares: ``wire07.session_status``)."""
    return step_state(kind, wire07.down_state(kind, state, session_status=session_status))


def step_state(kind: str, state: JSON) -> JSON:
    """The 0.6.0 form of a 0.7 state."""
    match kind:
        case "chat":
            out = _summary_of_chat(state)
            out = dict(out)
            turns = state.get("turns")
            if isinstance(turns, list):
                out["turns"] = [_turn(t) for t in turns]
            if isinstance(state.get("activeTurn"), dict):
                out["activeTurn"] = _turn(state["activeTurn"])
            if "steeringMessage" in state:
                out["steeringMessage"] = _pending(state["steeringMessage"])
            if isinstance(state.get("queuedMessages"), list):
                out["queuedMessages"] = [_pending(p) for p in state["queuedMessages"]]
            if "draft" in state:
                out["draft"] = _message(state["draft"])
            return out
        case "session":
            out = _directories(state)
            chats = state.get("chats")
            if isinstance(chats, list):
                out = {**out, "chats": [_summary_of_chat(c) for c in chats]}
            queue = state.get("inputNeeded")
            if isinstance(queue, list):
                out = {**out, "inputNeeded": [_input_request(r) for r in queue]}
            return out
        case "terminal":
            return {k: v for k, v in state.items() if k != "isPty"} if "isPty" in state else state
        case "root":
            agents = state.get("agents")
            if isinstance(agents, list):
                return {**state, "agents": [_agent(a) for a in agents]}
            return state
        case _:
            return state


def down_summary(summary: JSON) -> JSON:
    """A SessionSummary (or its partial changes) as 0.6 shows it."""
    return step_summary(wire07.down_summary(summary))


def step_summary(summary: JSON) -> JSON:
    return _directories(summary)


def notification(method: str, params: JSON) -> JSON:
    """A 0.7 (canonical) notification's params for 0.6: ``auth/required`` names the resource
    by its identifier (0.8.0 made it the whole ProtectedResourceMetadata)."""
    if method == "auth/required":
        resource = params.get("resource")
        if isinstance(resource, dict):
            return {**params, "resource": resource.get("resource")}
    return params


# ── actions: canonical -> 0.6 ─────────────────────────────────────────────────────────────────


def down_actions(
    kind: str, action: JSON, *, changed: bool = True, post: JSON | None = None
) -> list[JSON]:
    """The 0.6.0 actions a 0.6 peer receives for one canonical action: none, one or several."""
    return wire08.chain(wire07.down_actions(kind, action, changed=changed, post=post), step_actions)


def step_actions(action: JSON) -> list[JSON]:
    """The 0.6.0 actions for one 0.7 action."""
    match action.get("type"):
        case kind_of if kind_of in WORKING_DIRECTORY_TYPES:
            return []
        case "chat/toolCallReady":
            out = {k: v for k, v in action.items() if k not in _TOOL_CALL_READY_ONLY_0_7}
            if isinstance(action.get("toolInput"), dict):
                del out["toolInput"]
            return [out] if len(out) != len(action) else [action]
        case "chat/toolCallDelta":
            if isinstance(action.get("content"), str):
                return [action]
            if not any(k in action for k in ("invocationMessage", "_meta")):
                return []  # it changes nothing a 0.6 peer holds
            return [{**action, "content": ""}]
        case "chat/toolCallComplete":
            result = action.get("result")
            if isinstance(result, dict):
                content = _results(result.get("content"))
                if content is not result.get("content"):
                    return [{**action, "result": {**result, "content": content}}]
            return [action]
        case "chat/toolCallContentChanged":
            content = _results(action.get("content"))
            return (
                [action] if content is action.get("content") else [{**action, "content": content}]
            )
        case "chat/toolCallConfirmed":
            suggestion = action.get("userSuggestion")
            message = _message(suggestion)
            return [action] if message is suggestion else [{**action, "userSuggestion": message}]
        case "chat/responsePart":
            part = _part(action.get("part"))
            return [action] if part is action.get("part") else [{**action, "part": part}]
        case "chat/turnStarted" | "chat/pendingMessageSet":
            message = _message(action.get("message"))
            return (
                [action] if message is action.get("message") else [{**action, "message": message}]
            )
        case "chat/draftChanged":
            draft = _message(action.get("draft"))
            return [action] if draft is action.get("draft") else [{**action, "draft": draft}]
        case "chat/turnsLoaded":
            turns = action.get("turns")
            if isinstance(turns, list):
                return [{**action, "turns": [_turn(t) for t in turns]}]
            return [action]
        case "session/chatAdded":
            summary = _summary_of_chat(action.get("summary"))
            return (
                [action] if summary is action.get("summary") else [{**action, "summary": summary}]
            )
        case "session/chatUpdated":
            changes = _summary_of_chat(action.get("changes"))
            return (
                [action] if changes is action.get("changes") else [{**action, "changes": changes}]
            )
        case "session/inputNeededSet":
            request = _input_request(action.get("request"))
            return (
                [action] if request is action.get("request") else [{**action, "request": request}]
            )
        case "root/agentsChanged":
            agents = action.get("agents")
            if isinstance(agents, list):
                return [{**action, "agents": [_agent(a) for a in agents]}]
            return [action]
        case _:
            return [action]


# ── input: 0.6 -> canonical ───────────────────────────────────────────────────────────────────


def up_action(kind: str, action: JSON, *, channel: str = "") -> JSON:
    """The canonical form of an action a 0.6 peer sent (already valid 0.6.0)."""
    return wire07.up_action(kind, lift_action(kind, action), channel=channel)


def lift_action(kind: str, action: JSON) -> JSON:
    """The 0.7 form of a 0.6.0 action: a client-executed terminal's ``terminalComplete`` folds
    into its ``terminal`` entry as ``result``."""
    match action.get("type"):
        case "session/chatAdded":  # host-only: in the reducer path
            summary = action.get("summary")
            if isinstance(summary, dict) and "workingDirectory" in summary:
                return {**action, "summary": _directories_up(summary)}
            return action
        case "session/chatUpdated":  # host-only: in the reducer path
            changes = action.get("changes")
            if isinstance(changes, dict) and "workingDirectory" in changes:
                return {**action, "changes": _directories_up(changes)}
            return action
        case "chat/toolCallComplete":
            result = action.get("result")
            if isinstance(result, dict):
                content = _results_up(result.get("content"))
                if content is not result.get("content"):
                    return {**action, "result": {**result, "content": content}}
            return action
        case "chat/toolCallContentChanged":
            content = _results_up(action.get("content"))
            return action if content is action.get("content") else {**action, "content": content}
        case _:
            return action


def _results_up(content: Any) -> Any:
    """0.6's ``terminalComplete`` entries folded into the preceding ``terminal`` entry of the
    same resource (``cwd`` has no place in 0.7; an entry with no terminal is dropped)."""
    if not isinstance(content, list) or not any(
        isinstance(c, dict) and c.get("type") == "terminalComplete" for c in content
    ):
        return content
    out: list[Any] = []
    for entry in content:
        if not (isinstance(entry, dict) and entry.get("type") == "terminalComplete"):
            out.append(entry)
            continue
        for i in range(len(out) - 1, -1, -1):
            target = out[i]
            if (
                isinstance(target, dict)
                and target.get("type") == "terminal"
                and target.get("resource") == entry.get("resource")
            ):
                result = {k: entry[k] for k in ("exitCode", "preview", "truncated") if k in entry}
                out[i] = {**target, "result": result}
                break
    return out


def up_params(method: str, params: JSON) -> JSON:
    """The canonical form of a 0.6 peer's (already valid) request params."""
    return wire07.up_params(method, lift_params(method, params))


def lift_params(method: str, params: JSON) -> JSON:
    if method == "createSession" and "workingDirectory" in params:
        out = {k: v for k, v in params.items() if k != "workingDirectory"}
        out["workingDirectories"] = [params["workingDirectory"]]
        return out
    if method == "createChat":
        source = params.get("source")
        if isinstance(source, dict) and "kind" not in source:
            return {**params, "source": {"kind": "fork", **source}}
    return params


def up_state(kind: str, state: JSON, *, channel: str = "") -> JSON:
    """The canonical form of a 0.6.0 state (the inverse of :func:`down_state` where 0.6 holds
    what canonical does)."""
    return wire07.up_state(kind, lift_state(kind, state), channel=channel)


def lift_state(kind: str, state: JSON) -> JSON:
    """The 0.7 form of a 0.6.0 state."""
    match kind:
        case "chat":
            out = _directories_up(state)
            turns = state.get("turns")
            if isinstance(turns, list):
                out["turns"] = [_turn_up(t) for t in turns]
            if isinstance(state.get("activeTurn"), dict):
                out["activeTurn"] = _turn_up(state["activeTurn"])
            return out
        case "session":
            out = _directories_up(state)
            chats = state.get("chats")
            if isinstance(chats, list):
                out["chats"] = [_directories_up(c) if isinstance(c, dict) else c for c in chats]
            queue = state.get("inputNeeded")
            if isinstance(queue, list):
                out["inputNeeded"] = [_input_request_up(r) for r in queue]
            return out
        case _:
            return state


def _directories_up(value: JSON) -> JSON:
    out = {k: v for k, v in value.items() if k != "workingDirectory"}
    if "workingDirectory" in value:
        out["workingDirectories"] = [value["workingDirectory"]]
    return out


def _tool_call_up(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    content = _results_up(call.get("content"))
    return call if content is call.get("content") else {**call, "content": content}


def _turn_up(turn: Any) -> Any:
    parts = turn.get("responseParts") if isinstance(turn, dict) else None
    if not isinstance(parts, list):
        return turn
    shown = [
        {**p, "toolCall": _tool_call_up(p.get("toolCall"))}
        if isinstance(p, dict) and p.get("kind") == "toolCall"
        else p
        for p in parts
    ]
    return {**turn, "responseParts": shown}


def _input_request_up(request: Any) -> Any:
    if isinstance(request, dict) and isinstance(request.get("toolCall"), dict):
        return {**request, "toolCall": _tool_call_up(request["toolCall"])}
    return request
