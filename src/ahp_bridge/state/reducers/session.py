"""Reducer for SessionState (AHP 1.0 semantics; any client-chosen session URI).

Turns live on chat channels; the session holds the chat catalog, clients, customizations and
the session-wide input queue, whose user-facing entries drive the InputNeeded activity bits (a
`toolClientExecution` entry is work delegated to a client, not a question: since 0.8 it does not
count). The lifecycle after a failed creation is `failed` (0.7: `creationFailed`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import status as st
from ._util import (
    JSON,
    drop,
    find_index,
    put,
    put_many,
    removed,
    replaced,
    set_member,
    unset_member,
    upsert_by,
)
from .root import merge_config

CLIENT_EXECUTION = "toolClientExecution"


def awaits_user(request: object) -> bool:
    """An input request that blocks on the user (everything but client tool execution)."""
    return not (isinstance(request, dict) and request.get("kind") == CLIENT_EXECUTION)


def input_needed_status(status: int, queue: list[Any], counts: Callable[[Any], bool]) -> int:
    """A queue holding a counted entry means InputNeeded; otherwise only the input bit clears.

    InputNeeded implies InProgress, so an unblocked turn falls back to InProgress
    while an idle session stays idle. Orthogonal flags are kept.
    """
    if any(counts(r) for r in queue):
        return st.with_activity(status, st.INPUT_NEEDED)
    return status & ~(st.INPUT_NEEDED & ~st.IN_PROGRESS)


def _input_needed_set(state: JSON, action: JSON) -> JSON:
    request = action.get("request")
    if not isinstance(request, dict):
        return state
    queue = upsert_by(state.get("inputNeeded") or [], "id", request)
    return {
        **state,
        "inputNeeded": queue,
        "status": input_needed_status(state.get("status", 0), queue, awaits_user),
    }


def _input_needed_removed(state: JSON, action: JSON) -> JSON:
    queue = state.get("inputNeeded")
    if not queue:
        return state
    idx = find_index(queue, lambda r: r.get("id") == action.get("id"))
    if idx < 0:
        return state
    rest = removed(queue, idx)
    nxt = put(state, "inputNeeded", rest or None)
    nxt["status"] = input_needed_status(state.get("status", 0), rest, awaits_user)
    return nxt


def _chat_removed(state: JSON, action: JSON) -> JSON:
    chats = state.get("chats", [])
    idx = find_index(chats, lambda c: c.get("resource") == action.get("chat"))
    if idx < 0:
        return state
    nxt = {**state, "chats": removed(chats, idx)}
    if state.get("defaultChat") == action.get("chat"):
        nxt.pop("defaultChat", None)
    return nxt


def _chats_reordered(state: JSON, action: JSON) -> JSON:
    """The host's full new order: anything but an exact permutation of the catalog is a no-op."""
    chats = state.get("chats") or []
    order = action.get("chats")
    if not isinstance(order, list) or len(order) != len(chats):
        return state
    by_uri = {c.get("resource"): c for c in chats if isinstance(c, dict)}
    if len(set(map(str, order))) != len(order) or any(u not in by_uri for u in order):
        return state
    reordered = [by_uri[u] for u in order]
    return state if reordered == chats else {**state, "chats": reordered}


def _working_dir_replaced(state: JSON, action: JSON) -> JSON:
    """Compare-and-swap one directory; the replacement takes its slot, duplicates collapse."""
    dirs = state.get("workingDirectories")
    target = action.get("directory")
    replacement = action.get("replacement")
    if not isinstance(dirs, list) or target not in dirs:
        return state
    index = dirs.index(target)
    if replacement in dirs and dirs.index(replacement) < index:
        return {**state, "workingDirectories": removed(dirs, index)}
    new = [
        replacement if i == index else d
        for i, d in enumerate(dirs)
        if i == index or d != replacement
    ]
    return {**state, "workingDirectories": new}


def _enabled_by(customization: JSON, enablement: list[Any]) -> JSON:
    """Apply a complete enablement decision list (1.0 `session/customizationToggled`).

    Plugins and MCP servers keep the list (an empty one removes it); every other customization
    keeps the `enabled` flag, taken from the first decision (default: enabled).
    """
    if customization.get("type") in ("plugin", "mcpServer"):
        return put(customization, "enablement", list(enablement) or None)
    first = enablement[0] if enablement else None
    enabled = first.get("enabled") if isinstance(first, dict) else None
    return {**customization, "enabled": True if enabled is None else enabled}


def _mcp_background(server: JSON) -> JSON:
    """Stop holding messages for a blocking MCP server that is still starting."""
    state = server.get("state")
    if isinstance(state, dict) and state.get("kind") == "starting" and state.get("blocking"):
        return {**server, "state": {**state, "blocking": False}}
    return server


def _chat_updated(state: JSON, action: JSON) -> JSON:
    chats = state.get("chats", [])
    idx = find_index(chats, lambda c: c.get("resource") == action.get("chat"))
    if idx < 0:
        return state
    changes = {k: v for k, v in (action.get("changes") or {}).items() if k != "resource"}
    return {**state, "chats": replaced(chats, idx, put_many(chats[idx], changes))}


Updater = Callable[[JSON], JSON]


