"""Reducer for RootState (`ahp-root://`)."""

from __future__ import annotations

from typing import Any

from ._util import JSON, put


def merge_config(state: JSON, action: JSON) -> JSON:
    """`*/configChanged`: merge (or with `replace`, swap) `config.values`; no-op without config."""
    config = state.get("config")
    if not isinstance(config, dict):
        return state
    incoming: dict[str, Any] = action.get("config") or {}
    values = dict(incoming) if action.get("replace") else {**config.get("values", {}), **incoming}
    return {**state, "config": {**config, "values": values}}


def reduce_root(state: JSON, action: JSON) -> JSON:
    """Pure reducer for the root channel; unknown actions are no-ops."""
    match action.get("type"):
        case "root/agentsChanged":
            return put(state, "agents", action.get("agents"))
        case "root/activeSessionsChanged":
            return put(state, "activeSessions", action.get("activeSessions"))
        case "root/terminalsChanged":
            return put(state, "terminals", action.get("terminals"))
        case "root/configChanged":
            return merge_config(state, action)
        case _:
            return state
