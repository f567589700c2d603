"""Question.field_value: the bridge rejects form answers that do not fit the field."""

from __future__ import annotations

import pytest

from ahp_bridge.agentapi import (
    FIELD_ARRAY,
    FIELD_BOOLEAN,
    FIELD_INTEGER,
    FIELD_NUMBER,
    FIELD_STRING,
    FORMAT_DATE,
    FORMAT_DATE_TIME,
    FORMAT_EMAIL,
    FORMAT_URI,
    Field,
    Question,
)


def q(field: Field, choices: list[str] | None = None, custom: bool = False) -> Question:
    return Question(text="?", choices=choices or [], custom=custom, field=field)


def test_question_without_field_is_refused() -> None:
    with pytest.raises(ValueError, match="is not a form field"):
        Question(text="?").field_value(["x"])


def test_required_and_optional_empty_answers() -> None:
    assert q(Field(name="n", type=FIELD_STRING)).field_value([]) == (None, False)
    with pytest.raises(ValueError, match="is required"):
        q(Field(name="n", type=FIELD_STRING, required=True)).field_value([])
    with pytest.raises(ValueError, match="has an empty answer"):
        q(Field(name="n", type=FIELD_STRING)).field_value(["  "])


def test_single_value_fields_take_one_answer() -> None:
    with pytest.raises(ValueError, match="accepts one answer"):
        q(Field(name="n", type=FIELD_STRING)).field_value(["a", "b"])


def test_string_length_bounds_count_characters() -> None:
    f = Field(name="n", type=FIELD_STRING, min_length=2, max_length=3)
    assert q(f).field_value(["éé"]) == ("éé", True)
    assert q(f).field_value(["日本語"]) == ("日本語", True)
    with pytest.raises(ValueError, match="needs at least 2 characters"):
        q(f).field_value(["é"])
    with pytest.raises(ValueError, match="takes at most 3 characters"):
        q(f).field_value(["abcd"])


@pytest.mark.parametrize(
    ("fmt", "good", "bad"),
    [
        (FORMAT_EMAIL, "a.b@example.com", "not an email"),
        (FORMAT_EMAIL, "x@y.org", "x@@y.org"),
        (FORMAT_URI, "https://example.com/a?b=1", "example.com/no-scheme"),
        (FORMAT_URI, "mailto:a@b.c", "has space:x y"),
        (FORMAT_DATE, "2026-02-28", "2026-02-30"),
        (FORMAT_DATE, "2026-12-01", "01/12/2026"),
        (FORMAT_DATE_TIME, "2026-02-28T10:00:00Z", "2026-02-28 10:00"),
        (FORMAT_DATE_TIME, "2026-02-28T10:00:00.5+02:00", "2026-02-28T25:00:00Z"),
    ],
)
def test_string_formats(fmt: str, good: str, bad: str) -> None:
    f = Field(name="n", type=FIELD_STRING, format=fmt)
    assert q(f).field_value([good]) == (good, True)
    with pytest.raises(ValueError, match=f"is not a valid {fmt}"):
        q(f).field_value([bad])


def test_unknown_format_and_type_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown format 'ipv4'"):
        q(Field(name="n", type=FIELD_STRING, format="ipv4")).field_value(["1.2.3.4"])
    with pytest.raises(ValueError, match="unknown type 'object'"):
        q(Field(name="n", type="object")).field_value(["{}"])


def test_number_bounds() -> None:
    f = Field(name="n", type=FIELD_NUMBER, minimum=-1.5, maximum=10)
    assert q(f).field_value([" 2.25 "]) == (2.25, True)
    assert q(f).field_value(["-1.5"]) == (-1.5, True)
    assert q(f).field_value(["10"]) == (10.0, True)
    with pytest.raises(ValueError, match=r"must be at least -1\.5"):
        q(f).field_value(["-2"])
    with pytest.raises(ValueError, match=r"must be at most 10$"):
        q(f).field_value(["10.01"])
    for bad in ("abc", "nan", "inf", "-Infinity"):
        with pytest.raises(ValueError, match="is not a number"):
            q(f).field_value([bad])


def test_integer_is_whole_and_bounded() -> None:
    f = Field(name="n", type=FIELD_INTEGER, minimum=1, maximum=5)
    value, answered = q(f).field_value(["3"])
    assert (value, answered) == (3, True) and isinstance(value, int)
    assert q(f).field_value(["4.0"]) == (4, True)
    with pytest.raises(ValueError, match="is not a whole number"):
        q(f).field_value(["2.5"])
    with pytest.raises(ValueError, match="must be at least 1"):
        q(f).field_value(["0"])
    with pytest.raises(ValueError, match="must be at most 5"):
        q(f).field_value(["6"])


def test_enumerated_string_maps_choices_to_values() -> None:
    f = Field(name="color", type=FIELD_STRING, values=["r", "g"])
    question = q(f, choices=["Red", "Green"])
    assert question.field_value(["Green"]) == ("g", True)
    with pytest.raises(ValueError, match="only accepts the listed choices"):
        question.field_value(["Blue"])


def test_choices_without_values_send_the_choice_text() -> None:
    assert q(Field(name="n", type=FIELD_STRING), ["A", "B"]).field_value(["B"]) == ("B", True)


def test_boolean_takes_yes_or_no_choices() -> None:
    f = Field(name="ok", type=FIELD_BOOLEAN, values=["true", "false"])
    question = q(f, choices=["Yes", "No"])
    assert question.field_value(["Yes"]) == (True, True)
    assert question.field_value(["No"]) == (False, True)
    with pytest.raises(ValueError, match="only accepts the listed choices"):
        question.field_value(["Maybe"])
    broken = q(Field(name="ok", type=FIELD_BOOLEAN, values=["sure", "nah"]), ["Yes", "No"])
    with pytest.raises(ValueError, match="is not yes or no"):
        broken.field_value(["Yes"])


def test_numeric_enum_sends_a_number_within_bounds() -> None:
    f = Field(name="n", type=FIELD_INTEGER, values=["1", "2", "30"], maximum=10)
    question = q(f, choices=["one", "two", "thirty"])
    assert question.field_value(["two"]) == (2, True)
    with pytest.raises(ValueError, match="must be at most 10"):
        question.field_value(["thirty"])


def test_array_maps_each_choice_and_checks_item_bounds() -> None:
    f = Field(name="tags", type=FIELD_ARRAY, values=["a", "b", "c"], min_items=2, max_items=2)
    question = q(f, choices=["A", "B", "C"])
    assert question.field_value(["C", "A"]) == (["c", "a"], True)
    with pytest.raises(ValueError, match="needs at least 2 choices"):
        question.field_value(["A"])
    with pytest.raises(ValueError, match="takes at most 2 choices"):
        question.field_value(["A", "B", "C"])
    with pytest.raises(ValueError, match="takes each choice once"):
        question.field_value(["A", "A"])
    with pytest.raises(ValueError, match="only accepts the listed choices"):
        question.field_value(["A", "Z"])
    optional = q(Field(name="tags", type=FIELD_ARRAY), choices=["A"])
    assert optional.field_value([]) == (None, False)


def test_clone_shares_nothing() -> None:
    f = Field(name="n", type=FIELD_ARRAY, values=["a"], min_items=1)
    c = f.clone()
    c.values.append("b")
    assert f.values == ["a"] and c == Field(
        name="n", type=FIELD_ARRAY, values=["a", "b"], min_items=1
    )
