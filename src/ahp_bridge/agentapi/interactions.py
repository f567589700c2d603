"""Interactions (permission requests, questions, plan reviews) and the answers to them."""

from __future__ import annotations

import math
import re
from datetime import date, datetime

from pydantic import Field as PydanticField

from ._base import GoModel, GoTime, Internal, OmitEmpty, OmitNil, OmitZero
from .constants import (
    FIELD_ARRAY,
    FIELD_BOOLEAN,
    FIELD_INTEGER,
    FIELD_NUMBER,
    FIELD_STRING,
    FORMAT_DATE,
    FORMAT_DATE_TIME,
    FORMAT_EMAIL,
    FORMAT_URI,
)
from .enums import InteractionKind, InteractionState, PlanAction
from .items import PlanReview

FieldValue = str | float | int | bool | list[str]
"""What a form field's answer sends: str, float (number), int (integer), bool or list[str]."""


class Option(GoModel):
    """One permission decision."""

    id: str
    label: str
    reject: OmitEmpty[bool] = False
    """Marks decisions that deny the request."""
    allow_once: OmitEmpty[bool] = False
    """Allows this one request and nothing more; yolo mode answers only with this option."""


class Field(GoModel):
    """One typed form field behind a question.

    An enumerated field (and a boolean, as "Yes" and "No") offers its question's choices;
    ``values`` holds what each choice sends, in the same order. Bounds left None do not apply.
    """

    name: str
    type: str
    """One of the FIELD_* constants."""
    required: OmitEmpty[bool] = False
    values: OmitEmpty[list[str]] = PydanticField(default_factory=list)
    format: OmitEmpty[str] = ""
    """One of the FORMAT_* constants for a string field, or ""."""
    minimum: OmitNil[float | None] = None
    maximum: OmitNil[float | None] = None
    min_length: OmitNil[int | None] = None
    """Bounds a string in characters (code points)."""
    max_length: OmitNil[int | None] = None
    min_items: OmitNil[int | None] = None
    """Bounds how many choices an array field takes."""
    max_items: OmitNil[int | None] = None

    def clone(self) -> Field:
        """A copy that shares nothing with this field."""
        return self.model_copy(deep=True)


class Elicitation(GoModel):
    """Marks a question interaction standing for a provider's structured request.

    A form's questions each carry a Field; a link (mode "url") has no questions and its URL
    is only shown: the user opens it, the service never does. Its answer may cancel
    (dismiss) as well as reject (decline) or answer (accept).
    """

    mode: str
    """ELICITATION_FORM or ELICITATION_URL."""
    source: OmitEmpty[str] = ""
    """Who asked, such as an MCP server; empty when unknown."""
    url: OmitEmpty[str] = ""

    def clone(self) -> Elicitation:
        """A copy that shares nothing with this elicitation."""
        return self.model_copy(deep=True)


_EMAIL = re.compile(r"[^@\s<>(),;:\"\[\]]+@[^@\s<>(),;:\"\[\]]+\.[^@\s<>(),;:\"\[\]]+")
_URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def _format_ok(fmt: str, value: str) -> bool:
    if fmt == FORMAT_EMAIL:
        return _EMAIL.fullmatch(value) is not None
    if fmt == FORMAT_URI:
        return _URI_SCHEME.match(value) is not None and not any(c.isspace() for c in value)
    if fmt == FORMAT_DATE:
        if _DATE.fullmatch(value) is None:
            return False
        try:
            date.fromisoformat(value)
        except ValueError:
            return False
        return True
    if fmt == FORMAT_DATE_TIME:
        if _DATE_TIME.fullmatch(value) is None:
            return False
        try:
            datetime.fromisoformat(value.upper())
        except ValueError:
            return False
        return True
    raise ValueError(f"has an unknown format {fmt!r}")


