"""The contract's typed string enums (Go ``type X string`` with its constants)."""

from __future__ import annotations

from enum import StrEnum


class EventKind(StrEnum):
    """Discriminates Event payloads; exactly one payload matches the kind."""

    ITEM = "item"
    """Upserts a transcript item; a later one with the same agent_id and id replaces it."""
    DELTA = "delta"
    """Appends streamed text to an item, creating it when absent."""
    TURN = "turn"
    """A turn state transition."""
    INTERACTION = "interaction"
    """Upserts a permission request or question by id."""
    PLAN_PATH = "plan_path"
    """The provider-owned scratch plan identity; not a local-file read permission."""
    EXIT = "exit"
    """The conversation or its runtime became unusable; the conversation is then closed."""
    TITLE = "title"
    """The provider-generated conversation title, in Event.title."""
    SUBAGENT = "subagent"
    """Upserts a subagent record by Subagent.id."""
    BACKGROUND_TASKS = "background_tasks"
    """Replaces the live background shell task snapshot."""
    SCHEDULES = "schedules"
    """Replaces the open conversation's native schedule display metadata."""
    CONTEXT = "context"
    """Main-agent context usage; never persisted."""
    USAGE = "usage"
    """The conversation's AI units so far, in Event.usage."""
    TOKENS = "tokens"
    """One model call's token usage, in Event.tokens."""
    EXECUTION = "execution"
    """The runtime's execution state observation, in Event.execution."""
    COMPACTION = "compaction"
    """Compaction started (compacting), runs beside the turn (compacting_background) or ended."""
    ACTIVITY = "activity"
    """Replaces the running turn's live activity; never persisted."""
    TODOS = "todos"
    """Replaces the conversation's todo list; never persisted."""
    MODEL_SELECTION = "model_selection"
    """Provider-confirmed main-agent model settings, never the owner's consent to a change."""
    MCP_STATUS = "mcp_status"
    """Replaces the lightweight state of the open conversation's MCP servers."""
    SKILL = "skill"
    """One skill load; skill loads are not transcript items."""


class ItemKind(StrEnum):
    """Classifies transcript entries."""

    USER = "user"
    ASSISTANT = "assistant"
    REASONING = "reasoning"
    TOOL = "tool"
    NOTICE = "notice"
    """Provider-originated status text (errors, aborts, info)."""


class TurnState(StrEnum):
    """The adapter-reported state of the current turn.

    Waiting for permission or an answer is derived from pending interactions, not reported.
    """

    WORKING = "working"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    FAILED = "failed"


class InteractionKind(StrEnum):
    """Separates permission requests from questions and plan reviews."""

    PERMISSION = "permission"
    QUESTION = "question"
    PLAN_REVIEW = "plan_review"


class InteractionState(StrEnum):
    """The lifecycle of one interaction."""

    PENDING = "pending"
    ANSWERED = "answered"
    REJECTED = "rejected"
    EXPIRED = "expired"
    """The provider withdrew the request (turn ended, timeout, closed) without an answer."""


class ToolStatus(StrEnum):
    """The lifecycle of one tool call."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"


class SubagentStatus(StrEnum):
    """The lifecycle of one subagent."""

    RUNNING = "running"
    IDLE = "idle"
    """The live provider reports it finished and ready for a follow-up. Not terminal."""
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        """Whether this is an end status (completed, failed, cancelled).

        Failed and cancelled are final; completed only becomes idle when the live provider
        reports that the subagent takes a follow-up. Other later updates are ignored: a
        provider may report the end more than once.
        """
        return self in _TERMINAL


_TERMINAL = frozenset({SubagentStatus.COMPLETED, SubagentStatus.FAILED, SubagentStatus.CANCELLED})


class PlanAction(StrEnum):
    """An execution action the provider offers for a plan review (not a permission policy)."""

    AUTOPILOT = "autopilot"
    AUTOPILOT_FLEET = "autopilot_fleet"
    INTERACTIVE = "interactive"
    EXIT_ONLY = "exit_only"

    @classmethod
    def valid(cls, value: str) -> bool:
        """Whether ``value`` is one of the known actions (Go's PlanAction.Valid)."""
        return value in cls._value2member_map_


class CompletionDecision(StrEnum):
    """The provider's response to a completion request."""

    ACCEPTED = "accepted"
    REJECTED = "rejected"
    BLOCKED = "blocked"
    UNKNOWN = "unknown"
