"""Subagents: agent instances the main agent delegated work to, and their runs."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from ._base import GoModel, GoTime, Internal, OmitEmpty, OmitNil, OmitZero
from .constants import MAX_SUBAGENT_RUNS, SUBAGENT_TRIGGER_SPAWN
from .enums import SubagentStatus
from .live import Retry


class SubagentRun(GoModel):
    """One period of work of a subagent.

    ``status`` is what the run ended with, or RUNNING; ``ended_at`` is None while it runs.
    """

    started_at: OmitZero[GoTime] = None
    ended_at: OmitZero[GoTime] = None
    status: SubagentStatus
    trigger: str
    """Who started the run: SUBAGENT_TRIGGER_SPAWN, _AGENT or _USER."""


def cap_subagent_runs(runs: list[SubagentRun]) -> list[SubagentRun]:
    """Keep the first run and the newest, MAX_SUBAGENT_RUNS in all (returns a new list)."""
    if len(runs) <= MAX_SUBAGENT_RUNS:
        return list(runs)
    return [runs[0], *runs[len(runs) - MAX_SUBAGENT_RUNS + 1 :]]


class Subagent(GoModel):
    """One agent instance the main agent delegated work to; its items carry agent_id == id."""

    id: str
    model: OmitEmpty[str] = ""
    effort: OmitEmpty[str] = ""
    parent_tool_call_id: OmitEmpty[str] = ""
    """The tool call item that spawned it."""
    parent_agent_id: OmitEmpty[str] = ""
    """The subagent whose tool call spawned it; empty when the main agent did."""
    name: str
    description: OmitEmpty[str] = ""
    background: OmitEmpty[bool] = False
    """Launched in the background: its parent call only acknowledges; its result is its last
    message."""
    status: SubagentStatus
    error: OmitEmpty[str] = ""
    """The provider's reason for FAILED."""
    started_at: OmitZero[GoTime] = None
    ended_at: OmitZero[GoTime] = None
    runs: OmitEmpty[list[SubagentRun]] = Field(default_factory=list)
    """Periods of work, oldest first; the latest carries status and ended_at. At most
    MAX_SUBAGENT_RUNS are kept: the first and the newest."""
    tokens: OmitEmpty[int] = 0
    """Input and output tokens over all runs."""
    tool_calls: OmitEmpty[int] = 0
    """Tool calls made over all runs."""
    retry: OmitNil[Retry | None] = None
    """Set while its current model call is retried; live only."""
    result: Internal[str] = ""
    """The start of the output its parent tool call recorded, when the record lacks that item."""

    def snapshot(self) -> Subagent:
        """A copy that owns its runs, the latest carrying this record's status and ended_at."""
        copy = self.model_copy(deep=True)
        if copy.runs:
            copy.runs[-1].status = self.status
            copy.runs[-1].ended_at = self.ended_at
        return copy

    def start_run(self, at: datetime | None, trigger: str) -> None:
        """End the latest run as this record says and open a running one at ``at``.

        A record without runs that is started again (a trigger other than spawn) first gets
        its spawn run back, from started_at to this record's status and ended_at. The caller
        then sets the record's own fields (status, ended_at ...). Runs are capped with
        cap_subagent_runs.
        """
        if not self.runs and trigger != SUBAGENT_TRIGGER_SPAWN:
            self.runs = [
                SubagentRun(
                    started_at=self.started_at,
                    status=self.status,
                    trigger=SUBAGENT_TRIGGER_SPAWN,
                )
            ]
        runs = self.snapshot().runs
        runs.append(SubagentRun(started_at=at, status=SubagentStatus.RUNNING, trigger=trigger))
        self.runs = cap_subagent_runs(runs)
