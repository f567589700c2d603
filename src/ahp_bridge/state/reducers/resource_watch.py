"""Reducer for ResourceWatchState (`ahp-resource-watch:/…`)."""

from __future__ import annotations

from ._util import JSON


def reduce_resource_watch(state: JSON, action: JSON) -> JSON:
    """`resourceWatch/changed` is a pass-through event: it carries changes, never state."""
    return state
