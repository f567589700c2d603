"""The chat tool-call state machine (streaming → pending-confirmation → running → …).

Each handler returns the tool call unchanged when the transition does not apply
from its current status, which makes the whole action a no-op.
"""

from __future__ import annotations

from typing import Any

from ._util import JSON, compact
from .chat_common import refresh_status, update_tool_calls

STREAMING = "streaming"
PENDING = "pending-confirmation"
RUNNING = "running"
AUTH = "auth-required"
PENDING_RESULT = "pending-result-confirmation"
COMPLETED = "completed"
CANCELLED = "cancelled"

_BASE_KEYS = ("toolCallId", "toolName", "displayName", "intention", "contributor", "_meta")


def base(tc: JSON, meta: Any = None) -> JSON:
    """Fields common to every tool-call status; an action's `_meta` replaces the old one."""
    out = {k: tc[k] for k in _BASE_KEYS if tc.get(k) is not None}
    if meta is not None:
        out["_meta"] = meta
    return out


def _selected(tc: JSON) -> JSON:
    return {"selectedOption": tc["selectedOption"]} if tc.get("selectedOption") else {}


def _content(tc: JSON) -> JSON:
    return {"content": tc["content"]} if tc.get("content") else {}


def _spread(d: JSON, extra: JSON) -> JSON:
    """JS object spread: later keys win, an explicit null removes the key."""
    out = dict(d)
    for k, v in extra.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = v
    return out


def start(state: JSON, action: JSON) -> JSON:
    turn = state.get("activeTurn")
    if not isinstance(turn, dict) or turn.get("id") != action.get("turnId"):
        return state
    tc = compact(
        {
            "status": STREAMING,
            "toolCallId": action.get("toolCallId"),
            "toolName": action.get("toolName"),
            "displayName": action.get("displayName"),
            "intention": action.get("intention"),
            "contributor": action.get("contributor"),
            "_meta": action.get("_meta"),
        }
    )
    parts = [*turn.get("responseParts", []), {"kind": "toolCall", "toolCall": tc}]
    return {**state, "activeTurn": {**turn, "responseParts": parts}}


def _delta(action: JSON) -> Any:
    def fn(tc: JSON) -> JSON:
        if tc.get("status") != STREAMING:
            return tc
        out = dict(tc)
        content = action.get("content")
        if isinstance(content, str):  # optional since 0.7.0's release: no content, no input
            out["partialInput"] = tc.get("partialInput", "") + content
        if action.get("_meta") is not None:
            out["_meta"] = action["_meta"]
        if action.get("invocationMessage") is not None:
            out["invocationMessage"] = action["invocationMessage"]
        return out

    return fn


def _first(*values: Any) -> Any:
    """JS `a ?? b`: the first value that is not absent."""
    return next((v for v in values if v is not None), None)


def _refined_contributor(current: Any, offered: Any) -> Any:
    """Client execution ownership is fixed at start: a later contributor never changes it."""
    if not offered:
        return current
    if isinstance(current, dict) and current.get("kind") == "client":
        same = (
            isinstance(offered, dict)
            and offered.get("kind") == "client"
            and offered.get("clientId") == current.get("clientId")
        )
        return offered if same else current
    if isinstance(offered, dict) and offered.get("kind") == "client":
        return current  # a late client contributor: ownership must be set at start
    return offered


def _ready(action: JSON) -> Any:
    def fn(tc: JSON) -> JSON:
        status = tc.get("status")
        if status not in (STREAMING, RUNNING, PENDING):
            return tc
        b = base(tc, action.get("_meta"))
        b = compact(
            {
                **b,
                "contributor": _refined_contributor(
                    tc.get("contributor"), action.get("contributor")
                ),
                "intention": _first(action.get("intention"), tc.get("intention")),
            }
        )
        tool_input = action.get("toolInput")
        if tool_input is None and status != STREAMING:
            tool_input = tc.get("toolInput")
        if action.get("confirmed"):
            return compact(
                {
                    "status": RUNNING,
                    **b,
                    "invocationMessage": action.get("invocationMessage"),
                    "toolInput": tool_input,
                    "confirmed": action.get("confirmed"),
                }
            )
        pending = tc if status == PENDING else {}
        fields = {
            k: action.get(k) if action.get(k) is not None else pending.get(k)
            for k in (
                "confirmationTitle",
                "riskAssessment",
                "edits",
                "editable",
                "options",
            )
        }
        return compact(
            {
                "status": PENDING,
                **b,
                "invocationMessage": action.get("invocationMessage"),
                "toolInput": tool_input,
                **fields,
            }
        )

    return fn


