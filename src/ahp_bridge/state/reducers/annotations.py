"""Reducer for AnnotationsState (`<session>/annotations`; 1.0: annotations carry an `origin`)."""

from __future__ import annotations

from collections.abc import Callable

from ._util import JSON, find_index, put_many, removed, replaced, upsert_by


def _update_annotation(state: JSON, annotation_id: object, fn: Callable[[JSON], JSON]) -> JSON:
    items = state.get("annotations", [])
    idx = find_index(items, lambda a: a.get("id") == annotation_id)
    if idx < 0:
        return state
    updated = fn(items[idx])
    if updated is items[idx]:
        return state
    return {**state, "annotations": replaced(items, idx, updated)}


def _remove_entry(annotation: JSON, entry_id: object) -> JSON:
    entries = annotation.get("entries", [])
    idx = find_index(entries, lambda e: e.get("id") == entry_id)
    return annotation if idx < 0 else {**annotation, "entries": removed(entries, idx)}


def reduce_annotations(state: JSON, action: JSON) -> JSON:
    """Pure reducer for annotation channels; unknown ids are no-ops."""
    items = state.get("annotations", [])
    match action.get("type"):
        case "annotations/set":
            annotation = action.get("annotation")
            if not isinstance(annotation, dict):
                return state
            return {**state, "annotations": upsert_by(items, "id", annotation)}
        case "annotations/removed":
            idx = find_index(items, lambda a: a.get("id") == action.get("annotationId"))
            return state if idx < 0 else {**state, "annotations": removed(items, idx)}
        case "annotations/updated":
            changes = {
                k: action[k]
                for k in ("origin", "resource", "range", "resolved")
                if action.get(k) is not None
            }
            return _update_annotation(
                state, action.get("annotationId"), lambda a: put_many(a, changes)
            )
        case "annotations/entrySet":
            entry = action.get("entry")
            if not isinstance(entry, dict):
                return state
            return _update_annotation(
                state,
                action.get("annotationId"),
                lambda a: {**a, "entries": upsert_by(a.get("entries", []), "id", entry)},
            )
        case "annotations/entryRemoved":
            return _update_annotation(
                state, action.get("annotationId"), lambda a: _remove_entry(a, action.get("entryId"))
            )
        case _:
            return state
