"""Question interactions <-> AHP chat input requests, both directions.

One module owns the id scheme so the two tables agree on it: question ``i`` of an interaction is
AHP question ``q<i>``; a choice's option id is the field's enum value when the question has a
typed field with one value per choice (AHP: "for MCP enums the option id is the enum string"),
otherwise the choice text itself (or ``c<i>`` when choices repeat). A plan review becomes a
request with a single-select ``action`` question and a free-text ``feedback`` question.

Answers flow back as agentapi's ``Answer.answers``: one list of strings per question holding the
chosen choices' texts and/or custom text. Anything that does not fit (unknown option, free text
where none is allowed, a typed field's bounds, a missing required answer) raises ``AnswerError``
so it is rejected before it reaches the provider.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ahp_bridge.agentapi import (
    Answer,
    Field,
    Interaction,
    InteractionKind,
    PlanAnswer,
    Question,
)

from ._wire import drop_none

PLAN_ACTION_QUESTION = "action"
PLAN_FEEDBACK_QUESTION = "feedback"

_PLAN_LABELS = {
    "autopilot": "Implement on autopilot",
    "autopilot_fleet": "Implement on autopilot with a fleet of agents",
    "interactive": "Implement interactively",
    "exit_only": "Leave plan mode without implementing",
}


_TRUE = frozenset({"1", "t", "true", "yes"})
_FALSE = frozenset({"0", "f", "false", "no"})


_ANSWER_KINDS = {
    "text": "text",
    "number": "number",
    "integer": "number",
    "boolean": "boolean",
    "single-select": "selected",
    "multi-select": "selected-many",
}
"""The ``ChatInputAnswerValue`` kind each ``ChatInputQuestion`` kind takes."""


class AnswerError(ValueError):
    """An AHP answer that does not fit the provider's question; its text says why."""


def question_id(index: int) -> str:
    """The AHP question id of the interaction's question ``index``."""
    return f"q{index}"


def option_ids(question: Question) -> list[str]:
    """AHP option ids for the question's choices, in order (see the module docstring)."""
    choices = list(question.choices)
    field = question.field
    if (
        field is not None
        and len(field.values) == len(choices)
        and len(set(field.values)) == len(field.values)
    ):
        return list(field.values)
    if len(set(choices)) == len(choices):
        return choices
    return [f"c{index}" for index in range(len(choices))]


def input_request(interaction: Interaction) -> dict[str, Any]:
    """The ``ChatInputRequest`` for a pending question or plan-review interaction."""
    message = interaction.title
    if interaction.detail:
        message = f"{message}\n\n{interaction.detail}" if message else interaction.detail
    request: dict[str, Any] = {"id": interaction.id}
    if interaction.kind == InteractionKind.PLAN_REVIEW:
        request.update(_plan_request(interaction, message))
        return request
    if message:
        request["message"] = message
    elicitation = interaction.elicitation
    if elicitation is not None and elicitation.url:
        request["url"] = elicitation.url
    questions = [_question(index, q) for index, q in enumerate(interaction.questions)]
    if questions:
        request["questions"] = questions
    return request


def _plan_request(interaction: Interaction, message: str) -> dict[str, Any]:
    plan = interaction.plan
    body = message
    if plan is not None and plan.summary:
        body = f"{body}\n\n{plan.summary}" if body else plan.summary
    if plan is not None and plan.content:
        body = f"{body}\n\n{plan.content}" if body else plan.content
    actions = list(plan.actions) if plan is not None else []
    recommended = plan.recommended if plan is not None else None
    options = [
        drop_none(
            {
                "id": str(action),
                "label": _PLAN_LABELS.get(str(action), str(action)),
                "recommended": True if action == recommended else None,
            }
        )
        for action in actions
    ]
    questions: list[dict[str, Any]] = []
    if options:
        questions.append(
            {
                "kind": "single-select",
                "id": PLAN_ACTION_QUESTION,
                "message": "How should the plan be carried out?",
                "options": options,
            }
        )
    questions.append(
        {
            "kind": "text",
            "id": PLAN_FEEDBACK_QUESTION,
            "message": "Or give feedback so the agent revises the plan",
        }
    )
    return drop_none({"message": body or None, "questions": questions})


