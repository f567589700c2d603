"""Session summaries: the aggregate over a session's chats that the session list shows.

The schema's SessionSummary rules ("cross-chat aggregation"): the status takes the default
chat's activity bits, raised to InputNeeded when any chat needs input and to Error when any
chat is in error; `activity` follows the chat that decided the status; `modifiedAt` is the
newest chat's. Orthogonal flags (IsRead, IsArchived) stay session-scoped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ahp_bridge.state import status as st

#: Summary fields a chat entry mirrors from its ChatState (`session/chatUpdated` carries them).
CHAT_SUMMARY_FIELDS = ("title", "status", "activity", "modifiedAt")


def chat_summary_changes(entry: Mapping[str, Any], chat_state: Mapping[str, Any]) -> dict[str, Any]:
    """The `changes` of a `session/chatUpdated` that brings `entry` in line with `chat_state`."""
    changes: dict[str, Any] = {}
    for field in CHAT_SUMMARY_FIELDS:
        value = chat_state.get(field)
        if value is not None and entry.get(field) != value:
            changes[field] = value
    return changes


def aggregate(
    session_state: Mapping[str, Any], chats: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """Status, activity and modifiedAt of a session, derived from its chat entries."""
    flags = session_state.get("status", st.IDLE) & ~st.ACTIVITY_MASK
    if not chats:
        return {"status": (session_state.get("status", st.IDLE) & st.ACTIVITY_MASK) | flags}
    default_uri = session_state.get("defaultChat")
    newest = max(chats, key=lambda c: c.get("modifiedAt") or "")
    base = next((c for c in chats if c.get("resource") == default_uri), newest)
    decider = base
    activity_bits = base.get("status", st.IDLE) & st.ACTIVITY_MASK
    errored = [c for c in chats if c.get("status", 0) & st.ACTIVITY_MASK == st.ERROR]
    waiting = [c for c in chats if c.get("status", 0) & st.ACTIVITY_MASK == st.INPUT_NEEDED]
    if errored:
        activity_bits, decider = st.ERROR, (base if base in errored else errored[0])
    elif waiting:
        activity_bits, decider = st.INPUT_NEEDED, (base if base in waiting else waiting[0])
    result: dict[str, Any] = {
        "status": activity_bits | flags,
        "modifiedAt": newest.get("modifiedAt"),
    }
    activity = decider.get("activity")
    if activity is not None:
        result["activity"] = activity
    return result
