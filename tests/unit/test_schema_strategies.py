"""The fuzzers' strategy memo (`tests/support/schema_strategies.py`) is installed, reuses a
strategy only for an equal schema with the same alphabet and formats, and draws valid values;
its ref inliner keeps what a schema means, and refuses what it cannot inline."""

from __future__ import annotations

import json
from pathlib import Path

import hypothesis_jsonschema._from_schema as from_schema_module
import pytest
from hypothesis import given, settings
from hypothesis_jsonschema import from_schema
from hypothesis_jsonschema._from_schema import CharStrategy
from jsonschema import Draft202012Validator

from tests.support import schema_strategies

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer", "minimum": 3}, "b": {"enum": ["x", "y"]}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def test_an_equal_schema_gets_the_strategy_built_for_it_and_no_other() -> None:
    assert schema_strategies.installed()
    build = getattr(from_schema_module, "__from_schema")
    alphabet = CharStrategy.from_args(allow_x00=True, codec="utf-8")
    other = CharStrategy.from_args(allow_x00=True, codec="ascii")
    first = build(SCHEMA, alphabet=alphabet, custom_formats=None)
    reordered = dict(reversed(list(SCHEMA.items())))
    assert build(reordered, alphabet=alphabet, custom_formats=None) is first
    assert build(SCHEMA, alphabet=other, custom_formats=None) is not first
    assert build({**SCHEMA, "required": ["a"]}, alphabet=alphabet, custom_formats=None) is not first


@settings(max_examples=30, deadline=None, database=None)
@given(from_schema(SCHEMA))
def test_what_it_draws_is_valid(value: object) -> None:
    assert Draft202012Validator(SCHEMA).is_valid(value)


DEFS = {
    "Turn": {"type": "object", "properties": {"id": {"$ref": "#/$defs/Id"}}, "required": ["id"]},
    "Id": {"type": "string", "minLength": 1},
    "Named": {"$ref": "#/$defs/Id", "maxLength": 3},
    "Loop": {"type": "array", "items": {"$ref": "#/$defs/Loop"}},
    "Lost": {"$ref": "#/$defs/Nowhere"},
}


def test_refs_are_inlined_and_a_ref_with_siblings_is_an_all_of() -> None:
    assert schema_strategies.inline_refs(DEFS, "Turn") == {
        "type": "object",
        "properties": {"id": {"type": "string", "minLength": 1}},
        "required": ["id"],
    }
    assert schema_strategies.inline_refs(DEFS, "Named") == {
        "allOf": [{"maxLength": 3}, {"type": "string", "minLength": 1}]
    }


def test_a_def_that_reaches_itself_or_nothing_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="Loop -> Loop: a def that reaches itself"):
        schema_strategies.inline_refs(DEFS, "Loop")
    with pytest.raises(ValueError, match="Lost: \\$ref '#/\\$defs/Nowhere' is not one of the defs"):
        schema_strategies.inline_refs(DEFS, "Lost")


#: Defs with refs nested a few deep (a tool call's result and its content, a session's config).
DRAWN = ["ChatToolCallCompleteAction", "SessionConfigChangedAction"]


@pytest.mark.parametrize("name", DRAWN)
@pytest.mark.parametrize("version", ["0.7.0", "1.0.0"])
def test_what_a_def_draws_is_valid_for_the_def_with_its_refs(version: str, name: str) -> None:
    schema = json.loads((ROOT / "proto" / "ahp" / version / "ahp.schema.json").read_text())
    validator = Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})

    @settings(max_examples=8, deadline=None, database=None)
    @given(schema_strategies.strategy(schema["$defs"], name))
    def drawn_is_valid(value: object) -> None:
        assert validator.is_valid(value), value

    drawn_is_valid()
