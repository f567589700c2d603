"""Pure models of one conversation's event stream, fed event by event.

They hold what a consumer such as the bridge would rebuild from the stream (a transcript
keyed by (agent_id, id), the interactions by id, the turn lifecycle) and record every
place where the stream breaks the agentapi rules instead of raising, so a check can
report all of them at once. No I/O and no clock: they see only the events.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ahp_bridge.agentapi import (
    Event,
    EventKind,
    InteractionKind,
    InteractionState,
    ItemKind,
    TurnState,
)

# Each event kind and the one payload attribute it carries; the other payloads stay empty.
_PAYLOAD: dict[str, str] = {
    EventKind.ITEM: "item",
    EventKind.DELTA: "delta",
    EventKind.TURN: "turn",
    EventKind.INTERACTION: "interaction",
    EventKind.SUBAGENT: "subagent",
    EventKind.BACKGROUND_TASKS: "background_tasks",
    EventKind.SCHEDULES: "schedules",
    EventKind.CONTEXT: "context",
    EventKind.USAGE: "usage",
    EventKind.TOKENS: "tokens",
    EventKind.EXECUTION: "execution",
    EventKind.ACTIVITY: "activity",
    EventKind.TODOS: "todos",
    EventKind.MODEL_SELECTION: "model_selection",
    EventKind.MCP_STATUS: "mcp_status",
    EventKind.SKILL: "skill",
}
_OBJECT_PAYLOADS = frozenset(_PAYLOAD.values())

TERMINAL_TURN_STATES = frozenset({TurnState.COMPLETED, TurnState.CANCELLED, TurnState.FAILED})
FINAL_INTERACTION_STATES = frozenset(
    {InteractionState.ANSWERED, InteractionState.REJECTED, InteractionState.EXPIRED}
)
# Main-agent output that belongs to a running turn and so must not appear outside one.
_TURN_OUTPUT_KINDS = frozenset({ItemKind.ASSISTANT, ItemKind.REASONING, ItemKind.TOOL})


def describe(event: Event) -> str:
    """A short, prompt-free description of an event for failure reasons."""
    if event.item is not None:
        agent = f" agent={event.item.agent_id!r}" if event.item.agent_id else ""
        return f"item {event.item.kind.value} id={event.item.id!r}{agent}"
    if event.delta is not None:
        agent = f" agent={event.delta.agent_id!r}" if event.delta.agent_id else ""
        return f"delta {event.delta.kind.value} item_id={event.delta.item_id!r}{agent}"
    if event.turn is not None:
        return f"turn {event.turn.state.value}"
    if event.interaction is not None:
        ia = event.interaction
        return f"interaction {ia.kind.value} id={ia.id!r} state={ia.state.value}"
    return f"event {event.kind.value}"


def payload_problem(event: Event) -> str | None:
    """Why ``event`` does not carry exactly the payload its kind names, or None."""
    wanted = _PAYLOAD.get(event.kind)
    extra = sorted(
        name for name in _OBJECT_PAYLOADS if name != wanted and getattr(event, name) is not None
    )
    if wanted is not None and getattr(event, wanted) is None:
        return f"{event.kind.value} event without its {wanted} payload"
    if extra:
        return f"{event.kind.value} event also carries {', '.join(extra)}"
    return None


@dataclass
class TranscriptEntry:
    """One transcript item as a consumer rebuilds it from items and deltas."""

    agent_id: str
    id: str
    kind: ItemKind
    text: str


@dataclass
class InteractionRecord:
    """One interaction's kind and every state it was reported in, in order."""

    id: str
    kind: InteractionKind
    agent_id: str
    tool_call_id: str = ""
    states: list[InteractionState] = field(default_factory=list)


