"""Checks a chat input answer against the question it answers.

Kinds are always checked; bounds (min/max) only once an answer is submitted,
so a draft being typed is not rejected half way.
"""

from __future__ import annotations

import math
from typing import Any

ANSWER_STATES = frozenset({"draft", "submitted", "skipped"})

# question kind -> the answer value kind it takes
_VALUE_KIND = {
    "text": "text",
    "number": "number",
    "integer": "number",
    "boolean": "boolean",
    "single-select": "selected",
    "multi-select": "selected-many",
}


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _bounds(q: dict[str, Any], measure: float, what: str) -> str | None:
    lo: Any = q.get("min")
    hi: Any = q.get("max")
    if _is_number(lo) and measure < lo:
        return f"{what} {measure:g} is below the minimum {lo:g}"
    if _is_number(hi) and measure > hi:
        return f"{what} {measure:g} is above the maximum {hi:g}"
    return None


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _option_ids(q: dict[str, Any]) -> set[Any]:
    return {o.get("id") for o in q.get("options") or [] if isinstance(o, dict)}


def _value_problem(q: dict[str, Any], value: dict[str, Any], final: bool) -> str | None:
    kind: Any = q.get("kind")
    v: Any = value.get("value")
    if kind == "text":
        if not isinstance(v, str):
            return "a text answer needs a string value"
        return _bounds(q, len(v), "length") if final else None
    if kind in ("number", "integer"):
        if not _is_number(v):
            return "a number answer needs a finite numeric value"
        if kind == "integer" and not float(v).is_integer():
            return f"{v!r} is not an integer"
        return _bounds(q, v, "value") if final else None
    if kind == "boolean":
        return None if isinstance(v, bool) else "a boolean answer needs true or false"
    free = value.get("freeformValues")
    if free is not None and not _strings(free):
        return "freeformValues must be a list of strings"
    if free and not q.get("allowFreeformInput"):
        return "this question does not accept free-form input"
    options = _option_ids(q)
    if kind == "single-select":
        if not isinstance(v, str):
            return "a single-select answer needs a string value"
        if v not in options and not (q.get("allowFreeformInput") and free):
            return f"{v!r} is not one of the options"
        return None
    # multi-select
    if not _strings(v):
        return "a multi-select answer needs a list of option ids"
    unknown = [x for x in v if x not in options]
    if unknown:
        return f"{unknown[0]!r} is not one of the options"
    if len(set(v)) != len(v):
        return "an option is selected more than once"
    return _bounds(q, len(v), "selection count") if final else None


def free_text_answer(question: dict[str, Any], value: Any) -> bool:
    """A `text` value answering a single-select question that allows free-form input: what
    clients send when the user typed an answer of their own (the spec's single-select value
    would carry it in `freeformValues`); taken as that free-form answer, not refused."""
    return (
        question.get("kind") == "single-select"
        and bool(question.get("allowFreeformInput"))
        and isinstance(value, dict)
        and value.get("kind") == "text"
        and isinstance(value.get("value"), str)
    )


def answer_problem(question: dict[str, Any], answer: Any) -> str | None:
    """Why `answer` cannot answer `question`, or None if it can."""
    if not isinstance(answer, dict) or answer.get("state") not in ANSWER_STATES:
        return "an answer needs a state of draft, submitted or skipped"
    if answer["state"] == "skipped":
        free = answer.get("freeformValues")
        return None if free is None or _strings(free) else "freeformValues must be strings"
    value = answer.get("value")
    expected = _VALUE_KIND.get(str(question.get("kind")))
    if expected is None:  # a question kind from a newer protocol: nothing to check
        return None
    if free_text_answer(question, value):
        return None
    if not isinstance(value, dict) or value.get("kind") != expected:
        return f"a {question.get('kind')} question takes a {expected!r} value"
    return _value_problem(question, value, answer["state"] == "submitted")