def _confirmed(action: JSON) -> Any:
    def fn(tc: JSON) -> JSON:
        if tc.get("status") != PENDING:
            return tc
        b = base(tc, action.get("_meta"))
        wanted = action.get("selectedOptionId")
        options = tc.get("options") or []
        option = next((o for o in options if wanted and o.get("id") == wanted), None)
        extra = {"selectedOption": option} if option else {}
        if action.get("approved"):
            # Only inline (string) input can be edited; referenced input is swapped at its resource.
            edited = action.get("editedToolInput") if isinstance(tc.get("toolInput"), str) else None
            return compact(
                {
                    "status": RUNNING,
                    **b,
                    "invocationMessage": tc.get("invocationMessage"),
                    "toolInput": edited if edited is not None else tc.get("toolInput"),
                    "confirmed": action.get("confirmed"),
                    **extra,
                }
            )
        return compact(
            {
                "status": CANCELLED,
                **b,
                "invocationMessage": tc.get("invocationMessage"),
                "toolInput": tc.get("toolInput"),
                "reason": action.get("reason"),
                "reasonMessage": action.get("reasonMessage"),
                "userSuggestion": action.get("userSuggestion"),
                **extra,
            }
        )

    return fn


def _complete(action: JSON) -> Any:
    result: JSON = action.get("result") or {}

    def fn(tc: JSON) -> JSON:
        status = tc.get("status")
        if status not in (RUNNING, PENDING, AUTH):
            return tc
        # From auth-required only a failed result (the client cancelling) is valid.
        if status == AUTH and result.get("success"):
            return tc
        was_running = status in (RUNNING, AUTH)
        confirmed = tc.get("confirmed") if was_running else "not-needed"
        next_status = (
            PENDING_RESULT
            if action.get("requiresResultConfirmation") and status != AUTH
            else COMPLETED
        )
        out = compact(
            {
                "status": next_status,
                **base(tc, action.get("_meta")),
                "invocationMessage": tc.get("invocationMessage"),
                "toolInput": tc.get("toolInput"),
                "confirmed": confirmed,
                **(_selected(tc) if was_running else {}),
                **(_content(tc) if status == AUTH else {}),
            }
        )
        return _spread(out, result)

    return fn


def _result_confirmed(action: JSON) -> Any:
    def fn(tc: JSON) -> JSON:
        if tc.get("status") != PENDING_RESULT:
            return tc
        b = base(tc, action.get("_meta"))
        if action.get("approved"):
            kept = ("success", "pastTenseMessage", "content", "structuredContent", "error")
            return compact(
                {
                    "status": COMPLETED,
                    **b,
                    "invocationMessage": tc.get("invocationMessage"),
                    "toolInput": tc.get("toolInput"),
                    "confirmed": tc.get("confirmed"),
                    **_selected(tc),
                    **{k: tc.get(k) for k in kept},
                }
            )
        return compact(
            {
                "status": CANCELLED,
                **b,
                "invocationMessage": tc.get("invocationMessage"),
                "toolInput": tc.get("toolInput"),
                "reason": "result-denied",
                **_selected(tc),
            }
        )

    return fn


def _content_changed(action: JSON) -> Any:
    def fn(tc: JSON) -> JSON:
        if tc.get("status") != RUNNING:
            return tc
        out = _spread(tc, {"content": action.get("content")})
        if action.get("_meta") is not None:
            out["_meta"] = action["_meta"]
        return out

    return fn


def _auth_required(action: JSON) -> Any:
    def fn(tc: JSON) -> JSON:
        contributor = tc.get("contributor")
        if tc.get("status") != RUNNING or not isinstance(contributor, dict):
            return tc
        if contributor.get("kind") != "mcp":  # only MCP tools can pause on auth
            return tc
        return compact(
            {
                "status": AUTH,
                **base(tc, action.get("_meta")),
                "contributor": contributor,
                "invocationMessage": tc.get("invocationMessage"),
                "toolInput": tc.get("toolInput"),
                "confirmed": tc.get("confirmed"),
                **_selected(tc),
                **_content(tc),
                "auth": action.get("auth"),
            }
        )

    return fn


def _auth_resolved(action: JSON) -> Any:
    def fn(tc: JSON) -> JSON:
        if tc.get("status") != AUTH:
            return tc
        return compact(
            {
                "status": RUNNING,
                **base(tc, action.get("_meta")),
                "invocationMessage": tc.get("invocationMessage"),
                "toolInput": tc.get("toolInput"),
                "confirmed": tc.get("confirmed"),
                **_selected(tc),
                **_content(tc),
            }
        )

    return fn


_UPDATERS = {
    "chat/toolCallDelta": (_delta, False),
    "chat/toolCallReady": (_ready, True),
    "chat/toolCallConfirmed": (_confirmed, True),
    "chat/toolCallComplete": (_complete, True),
    "chat/toolCallResultConfirmed": (_result_confirmed, True),
    "chat/toolCallContentChanged": (_content_changed, False),
    "chat/toolCallAuthRequired": (_auth_required, True),
    "chat/toolCallAuthResolved": (_auth_resolved, True),
}

TOOL_CALL_ACTIONS = frozenset({"chat/toolCallStart", *_UPDATERS})


def reduce_tool_call(state: JSON, action: JSON) -> JSON:
    """Apply one `chat/toolCall*` action; the status is re-derived where it can change."""
    kind = action.get("type")
    if kind == "chat/toolCallStart":
        return start(state, action)
    make, refresh = _UPDATERS[str(kind)]
    nxt = update_tool_calls(state, action.get("turnId"), action.get("toolCallId"), make(action))
    return refresh_status(nxt) if refresh else nxt
