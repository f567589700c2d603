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

from jsonschema import Draft202012Validator, validators
from jsonschema import _keywords as keywords

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


#: For each `oneOf` list in a loaded schema (by identity), each branch's discriminator: the
#: property it requires with a string `const` (`type` or `kind`), or None.
_TAGS: dict[int, tuple[list[Any], list[tuple[str, str] | None]]] = {}


def _tag(branch: Any, defs: dict[str, Any]) -> tuple[str, str] | None:
    ref = branch.get("$ref", "") if isinstance(branch, dict) else ""
    if ref.startswith("#/$defs/"):
        branch = defs.get(ref.removeprefix("#/$defs/"), {})
    if not isinstance(branch, dict):
        return None
    for prop in ("type", "kind"):
        const = branch.get("properties", {}).get(prop, {}).get("const")
        if prop in branch.get("required", ()) and isinstance(const, str):
            return prop, const
    return None


def _index_one_ofs(node: Any, defs: dict[str, Any]) -> None:
    if isinstance(node, dict):
        one_of = node.get("oneOf")
        if isinstance(one_of, list):
            _TAGS[id(one_of)] = (one_of, [_tag(b, defs) for b in one_of])
        for value in node.values():
            _index_one_ofs(value, defs)
    elif isinstance(node, list):
        for value in node:
            _index_one_ofs(value, defs)


def _one_of(validator: Any, one_of: list[Any], instance: Any, schema: Any) -> Any:
    """Draft 2020-12's `oneOf`, over only the branches that can hold: a branch that requires
    a property with a string `const` fails for an object whose property is another string (or
    absent), so leaving it out changes no answer, and an action need not be walked through
    all eighty-odd action types."""
    known = _TAGS.get(id(one_of))
    if known is not None and known[0] is one_of and isinstance(instance, dict):
        one_of = [
            branch
            for branch, tag in zip(one_of, known[1], strict=True)
            if tag is None
            or (tag[0] in instance and not isinstance(instance[tag[0]], str))
            or instance.get(tag[0]) == tag[1]
        ]
    yield from keywords.oneOf(validator, one_of, instance, schema)


_Validator = validators.extend(Draft202012Validator, {"oneOf": _one_of})

#: Answers a schema remembers before it forgets them all: frames carry sequence numbers and
#: rarely repeat, fixtures do, and a fuzzed run must not grow a worker without bound.
_MEMO = 20_000


class WireSchema:
    """The ``$defs`` of one schema, validated by name."""

    def __init__(self, defs: dict[str, Any], name: str) -> None:
        self.name = name
        self.defs = _strict(defs)
        _index_one_ofs(self.defs, self.defs)
        self._validators: dict[str, Any] = {}
        self._answers: dict[tuple[str, str], tuple[str, ...]] = {}

    def errors(self, def_name: str, value: Any) -> list[str]:
        """What is wrong with `value` as a `def_name`. A value is JSON, so its canonical text
        keys a memo: the fixtures and frames the suite checks repeat the same states and
        actions many times, and a `oneOf` over every action type is slow to walk."""
        key = (def_name, json.dumps(value, sort_keys=True))
        answer = self._answers.get(key)
        if answer is None:
            if len(self._answers) >= _MEMO:
                self._answers.clear()
            validator = self._validators.get(def_name)
            if validator is None:
                schema = {"$ref": f"#/$defs/{def_name}", "$defs": self.defs}
                validator = self._validators[def_name] = _Validator(schema)
            answer = self._answers[key] = tuple(
                f"{self.name} {def_name} at "
                f"{'/'.join(map(str, e.absolute_path)) or '.'}: {e.message}"
                for e in validator.iter_errors(value)
            )
        return list(answer)

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
