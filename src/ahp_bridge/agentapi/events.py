"""Event, the one adapter notification, and EventSink, where adapters send it."""

from __future__ import annotations

from typing import Any, Protocol, Self, runtime_checkable

from pydantic import model_validator

from ._base import GoStruct
from .enums import EventKind
from .interactions import Interaction
from .items import Delta, Item, Turn
from .live import (
    Activity,
    BackgroundTasks,
    Context,
    ExecutionState,
    MCPStatusSnapshot,
    ModelSelection,
    ScheduleSnapshot,
    SkillLoad,
    TodoList,
    TokenUsage,
    Usage,
)
from .subagents import Subagent

# The fields each kind may set; every other payload field must be left empty.
_PAYLOADS: dict[EventKind, tuple[str, ...]] = {
    EventKind.ITEM: ("item",),
    EventKind.DELTA: ("delta",),
    EventKind.TURN: ("turn",),
    EventKind.INTERACTION: ("interaction",),
    EventKind.PLAN_PATH: ("plan_path", "plan_version"),
    EventKind.EXIT: ("error", "detached"),
    EventKind.TITLE: ("title",),
    EventKind.SUBAGENT: ("subagent",),
    EventKind.BACKGROUND_TASKS: ("background_tasks",),
    EventKind.SCHEDULES: ("schedules",),
    EventKind.CONTEXT: ("context",),
    EventKind.USAGE: ("usage",),
    EventKind.TOKENS: ("tokens",),
    EventKind.EXECUTION: ("execution",),
    EventKind.COMPACTION: ("compacting", "compacting_background"),
    EventKind.ACTIVITY: ("activity",),
    EventKind.TODOS: ("todos",),
    EventKind.MODEL_SELECTION: ("model_selection",),
    EventKind.MCP_STATUS: ("mcp_status",),
    EventKind.SKILL: ("skill",),
}
# Kinds whose payload is a struct pointer that must be set.
_REQUIRED: dict[EventKind, str] = {
    kind: names[0]
    for kind, names in _PAYLOADS.items()
    if len(names) == 1 and kind is not EventKind.TITLE
}


class Event(GoStruct):
    """One adapter notification. Exactly one payload matches ``kind``.

    Struct payloads (item, delta, turn, ...) are required for their kind; scalar payloads
    are plan_path/plan_version (PLAN_PATH), error/detached (EXIT), title (TITLE) and
    compacting/compacting_background (COMPACTION, both False once it ended). Payload
    fields of other kinds must stay empty. JSON keys are the Go field names ("Kind").
    """

    kind: EventKind
    item: Item | None = None
    delta: Delta | None = None
    turn: Turn | None = None
    interaction: Interaction | None = None
    plan_path: str = ""
    plan_version: int = 0
    """Lightweight invalidation from the native plan_changed."""
    subagent: Subagent | None = None
    background_tasks: BackgroundTasks | None = None
    schedules: ScheduleSnapshot | None = None
    context: Context | None = None
    usage: Usage | None = None
    tokens: TokenUsage | None = None
    execution: ExecutionState | None = None
    error: str = ""
    """The sanitized reason for EXIT."""
    detached: bool = False
    """EXIT ended only this conversation because its turn did not end after stop: the
    provider ended the turn as cancelled first, nothing was lost, the next prompt reopens."""
    title: str = ""
    """The untrusted provider title for TITLE."""
    compacting: bool = False
    """COMPACTION: a compaction holds the conversation."""
    compacting_background: bool = False
    """COMPACTION: a compaction goes on beside the turn."""
    activity: Activity | None = None
    todos: TodoList | None = None
    model_selection: ModelSelection | None = None
    mcp_status: MCPStatusSnapshot | None = None
    skill: SkillLoad | None = None

    @model_validator(mode="after")
    def _one_payload(self) -> Self:
        allowed = _PAYLOADS[self.kind]
        required = _REQUIRED.get(self.kind)
        if required is not None and getattr(self, required) is None:
            raise ValueError(f"a {self.kind.value!r} event needs its {required} payload")
        for name in _ALL_PAYLOADS:
            if name not in allowed and _set(getattr(self, name)):
                raise ValueError(f"a {self.kind.value!r} event cannot carry {name}")
        return self


_ALL_PAYLOADS = tuple(name for names in _PAYLOADS.values() for name in names)


def _set(value: Any) -> bool:
    return value is not None and value is not False and value != "" and value != 0


@runtime_checkable
class EventSink(Protocol):
    """Receives adapter events for one conversation until its close returns.

    ``emit`` never blocks (on clients or anything else) and is safe to call from any thread,
    so adapters may call it from their own event threads or loops.
    """

    def emit(self, event: Event) -> None:
        """Deliver one event without blocking."""
        ...