def _update_customization(
    state: JSON, ident: object, fn: Updater, *, children: bool = True
) -> JSON:
    """Apply `fn` to the customization with id `ident`: top level first, then container children.

    `fn` returning its argument unchanged means "not applicable" and leaves state as is.
    """
    items = state.get("customizations")
    if not isinstance(items, list):
        return state
    idx = find_index(items, lambda c: c.get("id") == ident)
    if idx >= 0:
        updated = fn(items[idx])
        if updated is items[idx]:
            return state
        return {**state, "customizations": replaced(items, idx, updated)}
    if not children:
        return state
    for i, container in enumerate(items):
        kids = container.get("children")
        if container.get("type") == "mcpServer" or not isinstance(kids, list):
            continue
        k = find_index(kids, lambda c: c.get("id") == ident)
        if k < 0:
            continue
        updated = fn(kids[k])
        if updated is kids[k]:
            return state
        new_container = {**container, "children": replaced(kids, k, updated)}
        return {**state, "customizations": replaced(items, i, new_container)}
    return state


def _customization_removed(state: JSON, ident: object) -> JSON:
    items = state.get("customizations")
    if not isinstance(items, list):
        return state
    idx = find_index(items, lambda c: c.get("id") == ident)
    if idx >= 0:
        return {**state, "customizations": removed(items, idx)}
    for i, container in enumerate(items):
        kids = container.get("children")
        if container.get("type") == "mcpServer" or not isinstance(kids, list):
            continue
        k = find_index(kids, lambda c: c.get("id") == ident)
        if k >= 0:
            new_container = {**container, "children": removed(kids, k)}
            return {**state, "customizations": replaced(items, i, new_container)}
    return state


def _mcp(fn: Updater) -> Updater:
    """Restrict an updater to McpServer customizations."""
    return lambda c: fn(c) if c.get("type") == "mcpServer" else c


def _mcp_state(kind: str) -> Updater:
    return _mcp(lambda c: drop({**c, "state": {"kind": kind}}, "channel"))


def _working_dirs(state: JSON, new: list[Any] | None) -> JSON:
    return state if new is None else {**state, "workingDirectories": new}


def reduce_session(state: JSON, action: JSON) -> JSON:
    """Pure reducer for session channels; unknown actions are no-ops."""
    status = state.get("status", 0)
    match action.get("type"):
        case "session/ready":
            # Lifecycle only: a provisional session may already have a turn running.
            return {**state, "lifecycle": "ready"}
        case "session/creationFailed":
            return put({**state, "lifecycle": "failed"}, "creationError", action.get("error"))
        case "session/chatAdded":
            summary = action.get("summary")
            if not isinstance(summary, dict):
                return state
            return {**state, "chats": upsert_by(state.get("chats", []), "resource", summary)}
        case "session/chatRemoved":
            return _chat_removed(state, action)
        case "session/chatUpdated":
            return _chat_updated(state, action)
        case "session/chatsReordered":
            return _chats_reordered(state, action)
        case "session/defaultChatChanged":
            return put(state, "defaultChat", action.get("defaultChat"))
        case "session/titleChanged":
            return put(state, "title", action.get("title"))
        case "session/isReadChanged":
            return {**state, "status": st.with_flag(status, st.IS_READ, bool(action.get("isRead")))}
        case "session/isArchivedChanged":
            flag = bool(action.get("isArchived"))
            return {**state, "status": st.with_flag(status, st.IS_ARCHIVED, flag)}
        case "session/activityChanged":
            return put(state, "activity", action.get("activity"))
        case "session/changesetsChanged":
            return put(state, "changesets", action.get("changesets"))
        case "session/configChanged":
            return merge_config(state, action)
        case "session/metaChanged":
            return put(state, "_meta", action.get("_meta"))
        case "session/serverToolsChanged":
            return put(state, "serverTools", action.get("tools"))
        case "session/activeClientSet":
            client = action.get("activeClient")
            if not isinstance(client, dict):
                return state
            clients = upsert_by(state.get("activeClients", []), "clientId", client)
            return {**state, "activeClients": clients}
        case "session/activeClientRemoved":
            clients = state.get("activeClients", [])
            idx = find_index(clients, lambda c: c.get("clientId") == action.get("clientId"))
            return state if idx < 0 else {**state, "activeClients": removed(clients, idx)}
        case "session/workingDirectorySet":
            dirs = set_member(state.get("workingDirectories"), action.get("directory"))
            return _working_dirs(state, dirs)
        case "session/workingDirectoryRemoved":
            dirs = unset_member(state.get("workingDirectories"), action.get("directory"))
            return _working_dirs(state, dirs)
        case "session/workingDirectoryReplaced":
            return _working_dir_replaced(state, action)
        case "session/inputNeededSet":
            return _input_needed_set(state, action)
        case "session/inputNeededRemoved":
            return _input_needed_removed(state, action)
        case "session/customizationsChanged":
            return put(state, "customizations", action.get("customizations"))
        case "session/customizationToggled":
            enablement = action.get("enablement")
            if not isinstance(enablement, list):
                return state  # the pre-0.8 `enabled`-only shape is a no-op
            return _update_customization(
                state, action.get("id"), lambda c: _enabled_by(c, enablement)
            )
        case "session/customizationUpdated":
            item = action.get("customization")
            if not isinstance(item, dict):
                return state
            items = upsert_by(state.get("customizations") or [], "id", item)
            return {**state, "customizations": items}
        case "session/customizationRemoved":
            return _customization_removed(state, action.get("id"))
        case "session/mcpServerStateChanged":
            changes = {"state": action.get("state"), "channel": action.get("channel")}
            return _update_customization(
                state, action.get("id"), _mcp(lambda c: put_many(c, changes))
            )
        case "session/mcpServerStartRequested":
            return _update_customization(state, action.get("id"), _mcp_state("starting"))
        case "session/mcpServerStopRequested":
            return _update_customization(state, action.get("id"), _mcp_state("stopped"))
        case "session/mcpServerBackgroundRequested":
            return _update_customization(state, action.get("id"), _mcp(_mcp_background))
        case _:
            return state
