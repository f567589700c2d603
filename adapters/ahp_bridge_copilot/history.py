"""Rebuild an agentapi History from the CLI's persisted event log (``session.getMessages``).

The persisted log has no ephemeral events (deltas, idle, usage), so each item appears whole.
It is replayed through the same ``EventMapper`` as live events; item upserts are folded by
(agent, id) in first-seen order, exactly as a live consumer would see them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ahp_bridge.agentapi import EventKind, History, Item, SkillLoad, Subagent, Usage

from .mapping import EventMapper

MAX_HISTORY_ITEMS = 5000


def rebuild_history(events: Iterable[dict[str, Any]]) -> History:
    mapper = EventMapper()
    items: dict[tuple[str, str], Item] = {}
    subagents: dict[str, Subagent] = {}
    skills: dict[tuple[str, str], SkillLoad] = {}
    usage: Usage | None = None
    for raw in events:
        for ev in mapper.map(raw):
            if ev.kind is EventKind.ITEM and ev.item is not None:
                items[(ev.item.agent_id, ev.item.id)] = ev.item
            elif ev.kind is EventKind.SUBAGENT and ev.subagent is not None:
                subagents[ev.subagent.id] = ev.subagent
            elif ev.kind is EventKind.USAGE and ev.usage is not None:
                usage = ev.usage
            elif ev.kind is EventKind.SKILL and ev.skill is not None:
                skills[(ev.skill.agent_id, ev.skill.id)] = ev.skill
    ordered = list(items.values())
    truncated = len(ordered) > MAX_HISTORY_ITEMS
    if truncated:
        ordered = ordered[-MAX_HISTORY_ITEMS:]
    return History(
        items=ordered,
        subagents=list(subagents.values()),
        usage=usage,
        model=mapper.model,
        skills=list(skills.values()),
        truncated=truncated,
    )
