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
CHAT_SUMMARY_FIELDS = ("title", "status", "activity")

#: What a 1.0 `SessionSummary.chats` entry (SessionChatSummary) keeps of a chat's entry.
SESSION_CHAT_FIELDS = ("resource", "title", "origin", "interactivity", "status", "changes")

#: Summary fields announced through root/sessionSummaryChanged (never resource/provider/createdAt).
SUMMARY_FIELDS = (
    "title",
    "status",
    "activity",
    "modifiedAt",
    "workingDirectories",
    "chats",
    "defaultChat",
)


def session_chats(chats: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`SessionSummary.chats` (1.0): each chat entry projected to a SessionChatSummary, in order.

    The host MUST project `session/chatUpdated` changes (its status above all) into it and
    publish it through `root/sessionSummaryChanged`; the session list carries it too.
    """
    return [{k: c[k] for k in SESSION_CHAT_FIELDS if k in c} for c in chats]


def chat_summary_changes(
    entry: Mapping[str, Any], chat_state: Mapping[str, Any], *, active_at: str | None = None
) -> dict[str, Any]:
    """The `changes` of a `session/chatUpdated` that brings `entry` in line with `chat_state`.

    An entry's `modifiedAt` is `active_at`, the host's time of the chat's last activity (turns
    starting and ending, questions, answers, truncation: `Fanout.active_at`), not the clock-free
    ChatState.modifiedAt, which only moves when a turn starts or ends.
    """
    changes: dict[str, Any] = {}
    for field in CHAT_SUMMARY_FIELDS:
        value = chat_state.get(field)
        if value is not None and entry.get(field) != value:
            changes[field] = value
    if active_at is not None and entry.get("modifiedAt") != active_at:
        changes["modifiedAt"] = active_at
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
