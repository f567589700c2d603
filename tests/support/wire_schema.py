"""Strict checks of wire values against the AHP JSON schemas, independent of the host's models.

Every frame the host sends in the multi-version tests is checked against its connection's
schema with ``jsonschema`` (Draft 2020-12), made strict: every object schema that lists its
properties gets ``unevaluatedProperties: false``, so a field the version does not define (a 1.0
field leaking into a 0.7 frame, say) fails as loudly as a wrong type. ``_meta`` maps and other
open objects (``additionalProperties`` set) stay open.

Schemas: 0.7.0 as specified here (``proto/ahp/0.7.0``, with the generator's documented fixes for
the upstream converter's defects), 0.7.0 as released (``tests/fixtures/ahp-0.7.0-release/schema``),
1.0.0 (``proto/ahp/1.0.0``), which 0.9 peers share, 0.8.0 (``proto/ahp/0.8.0-dev`` with the
release's shapes put in, as the generator does) and 0.6.0 (``proto/ahp/0.6.0`` with its
generator's wrong text corrected, as the generator does).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parents[2]
_RELEASE = ROOT / "tests" / "fixtures" / "ahp-0.7.0-release" / "schema"


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_protocol", ROOT / "scripts/gen_protocol.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_protocol", module)
    spec.loader.exec_module(module)
    return module


def _strict(node: Any) -> Any:
    if isinstance(node, dict):
        out = {k: _strict(v) for k, v in node.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and out.get("type")
            in (
                "object",
                None,
            )
        ):
            out["unevaluatedProperties"] = False
        return out
    if isinstance(node, list):
        return [_strict(v) for v in node]
    return node


def _bitset(defs: dict[str, Any]) -> None:
    defs["SessionStatus"] = {"type": "integer", "minimum": 0}


class WireSchema:
    """The ``$defs`` of one schema, validated by name."""

    def __init__(self, defs: dict[str, Any], name: str) -> None:
        self.name = name
        self.defs = _strict(defs)
        self._validators: dict[str, Draft202012Validator] = {}

    def errors(self, def_name: str, value: Any) -> list[str]:
        validator = self._validators.get(def_name)
        if validator is None:
            schema = {"$ref": f"#/$defs/{def_name}", "$defs": self.defs}
            validator = self._validators[def_name] = Draft202012Validator(schema)
        return [
            f"{self.name} {def_name} at {'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}"
            for e in validator.iter_errors(value)
        ]

    def check(self, def_name: str, value: Any) -> None:
        problems = self.errors(def_name, value)
        assert not problems, "\n".join(problems[:10])


@cache
def ours_0_7() -> WireSchema:
    """Our 0.7.0 specification, with only the fixes for the converter's defects (not the
    release forms the host accepts: what it sends must be valid without them)."""
    gen = _generator()
    schema = json.loads((ROOT / "proto/ahp/0.7.0/ahp.schema.json").read_text(encoding="utf-8"))
    defs = copy.deepcopy(schema["$defs"])
    gen._optional_undefined_fields(defs)
    _bitset(defs)
    return WireSchema(defs, "0.7.0")


@cache
def release_0_7() -> WireSchema:
    """The released 0.7.0 (five files merged; the empty `StateAction` ref dropped)."""
    defs: dict[str, Any] = {}
    for path in sorted(_RELEASE.glob("*.schema.json")):
        defs.update(json.loads(path.read_text(encoding="utf-8"))["$defs"])
    defs["StateAction"] = {
        "oneOf": [m for m in defs["StateAction"]["oneOf"] if m.get("$ref") != "#/$defs/"]
    }
    _bitset(defs)
    return WireSchema(defs, "0.7.0-release")


@cache
def v1_0() -> WireSchema:
    schema = json.loads((ROOT / "proto/ahp/1.0.0/ahp.schema.json").read_text(encoding="utf-8"))
    defs = copy.deepcopy(schema["$defs"])
    _bitset(defs)
    return WireSchema(defs, "1.0.0")


@cache
def v0_8() -> WireSchema:
    """0.8.0: the dev snapshot with the release's shapes (``gen_protocol._release_0_8_0``)."""
    gen = _generator()
    schema = json.loads((ROOT / "proto/ahp/0.8.0-dev/ahp.schema.json").read_text(encoding="utf-8"))
    defs = gen.patched_schema(schema, [gen._release_0_8_0])["$defs"]
    _bitset(defs)
    return WireSchema(defs, "0.8.0")


@cache
def v0_6() -> WireSchema:
    """0.6.0: the release with its generator's wrong text corrected and its `T | undefined`
    fields optional, as on the wire (``gen_protocol._schema_text_0_6``)."""
    gen = _generator()
    schema = json.loads((ROOT / "proto/ahp/0.6.0/ahp.schema.json").read_text(encoding="utf-8"))
    fixes = [gen._schema_text_0_6, gen._optional_undefined_fields]
    defs = gen.patched_schema(schema, fixes)["$defs"]
    _bitset(defs)
    return WireSchema(defs, "0.6.0")


def for_line(line: str) -> list[WireSchema]:
    """The schemas a frame of a connection on ``line`` must satisfy (0.7: ours and the
    release's, since a 0.7 client may be built from either)."""
    if line == "0.7":
        return [ours_0_7(), release_0_7()]
    if line == "0.8":
        return [v0_8()]
    if line == "0.6":
        return [v0_6()]
    return [v1_0()]
