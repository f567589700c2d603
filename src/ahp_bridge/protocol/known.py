"""A client's action with only the fields its version defines: what the host keeps and relays.

Wire models keep unknown fields (so envelopes from newer peers can be relayed), but a field a
client adds to its own action is not the host's to pass on: it would reach every subscriber,
whose version does not define it, and sit in the state and the replay log. Found by the
property-based suite (tests/e2e/test_fuzz.py): a `session/isReadChanged` with made-up keys was
applied and sent to every peer as it came. A field sent as `null` is left out the same way (no
field of any action is nullable in 0.7 or 1.0: `"draft": null` means no draft, and would
otherwise reach every peer as a `null` its schema refuses). `_meta` maps and other open objects
stay whole.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, RootModel

__all__ = ["known_fields"]


def known_fields(model: BaseModel, dumped: dict[str, Any]) -> dict[str, Any]:
    """`dumped` (the model's wire dump) without the fields `model` does not declare, at any
    depth."""
    pruned = _prune(model, dumped)
    assert isinstance(pruned, dict)
    return pruned


#: Each model class's fields by wire key: (position in declaration order, attribute name).
#: Kept fields are written in declaration order (a client's own order is not relayed).
_FIELDS: dict[type[BaseModel], dict[str, tuple[int, str]]] = {}


def _fields(cls: type[BaseModel]) -> dict[str, tuple[int, str]]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = {
            info.serialization_alias or info.alias or name: (position, name)
            for position, (name, info) in enumerate(cls.model_fields.items())
        }
    return fields


#: Each class met: 1 a RootModel, 2 another model, 0 anything else (pydantic's isinstance
#: checks go through its metaclass: slow on a path taken for every field of every action).
_KINDS: dict[type, int] = {}


def _kind(cls: type) -> int:
    kind = _KINDS.get(cls)
    if kind is None:
        kind = _KINDS[cls] = (
            1 if issubclass(cls, RootModel) else 2 if issubclass(cls, BaseModel) else 0
        )
    return kind


_LEAVES = (str, int, float, bool)


def _prune(value: Any, dumped: Any) -> Any:
    if isinstance(dumped, _LEAVES):  # a leaf: nothing below it to prune
        return dumped
    kinds = _KINDS
    cls = type(value)
    kind = kinds.get(cls)
    if kind is None:
        kind = _kind(cls)
    while kind == 1:  # a RootModel (a union, an alias): what it wraps
        value = value.root
        cls = type(value)
        kind = kinds.get(cls)
        if kind is None:
            kind = _kind(cls)
    if kind == 2 and isinstance(dumped, dict):
        # Only the keys the client sent are looked at (a model declares many more); a leaf is
        # kept as it is, without a call (most of an action's fields are leaves).
        fields = _FIELDS.get(cls)
        if fields is None:
            fields = _fields(cls)
        kept: dict[str, Any] = {}
        last, ordered = -1, True
        for key, field_value in dumped.items():
            found = fields.get(key)
            if found is None or field_value is None:  # unknown, or null (no field is nullable)
                continue
            position, name = found
            if position < last:
                ordered = False
            last = position
            if not isinstance(field_value, _LEAVES):
                field_value = _prune(getattr(value, name), field_value)
            kept[key] = field_value
        if not ordered:
            return dict(sorted(kept.items(), key=lambda item: fields[item[0]][0]))
        return kept
    if isinstance(value, list | tuple) and isinstance(dumped, list) and len(value) == len(dumped):
        return [_prune(v, d) for v, d in zip(value, dumped, strict=True)]
    if isinstance(value, dict) and isinstance(dumped, dict):
        return {k: _prune(value.get(k), d) for k, d in dumped.items()}
    return dumped
