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
"""

from __future__ import annotations

from typing import Any

import hypothesis_jsonschema._from_schema as _from_schema
from hypothesis_jsonschema._canonicalise import encode_canonical_json

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


def installed() -> bool:
    """Whether hypothesis-jsonschema builds its strategies through `_built_once`."""
    return getattr(_from_schema, "__from_schema", None) is _built_once


if _BUILD is not None:
    setattr(_from_schema, "__from_schema", _built_once)
