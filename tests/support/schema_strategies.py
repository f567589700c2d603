"""hypothesis-jsonschema's strategies, built once per schema instead of once per drawn property.

hypothesis-jsonschema (pinned 0.23.1 in pyproject.toml) builds the strategies of an object's
properties while it draws the object: for every property of every drawn object it resolves and
canonicalises that property's schema again and builds a fresh strategy for it (its private
``__from_schema``, called from ``from_object_schema`` through ``merged_as_strategies``). The
fuzzers draw thousands of properties a run, and most of their CPU went there.

A strategy is a function of its schema, alphabet and formats only, and hypothesis strategies
are immutable, so the strategy built for an equal schema (equal canonical JSON) with the same
alphabet and formats is reused: the same values are drawn, built once. Importing this module
installs it; if a later hypothesis-jsonschema renames the function, nothing is installed and
the fuzzers are only slower.

The fuzzers draw through :func:`strategy`, which adds two things. A def's ``$ref``s are inlined
here (:func:`inline_refs`) rather than by hypothesis-jsonschema's own resolver, which also
resolves and canonicalises every def the schema carries under ``$defs``, once per def drawn
from: 2 s of the 0.7 action fuzzer's start and 6 s of the 1.0 one's. And every schema is drawn
with one alphabet, so the memo shares what two defs have in common (a ``turnId``, a ``Turn``).
"""

from __future__ import annotations

from typing import Any

import hypothesis_jsonschema._from_schema as _from_schema
from hypothesis import strategies as st
from hypothesis_jsonschema._canonicalise import encode_canonical_json
from hypothesis_jsonschema._from_schema import CharStrategy

_BUILD = getattr(_from_schema, "__from_schema", None)

#: (canonical schema, id(alphabet), id(formats)) -> (alphabet, formats, strategy); the objects
#: themselves are kept, so an id is never reused for another while its entry exists.
_BUILT: dict[tuple[str, int, int], tuple[Any, Any, Any]] = {}


def _built_once(schema: Any, *, alphabet: Any, custom_formats: Any) -> Any:
    assert _BUILD is not None
    key = (encode_canonical_json(schema), id(alphabet), id(custom_formats))
    hit = _BUILT.get(key)
    if hit is not None and hit[0] is alphabet and hit[1] is custom_formats:
        return hit[2]
    strategy = _BUILD(schema, alphabet=alphabet, custom_formats=custom_formats)
    _BUILT[key] = (alphabet, custom_formats, strategy)
    return strategy


#: What `hypothesis_jsonschema.from_schema` draws strings from by default (any code point, as
#: UTF-8 can carry), made once so that every schema shares it.
_ALPHABET = CharStrategy.from_args(allow_x00=True, codec="utf-8")

_DEFS = "#/$defs/"


def inline_refs(defs: dict[str, Any], name: str) -> Any:
    """``defs[name]`` with every ``{"$ref": "#/$defs/X"}`` in it replaced by ``defs["X"]``
    (itself inlined), and a ``$ref`` with sibling keywords by an ``allOf`` of both, as JSON
    Schema means it. A def that reaches itself cannot be inlined: ValueError names the cycle."""

    def inline(node: Any, stack: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inline(v, stack) for v in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return {k: inline(v, stack) for k, v in node.items()}
        if not ref.startswith(_DEFS) or ref[len(_DEFS) :] not in defs:
            raise ValueError(f"{' -> '.join(stack)}: $ref {ref!r} is not one of the defs")
        target = ref[len(_DEFS) :]
        if target in stack:
            raise ValueError(f"{' -> '.join((*stack, target))}: a def that reaches itself")
        resolved = inline(defs[target], (*stack, target))
        rest = {k: inline(v, stack) for k, v in node.items() if k != "$ref"}
        return {"allOf": [rest, resolved]} if rest else resolved

    return inline(defs[name], (name,))


def strategy(defs: dict[str, Any], name: str) -> st.SearchStrategy[Any]:
    """hypothesis-jsonschema's strategy for the def ``name`` of ``defs``, refs inlined, built
    with the shared alphabet (what ``from_schema`` would draw, built once per schema)."""
    build = getattr(_from_schema, "__from_schema")
    strategy: st.SearchStrategy[Any] = build(
        inline_refs(defs, name), alphabet=_ALPHABET, custom_formats=None
    )
    return strategy


def installed() -> bool:
    """Whether hypothesis-jsonschema builds its strategies through `_built_once`."""
    return getattr(_from_schema, "__from_schema", None) is _built_once


if _BUILD is not None:
    setattr(_from_schema, "__from_schema", _built_once)
