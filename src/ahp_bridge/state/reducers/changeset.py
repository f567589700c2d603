"""Reducer for ChangesetState (`ahp-changeset:/…`)."""

from __future__ import annotations

from ._util import JSON, drop, find_index, put, removed, replaced, upsert_by


def _with_error(d: JSON, status: str, error: object, error_status: str) -> JSON:
    """Carry `error` only with the error status, so a recovered item has no stale error."""
    if status == error_status:
        return put({**d, "status": status}, "error", error)
    return drop({**d, "status": status}, "error")


def _operation_status(state: JSON, action: JSON) -> JSON:
    ops = state.get("operations")
    if not isinstance(ops, list):
        return state
    idx = find_index(ops, lambda o: o.get("id") == action.get("operationId"))
    if idx < 0:
        return state
    op = _with_error(ops[idx], action.get("status", ""), action.get("error"), "error")
    return {**state, "operations": replaced(ops, idx, op)}


def _files_reviewed(state: JSON, action: JSON) -> JSON:
    wanted = set(action.get("files") or [])
    reviewed = bool(action.get("reviewed"))
    changed = False
    files = []
    for f in state.get("files", []):
        if f.get("id") in wanted and f.get("reviewed") != reviewed:
            f = {**f, "reviewed": reviewed}
            changed = True
        files.append(f)
    return {**state, "files": files} if changed else state


def reduce_changeset(state: JSON, action: JSON) -> JSON:
    """Pure reducer for changeset channels; file order is stable (append new, replace in place)."""
    files = state.get("files", [])
    match action.get("type"):
        case "changeset/statusChanged":
            return _with_error(state, action.get("status", ""), action.get("error"), "error")
        case "changeset/fileSet":
            file = action.get("file")
            return {**state, "files": upsert_by(files, "id", file)} if file else state
        case "changeset/fileRemoved":
            idx = find_index(files, lambda f: f.get("id") == action.get("fileId"))
            return state if idx < 0 else {**state, "files": removed(files, idx)}
        case "changeset/filesReviewChanged":
            return _files_reviewed(state, action)
        case "changeset/contentChanged":
            nxt = {**state, "files": action.get("files") or []}
            if action.get("operations") is not None:
                nxt["operations"] = action["operations"]
            return put(nxt, "error", action.get("error"))
        case "changeset/operationsChanged":
            return put(state, "operations", action.get("operations"))
        case "changeset/operationStatusChanged":
            return _operation_status(state, action)
        case "changeset/cleared":
            return state if not files else {**state, "files": []}
        case _:
            return state
