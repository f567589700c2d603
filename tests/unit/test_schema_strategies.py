"""The fuzzers' strategy memo (`tests/support/schema_strategies.py`) is installed, reuses a
strategy only for an equal schema with the same alphabet and formats, and draws valid values."""

from __future__ import annotations

import hypothesis_jsonschema._from_schema as from_schema_module
from hypothesis import given, settings
from hypothesis_jsonschema import from_schema
from hypothesis_jsonschema._from_schema import CharStrategy
from jsonschema import Draft202012Validator

from tests.support import schema_strategies

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