def _question(index: int, question: Question) -> dict[str, Any]:
    base: dict[str, Any] = {"id": question_id(index), "message": question.text or question.header}
    if question.header and question.text:
        base["title"] = question.header
    field = question.field
    if field is None:
        base["required"] = True
        if not question.choices:
            return {"kind": "text", **base}
        return {
            "kind": "multi-select" if question.multiple else "single-select",
            **base,
            "options": _options(question),
            **({"allowFreeformInput": True} if question.custom else {}),
        }
    if field.required:
        base["required"] = True
    return _field_question(base, question, field)


def _options(question: Question) -> list[dict[str, Any]]:
    return [
        {"id": option_id, "label": choice}
        for option_id, choice in zip(option_ids(question), question.choices, strict=True)
    ]


def _field_question(base: dict[str, Any], question: Question, field: Field) -> dict[str, Any]:
    kind = field.type
    if kind == "boolean":
        return {"kind": "boolean", **base}
    if kind in ("number", "integer") and not question.choices:
        return drop_none({"kind": kind, **base, "min": field.minimum, "max": field.maximum})
    if kind == "array":
        return drop_none(
            {
                "kind": "multi-select",
                **base,
                "options": _options(question),
                "allowFreeformInput": True if question.custom else None,
                "min": field.min_items,
                "max": field.max_items,
            }
        )
    if question.choices:
        return drop_none(
            {
                "kind": "single-select",
                **base,
                "options": _options(question),
                "allowFreeformInput": True if question.custom else None,
            }
        )
    return drop_none(
        {
            "kind": "text",
            **base,
            "format": field.format or None,
            "min": field.min_length,
            "max": field.max_length,
        }
    )


def answer_from_input(interaction: Interaction, answers: Mapping[str, Mapping[str, Any]]) -> Answer:
    """The agentapi ``Answer`` for an accepted input request with the merged AHP ``answers``.

    Raises ``AnswerError`` when an answer does not fit its question.
    """
    if interaction.kind == InteractionKind.PLAN_REVIEW:
        return _plan_answer(interaction, answers)
    known = {question_id(index) for index in range(len(interaction.questions))}
    unknown = sorted(set(answers) - known)
    if unknown:
        raise AnswerError(f"no question {unknown[0]!r} in request {interaction.id!r}")
    rows: list[list[str]] = []
    for index, question in enumerate(interaction.questions):
        qid = question_id(index)
        values = _values(question, qid, answers.get(qid))
        _check(question, qid, values)
        rows.append(values)
    return Answer(answers=rows)


def _plan_answer(interaction: Interaction, answers: Mapping[str, Mapping[str, Any]]) -> Answer:
    unknown = sorted(set(answers) - {PLAN_ACTION_QUESTION, PLAN_FEEDBACK_QUESTION})
    if unknown:
        raise AnswerError(f"no question {unknown[0]!r} in plan review {interaction.id!r}")
    action = _submitted(answers.get(PLAN_ACTION_QUESTION))
    feedback = _submitted(answers.get(PLAN_FEEDBACK_QUESTION))
    offered = [str(a) for a in interaction.plan.actions] if interaction.plan is not None else []
    chosen = ""
    if action is not None:
        if action.get("kind") != "selected" or action.get("value") not in offered:
            raise AnswerError(f"{PLAN_ACTION_QUESTION!r} must select one of {offered}")
        chosen = str(action["value"])
    text = ""
    if feedback is not None:
        if feedback.get("kind") != "text" or not isinstance(feedback.get("value"), str):
            raise AnswerError(f"{PLAN_FEEDBACK_QUESTION!r} takes text")
        text = feedback["value"].strip()
    if bool(chosen) == bool(text):
        raise AnswerError("a plan review takes exactly one of an action or feedback")
    if chosen:
        return Answer(plan=PlanAnswer(action=chosen))
    return Answer(plan=PlanAnswer(feedback=text))


