"""Copy-on-write helpers for reducers over JSON-shaped dicts.

Every helper returns a new container and never mutates its input; unchanged
children are shared. `None` stands for "absent" (the wire omits such keys), so
setting a key to `None` removes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

JSON = dict[str, Any]


def put(d: Mapping[str, Any], key: str, value: Any) -> JSON:
    """Return a copy of `d` with `key` set, or removed when `value` is None."""
    out = dict(d)
    if value is None:
        out.pop(key, None)
    else:
        out[key] = value
    return out


def put_many(d: Mapping[str, Any], changes: Mapping[str, Any]) -> JSON:
    """Return a copy of `d` with every key of `changes` applied like `put`."""
    out = dict(d)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def drop(d: Mapping[str, Any], *keys: str) -> JSON:
    """Return a copy of `d` without `keys`."""
    out = dict(d)
    for key in keys:
        out.pop(key, None)
    return out


def compact(d: Mapping[str, Any]) -> JSON:
    """Return `d` without None-valued keys (JS `undefined` fields)."""
    return {k: v for k, v in d.items() if v is not None}


def find_index(items: list[Any], pred: Callable[[Any], bool]) -> int:
    """Index of the first item matching `pred`, or -1."""
    for i, item in enumerate(items):
        if pred(item):
            return i
    return -1


def replaced(items: list[Any], index: int, item: Any) -> list[Any]:
    """Copy of `items` with position `index` replaced by `item`."""
    out = list(items)
    out[index] = item
    return out


def removed(items: list[Any], index: int) -> list[Any]:
    """Copy of `items` without position `index`."""
    return items[:index] + items[index + 1 :]


def upsert_by(items: list[Any], key: str, item: Mapping[str, Any]) -> list[Any]:
    """Replace the entry whose `key` equals `item[key]`, or append `item`."""
    idx = find_index(items, lambda x: isinstance(x, dict) and x.get(key) == item.get(key))
    if idx < 0:
        return [*items, item]
    return replaced(items, idx, item)


def set_member(items: list[Any] | None, value: Any) -> list[Any] | None:
    """Set semantics for a list of URIs: append `value` unless present (None = unchanged)."""
    current = items or []
    if value in current:
        return None
    return [*current, value]


def unset_member(items: list[Any] | None, value: Any) -> list[Any] | None:
    """Remove `value` from a list of URIs (None = unchanged)."""
    if not items or value not in items:
        return None
    return [x for x in items if x != value]
