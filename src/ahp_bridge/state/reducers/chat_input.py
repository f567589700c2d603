"""Chat input requests (`chat/inputRequested`, `inputAnswerChanged`, `inputCompleted`).

Requests live as `inputRequest` response parts of the active turn; an open
request is one without a `response`.
"""

from __future__ import annotations

from typing import Any

from .. import status as st
from ._util import JSON, put
from .chat_common import derive_status, with_parts


def find_open_request(state: JSON, request_id: object) -> tuple[int, JSON] | None:
    """(index, part) of the open input request `request_id` in the active turn."""
    turn = state.get("activeTurn")
    if not isinstance(turn, dict):
        return None
    for i, part in enumerate(turn.get("responseParts", [])):
        if (
            part.get("kind") == "inputRequest"
            and part.get("response") is None
            and (part.get("request") or {}).get("id") == request_id
        ):
            return i, part
    return None


def _replace_part(state: JSON, index: int, part: JSON) -> JSON:
    turn = state["activeTurn"]
    parts = list(turn.get("responseParts", []))
    parts[index] = part
    return with_parts(state, turn, parts)


def requested(state: JSON, action: JSON) -> JSON:
    """Upsert an open request part; earlier answers survive unless the request brings its own."""
    turn = state.get("activeTurn")
    request = action.get("request")
    if not isinstance(turn, dict) or not isinstance(request, dict):
        return state
    found = find_open_request(state, request.get("id"))
    if found is None:
        parts = [*turn.get("responseParts", []), {"kind": "inputRequest", "request": request}]
        nxt = with_parts(state, turn, parts)
    else:
        index, old = found
        answers = request.get("answers")
        if answers is None:
            answers = (old.get("request") or {}).get("answers")
        nxt = _replace_part(
            state, index, {"kind": "inputRequest", "request": put(request, "answers", answers)}
        )
    nxt["status"] = st.with_flag(derive_status(nxt), st.IS_READ, False)
    return nxt


def answer_changed(state: JSON, action: JSON) -> JSON:
    found = find_open_request(state, action.get("requestId"))
    if found is None:
        return state
    index, part = found
    request = part.get("request") or {}
    answers: dict[str, Any] = dict(request.get("answers") or {})
    question = str(action.get("questionId"))
    if action.get("answer") is None:
        answers.pop(question, None)
    else:
        answers[question] = action["answer"]
    new_part = {**part, "request": put(request, "answers", answers or None)}
    return _replace_part(state, index, new_part)


def completed(state: JSON, action: JSON) -> JSON:
    """Record the response and the final answers merged over synced drafts."""
    found = find_open_request(state, action.get("requestId"))
    if found is None:
        return state
    index, part = found
    request = part.get("request") or {}
    answers = {**(request.get("answers") or {}), **(action.get("answers") or {})}
    new_part = put(
        {**part, "request": put(request, "answers", answers or None)},
        "response",
        action.get("response"),
    )
    nxt = _replace_part(state, index, new_part)
    nxt["status"] = derive_status(nxt)
    return nxt
