"""The chat's background work: running shells and background subagents (AHP 1.0).

Each is ``chat/backgroundWorkSet`` while it runs and ``chat/backgroundWorkRemoved`` once it
stops, the typed 1.0 home of what 0.7 and 0.9 peers see in session ``_meta``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ahp_bridge.agentapi import BackgroundTasks, Subagent, SubagentStatus

from .._wire import Emitted, clean_line, iso_from_ms
from .context import ChatContext


class BackgroundWork:
    """The chat's ``ChatState.backgroundWork`` as emitted (main chats only)."""

    def __init__(self, ctx: ChatContext) -> None:
        self._ctx = ctx
        self._work: dict[str, dict[str, Any]] = {}

    def on_tasks(self, tasks: BackgroundTasks | None) -> list[Emitted]:
        """Shell tasks: each running one is work, the others (or those gone) are removed."""
        if self._ctx.agent_id or tasks is None or not tasks.known:
            return []
        out: list[Emitted] = []
        running = {t.id: t for t in tasks.tasks if t.status == "running"}
        for task_id, task in running.items():
            work = {
                "id": f"shell:{task_id}",
                "label": clean_line(task.description or task.command) or "Background shell",
                "startedAt": self._started_at(task.started_at),
                "kind": "shell",
                "command": task.command,
            }
            out.extend(self._set(work))
        for work_id in [w for w in self._work if w.startswith("shell:")]:
            if work_id.removeprefix("shell:") not in running:
                out.extend(self._removed(work_id))
        return out

    def on_subagent(self, subagent: Subagent) -> list[Emitted]:
        """A subagent launched in the background is chat background work while it runs."""
        if not subagent.background or self._ctx.agent_id:
            return []
        work_id = f"subagent:{subagent.id}"
        if subagent.status not in (SubagentStatus.RUNNING, SubagentStatus.IDLE):
            return self._removed(work_id)
        work = {
            "id": work_id,
            "label": clean_line(subagent.name) or "Subagent",
            "startedAt": self._started_at(subagent.started_at),
            "kind": "subagent",
            "chat": self._ctx.subagent_chat_uri(subagent.id),
        }
        return self._set(work)

    def _started_at(self, started: datetime | None) -> str:
        if started is None:
            return iso_from_ms(self._ctx.now_ms())
        return iso_from_ms(int(started.timestamp() * 1000))

    def _set(self, work: dict[str, Any]) -> list[Emitted]:
        if self._work.get(work["id"]) == work:
            return []
        self._work[work["id"]] = work
        return [self._ctx.chat({"type": "chat/backgroundWorkSet", "work": work})]

    def _removed(self, work_id: str) -> list[Emitted]:
        if self._work.pop(work_id, None) is None:
            return []
        return [self._ctx.chat({"type": "chat/backgroundWorkRemoved", "id": work_id})]