def _bound(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


class Question(GoModel):
    """One prompt inside a question interaction."""

    text: str
    header: OmitEmpty[str] = ""
    choices: OmitEmpty[list[str]] = PydanticField(default_factory=list)
    multiple: OmitEmpty[bool] = False
    """Allows selecting more than one choice."""
    custom: bool = False
    """Allows a free-form answer."""
    field: OmitNil[Field | None] = None
    """The typed form field this question asks for, on an elicitation form only."""

    def field_value(self, values: list[str]) -> tuple[FieldValue | None, bool]:
        """What ``values`` (the answer to this question) send for its field.

        Returns ``(value, answered)``: ``(None, False)`` when an optional field is left
        empty. Every bound the field carries is checked, so an answer that does not fit
        raises ValueError whose message completes "the answer ..." (e.g. "is required").

        Choices map through ``field.values``; a number or integer field with choices sends
        the mapped value as a number. Integer fields give ``int`` (Go gives a whole float64;
        both encode as the same JSON).
        """
        f = self.field
        if f is None:
            raise ValueError("is not a form field")
        if not values:
            if f.required:
                raise ValueError("is required")
            return None, False
        if any(not v.strip() for v in values):
            raise ValueError("has an empty answer")
        if f.type == FIELD_ARRAY:
            return self._array_value(f, values), True
        if len(values) > 1:
            raise ValueError("accepts one answer")
        value = values[0]
        if self.choices:
            value = self._choice_value(f, value)
            if f.type == FIELD_BOOLEAN:
                if value in _TRUE:
                    return True, True
                if value in _FALSE:
                    return False, True
                raise ValueError("is not yes or no")
            if f.type in (FIELD_NUMBER, FIELD_INTEGER):
                return _number_value(f, value.strip()), True
            return value, True
        if f.type == FIELD_STRING:
            return _string_value(f, value), True
        if f.type in (FIELD_NUMBER, FIELD_INTEGER):
            return _number_value(f, value.strip()), True
        if f.type == FIELD_BOOLEAN:
            raise ValueError("is a boolean field without yes and no choices")
        raise ValueError(f"has an unknown type {f.type!r}")

    def _choice_value(self, f: Field, value: str) -> str:
        try:
            index = self.choices.index(value)
        except ValueError:
            raise ValueError("only accepts the listed choices") from None
        return f.values[index] if index < len(f.values) else value

    def _array_value(self, f: Field, values: list[str]) -> list[str]:
        out: list[str] = []
        for value in values:
            mapped = self._choice_value(f, value)
            if mapped in out:
                raise ValueError("takes each choice once")
            out.append(mapped)
        if f.min_items is not None and len(out) < f.min_items:
            raise ValueError(f"needs at least {f.min_items} choices")
        if f.max_items is not None and len(out) > f.max_items:
            raise ValueError(f"takes at most {f.max_items} choices")
        return out


def _string_value(f: Field, value: str) -> str:
    n = len(value)
    if f.min_length is not None and n < f.min_length:
        raise ValueError(f"needs at least {f.min_length} characters")
    if f.max_length is not None and n > f.max_length:
        raise ValueError(f"takes at most {f.max_length} characters")
    if f.format and not _format_ok(f.format, value):
        raise ValueError(f"is not a valid {f.format}")
    return value


def _number_value(f: Field, value: str) -> float | int:
    try:
        n = float(value)
    except ValueError:
        raise ValueError("is not a number") from None
    if math.isnan(n) or math.isinf(n):
        raise ValueError("is not a number")
    if f.type == FIELD_INTEGER and not n.is_integer():
        raise ValueError("is not a whole number")
    if f.minimum is not None and n < f.minimum:
        raise ValueError(f"must be at least {_bound(f.minimum)}")
    if f.maximum is not None and n > f.maximum:
        raise ValueError(f"must be at most {_bound(f.maximum)}")
    return int(n) if f.type == FIELD_INTEGER else n


class AssistedReview(GoModel):
    """A provider's assisted review of one permission request.

    ``recommendation`` is "approve", "requireApproval", "excluded" or "error"; ``model`` is
    the reviewer, "" when it reported none.
    """

    recommendation: str = ""
    model: OmitEmpty[str] = ""
    reason: OmitEmpty[str] = ""


class Interaction(GoModel):
    """A provider request that needs the user."""

    id: str
    kind: InteractionKind
    title: str
    detail: OmitEmpty[str] = ""
    """Display text: command, paths, patterns, or tool arguments."""
    intention: OmitEmpty[str] = ""
    """The agent's own one-line reason for a permission request."""
    plan: OmitNil[PlanReview | None] = None
    options: OmitEmpty[list[Option]] = PydanticField(default_factory=list)
    """Permission decisions the provider accepts; Answer.decision must be one of their ids."""
    questions: OmitEmpty[list[Question]] = PydanticField(default_factory=list)
    """Question prompts; Answer.answers must have one entry per question."""
    state: InteractionState
    resolution: OmitEmpty[str] = ""
    time: GoTime = None
    agent_id: OmitEmpty[str] = ""
    """The subagent that asked, when the provider says so."""
    tool_call_id: OmitEmpty[str] = ""
    """The tool call (ItemKind.TOOL item id, same agent_id) this request is for or came from."""
    auto: OmitEmpty[bool] = False
    """Set by the host, never a provider: yolo or an approving review is answering it."""
    assisted: OmitZero[AssistedReview] = PydanticField(default_factory=AssistedReview)
    """The assisted review of a permission request; all-empty when not reviewed."""
    elicitation: OmitNil[Elicitation | None] = None
    """Set on a question standing for a form or a link; never answered by yolo mode."""


class PlanAnswer(GoModel):
    """Exactly one offered execution action, or nonblank feedback (refuses approval)."""

    action: OmitEmpty[PlanAction | None] = None
    feedback: OmitEmpty[str] = ""


class Answer(GoModel):
    """Responds to an interaction.

    Permission answers set ``decision``; question answers set ``answers`` (one list per
    question, holding chosen choices and/or a custom text); ``reject`` declines a question;
    ``cancel`` dismisses an elicitation without declining it.
    """

    plan: OmitNil[PlanAnswer | None] = None
    decision: OmitEmpty[str] = ""
    answers: OmitEmpty[list[list[str]]] = PydanticField(default_factory=list)
    reject: OmitEmpty[bool] = False
    cancel: OmitEmpty[bool] = False
    auto: Internal[bool] = False
    """An answer the host gave on its own (yolo). Internal: a client can never set it."""