@dataclass
class Transcript:
    """The transcript and interactions rebuilt from a stream, with every rule it broke.

    Items upsert by (agent_id, id); a delta appends to its item and creates it when
    absent. An item's kind is fixed by its first event, so a later item or delta of
    another kind for the same key is a violation, as is an interaction changing kind or
    going back to pending after a final state.
    """

    items: dict[tuple[str, str], TranscriptEntry] = field(default_factory=dict)
    interactions: dict[str, InteractionRecord] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    events: int = 0

    def feed(self, event: Event) -> None:
        """Apply one event, recording any rule it breaks."""
        self.events += 1
        problem = payload_problem(event)
        if problem is not None:
            self.violations.append(f"event #{self.events}: {problem}")
            return
        if event.kind == EventKind.ITEM and event.item is not None:
            self._item(event)
        elif event.kind == EventKind.DELTA and event.delta is not None:
            self._delta(event)
        elif event.kind == EventKind.INTERACTION and event.interaction is not None:
            self._interaction(event)

    def _item(self, event: Event) -> None:
        item = event.item
        assert item is not None
        if not item.id:
            self.violations.append(f"event #{self.events}: item {item.kind.value} without an id")
            return
        key = (item.agent_id, item.id)
        old = self.items.get(key)
        if old is not None and old.kind != item.kind:
            self.violations.append(
                f"event #{self.events}: item id={item.id!r} changed kind "
                f"from {old.kind.value} to {item.kind.value}"
            )
            return
        self.items[key] = TranscriptEntry(item.agent_id, item.id, item.kind, item.text)

    def _delta(self, event: Event) -> None:
        delta = event.delta
        assert delta is not None
        if not delta.item_id:
            self.violations.append(f"event #{self.events}: delta without an item_id")
            return
        key = (delta.agent_id, delta.item_id)
        old = self.items.get(key)
        if old is None:
            self.items[key] = TranscriptEntry(delta.agent_id, delta.item_id, delta.kind, delta.text)
        elif old.kind != delta.kind:
            self.violations.append(
                f"event #{self.events}: delta of kind {delta.kind.value} for "
                f"{old.kind.value} item id={delta.item_id!r}"
            )
        else:
            old.text += delta.text

    def _interaction(self, event: Event) -> None:
        ia = event.interaction
        assert ia is not None
        if not ia.id:
            self.violations.append(f"event #{self.events}: interaction without an id")
            return
        record = self.interactions.get(ia.id)
        if record is None:
            record = self.interactions[ia.id] = InteractionRecord(ia.id, ia.kind, ia.agent_id)
        if ia.tool_call_id:
            record.tool_call_id = ia.tool_call_id
        elif record.kind != ia.kind:
            self.violations.append(
                f"event #{self.events}: interaction id={ia.id!r} changed kind "
                f"from {record.kind.value} to {ia.kind.value}"
            )
            return
        if (
            ia.state == InteractionState.PENDING
            and record.states
            and record.states[-1] in FINAL_INTERACTION_STATES
        ):
            self.violations.append(
                f"event #{self.events}: interaction id={ia.id!r} back to pending "
                f"after {record.states[-1].value}"
            )
        record.states.append(ia.state)

    def dangling_tool_calls(self) -> list[str]:
        """Interactions whose tool_call_id names no tool item of their agent.

        Judged on a whole stream: the tool item may come before or after its request.
        """
        dangling = []
        for record in self.interactions.values():
            if not record.tool_call_id:
                continue
            entry = self.items.get((record.agent_id, record.tool_call_id))
            if entry is None or entry.kind != ItemKind.TOOL:
                dangling.append(
                    f"interaction id={record.id!r} names tool call "
                    f"{record.tool_call_id!r}, which is no tool item of its agent"
                )
        return dangling

    def texts(self, kind: ItemKind, agent_id: str = "") -> list[str]:
        """The texts of one agent's items of ``kind``, in first-seen order."""
        return [e.text for e in self.items.values() if e.kind == kind and e.agent_id == agent_id]


@dataclass
class TurnRecord:
    """One turn: the event index that started it and how it ended (None while running)."""

    started: int
    ended: int | None = None
    state: TurnState | None = None


@dataclass
class TurnTracker:
    """The turn lifecycle of one stream: working, then exactly one terminal state.

    Outside a running turn the main agent emits no assistant, reasoning or tool output
    and asks nothing: such an event either belongs to a turn that already ended or to
    none. Subagents (agent_id set) may outlive a turn and are not constrained here.
    """

    turns: list[TurnRecord] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    index: int = 0

    @property
    def running(self) -> bool:
        """True while the latest turn has not reached a terminal state."""
        return bool(self.turns) and self.turns[-1].ended is None

    def feed(self, event: Event) -> None:
        """Apply one event, recording any lifecycle rule it breaks."""
        self.index += 1
        if event.kind == EventKind.TURN and event.turn is not None:
            self._turn(event.turn.state)
        elif not self.running:
            problem = _outside_turn(event)
            if problem is not None:
                where = "after its turn ended" if self.turns else "before any turn started"
                self.violations.append(f"event #{self.index}: {problem} {where}")

    def _turn(self, state: TurnState) -> None:
        if state == TurnState.WORKING:
            if not self.running:
                self.turns.append(TurnRecord(started=self.index))
            return
        if self.running:
            last = self.turns[-1]
            last.ended, last.state = self.index, state
        elif self.turns:
            previous = self.turns[-1].state
            assert previous is not None
            self.violations.append(
                f"event #{self.index}: second terminal state {state.value} for a turn "
                f"that already ended {previous.value}"
            )
        else:
            self.violations.append(
                f"event #{self.index}: terminal state {state.value} without a working turn"
            )


def _outside_turn(event: Event) -> str | None:
    if event.delta is not None and not event.delta.agent_id:
        return f"main-agent {describe(event)}"
    if event.item is not None and not event.item.agent_id and event.item.kind in _TURN_OUTPUT_KINDS:
        return f"main-agent {describe(event)}"
    ia = event.interaction
    if ia is not None and not ia.agent_id and ia.state == InteractionState.PENDING:
        return f"pending main-agent {describe(event)}"
    return None
