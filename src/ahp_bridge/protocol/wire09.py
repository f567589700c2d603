"""The 0.9 wire: 1.0's contract minus the action types 0.9 does not know.

0.9.0 and 1.0.0 share one wire contract, 1.0 being additive, so a 0.9 peer gets the canonical
envelopes as they are, except the 1.0-only action types (``actions_v1.ONLY_1_0``). Those are
dropped, and the state fields that only they maintain are stripped from 0.9 snapshots, so a 0.9
peer that reduces what it receives ends where the host's 0.9 snapshot is:

==================================  ===========================================================
1.0-only                            0.9
==================================  ===========================================================
``chat/isReadChanged``, ...Archived  dropped; the chat's read/archived bits are masked
``chat/backgroundWork*``            dropped; ``ChatState.backgroundWork`` stripped
``chat/changesetsChanged``          dropped; ``ChatState.changesets`` stripped
``chat/movableChanged``, canvases   dropped; ``movable``, ``canvases`` stripped
``session/mcpServerBackground…``    dropped; MCP ``starting.blocking`` stripped
``session/chatsReordered``          ``session/chatRemoved`` + ``session/chatAdded`` in the new
                                    order (+ ``session/defaultChatChanged``)
==================================  ===========================================================

It is also the first step of the older lines' chain (``wire08``: canonical -> 0.9 -> 0.8 ->
0.7 -> 0.6), none of which knows these types either.
"""

from __future__ import annotations

from typing import Any, Final

from ahp_bridge.protocol.actions_v1 import ACTIONS_09

__all__ = ["chats_rebuilt", "down_actions", "down_state"]

JSON = dict[str, Any]

_CHAT_ONLY_1_0: Final = ("backgroundWork", "changesets", "movable", "canvases")
_FLAGS = 32 | 64


def down_state(kind: str, state: JSON) -> JSON:
    if kind == "chat":
        out = {k: v for k, v in state.items() if k not in _CHAT_ONLY_1_0}
        status = state.get("status")
        if isinstance(status, int):
            out["status"] = status & ~_FLAGS
        return out
    if kind == "session":
        items = state.get("customizations")
        if isinstance(items, list) and any(_has_blocking(c) for c in items):
            return {**state, "customizations": [_unblocked(c) for c in items]}
    return state


def _has_blocking(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    state = item.get("state")
    if isinstance(state, dict) and "blocking" in state:
        return True
    return any(_has_blocking(c) for c in item.get("children") or [])


def _unblocked(item: Any) -> Any:
    if not _has_blocking(item):
        return item
    out = dict(item)
    state = item.get("state")
    if isinstance(state, dict):
        out["state"] = {k: v for k, v in state.items() if k != "blocking"}
    if isinstance(item.get("children"), list):
        out["children"] = [_unblocked(c) for c in item["children"]]
    return out


def down_actions(
    kind: str, action: JSON, *, changed: bool = True, post: JSON | None = None
) -> list[JSON]:
    kind_of = action.get("type")
    if kind_of == "session/chatsReordered":
        return chats_rebuilt(post) if changed and post is not None else []
    if kind_of not in ACTIONS_09.types:
        return []
    if kind_of == "session/mcpServerStateChanged":
        state = action.get("state")
        if isinstance(state, dict) and "blocking" in state:
            return [{**action, "state": {k: v for k, v in state.items() if k != "blocking"}}]
    if kind_of in ("session/customizationsChanged", "session/customizationUpdated"):
        key = "customizations" if kind_of.endswith("sChanged") else "customization"
        value = action.get(key)
        if isinstance(value, list):
            return [{**action, key: [_unblocked(c) for c in value]}]
        return [{**action, key: _unblocked(value)}]
    return [action]


def chats_rebuilt(post: JSON) -> list[JSON]:
    """A new chat order said without `session/chatsReordered`: remove all, add back in order."""
    chats = [c for c in post.get("chats") or [] if isinstance(c, dict)]
    out: list[JSON] = [{"type": "session/chatRemoved", "chat": c.get("resource")} for c in chats]
    out.extend({"type": "session/chatAdded", "summary": c} for c in chats)
    if post.get("defaultChat") is not None:
        out.append({"type": "session/defaultChatChanged", "defaultChat": post["defaultChat"]})
    return out