def _submitted(answer: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """The value of a draft or submitted answer; None when absent or skipped."""
    if answer is None or answer.get("state") == "skipped":
        return None
    value = answer.get("value")
    if not isinstance(value, Mapping):
        raise AnswerError("an answer must carry a value")
    return value


def _values(question: Question, qid: str, answer: Mapping[str, Any] | None) -> list[str]:
    if answer is not None and answer.get("state") == "skipped":
        return [str(v) for v in answer.get("freeformValues") or [] if str(v).strip()]
    value = _submitted(answer)
    if value is None:
        return []
    kind = value.get("kind")
    raw = value.get("value")
    expected = _ANSWER_KINDS[_question(0, question)["kind"]]
    if kind == "text" and expected == "selected" and question.custom and isinstance(raw, str):
        # The user typed an answer of their own (state/answers.free_text_answer).
        return [raw] if raw.strip() else []
    if kind != expected:
        raise AnswerError(f"{qid}: expected a {expected!r} answer, not {kind!r}")
    if kind == "text":
        if not isinstance(raw, str):
            raise AnswerError(f"{qid}: a text answer must be a string")
        return [raw] if raw != "" else []
    if kind == "number":
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
            raise AnswerError(f"{qid}: a number answer must be a finite number")
        return [_number(raw)]
    if kind == "boolean":
        if not isinstance(raw, bool):
            raise AnswerError(f"{qid}: a boolean answer must be true or false")
        return [_boolean_choice(question, raw)]
    if kind == "selected":
        chosen = [raw] if raw not in (None, "") else []
    else:
        if not isinstance(raw, list):
            raise AnswerError(f"{qid}: a multi-select answer must be a list")
        chosen = list(raw)
    by_id = dict(zip(option_ids(question), question.choices, strict=True))
    texts: list[str] = []
    for option in chosen:
        if not isinstance(option, str) or option not in by_id:
            raise AnswerError(f"{qid}: {option!r} is not one of the offered options")
        texts.append(by_id[option])
    freeform = [str(v) for v in value.get("freeformValues") or [] if str(v).strip()]
    if freeform and not question.custom:
        raise AnswerError(f"{qid}: this question takes no free-form text")
    return texts + freeform


def _number(value: float) -> str:
    if isinstance(value, int) or value.is_integer():
        return str(int(value))
    return repr(float(value))


def _boolean_choice(question: Question, value: bool) -> str:
    """The choice a boolean field sends: Go offers booleans as the choices "Yes" and "No"."""
    field = question.field
    wanted = _TRUE if value else _FALSE
    if field is not None and len(field.values) == len(question.choices):
        for choice, sent in zip(question.choices, field.values, strict=True):
            if sent.strip().lower() in wanted:
                return choice
    label = "yes" if value else "no"
    for choice in question.choices:
        if choice.lower() == label:
            return choice
    return "Yes" if value else "No"


def _check(question: Question, qid: str, values: Sequence[str]) -> None:
    field = question.field
    if field is None:
        if not values:
            raise AnswerError(f"{qid}: an answer is required")
        if not question.multiple and len(values) > 1:
            raise AnswerError(f"{qid}: only one answer is allowed")
        if question.choices and not question.custom:
            extra = [v for v in values if v not in question.choices]
            if extra:
                raise AnswerError(f"{qid}: {extra[0]!r} is not one of the choices")
        return
    try:
        _value, answered = question.field_value(list(values))
    except ValueError as exc:
        raise AnswerError(f"{qid}: the answer {exc}") from None
    if field.required and not answered:
        raise AnswerError(f"{qid}: an answer is required")
