"""One open fake conversation: the contract's rules, with turns played from a script.

The rules every provider must follow live here once (busy, steer, cancel, respond, close,
exit); what a turn does comes from a ``TurnSource``, the TOML script's steps
(``turns.ScriptedTurns``). A replayed conversation (``replay.ReplayConversation``) keeps
this plumbing and overrides the calls. Turns run in the provider's nursery, so cancelling
a caller never cancels a turn. Every event goes through ``emit``,
which drops events once the conversation is closed and folds transcript events into the
fake's own record.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

import trio

from ahp_bridge.agentapi import (
    DELIVERY_STEER,
    MCP_CONNECTED,
    MCP_DISABLED,
    REWIND_CONVERSATION,
    REWIND_CONVERSATION_AND_FILES,
    AgentAPIError,
    Answer,
    Attachment,
    Busy,
    CallTool,
    Closed,
    Command,
    Event,
    EventKind,
    EventSink,
    FileDiff,
    History,
    HostTool,
    Interaction,
    InteractionGone,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    MCPServerStatus,
    MCPStatus,
    MCPStatusSnapshot,
    MCPTool,
    ModelSelection,
    NativeTurnChanges,
    Prompt,
    RewindPreview,
    RewindResult,
    RewindSkip,
    Subagent,
    SubagentStatus,
    Turn,
    TurnState,
    Unsupported,
)

from .files import FileRecord
from .transcript import Transcript

if TYPE_CHECKING:
    from .provider import FakeProvider


class TurnEnded(Exception):
    """Raised inside a turn to end it early: completed (stop), failed (error) or exit."""

    def __init__(self, state: TurnState | None, message: str = "") -> None:
        super().__init__(message)
        self.state = state  # None: the runtime exited
        self.message = message


@dataclass
class Pending:
    """An interaction the turn waits on; ``answer`` is set by respond."""

    interaction: Interaction
    answered: trio.Event = field(default_factory=trio.Event)
    answer: Answer | None = None


@dataclass
class ActiveTurn:
    """The running turn's state; ``ended`` once its terminal event went out."""

    number: int
    model: str
    use_steers: bool
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    pending: dict[str, Pending] = field(default_factory=dict)
    steers: list[Prompt] = field(default_factory=list)
    subagents: dict[str, Subagent] = field(default_factory=dict)
    """Subagents still running: they stop with the turn."""
    ended: bool = False
    counter: int = 0


class TurnSource(Protocol):
    """What turns do (the script's steps)."""

    def start(
        self, conversation: FakeConversation, prompt: Prompt
    ) -> Callable[[], Awaitable[None]]:
        """Prepare the turn for ``prompt`` and return the coroutine function that plays it."""
        ...


class FakeConversation:
    """An open conversation of the fake provider (agentapi Conversation)."""

    def __init__(self, provider: FakeProvider, transcript: Transcript, index: int) -> None:
        self._provider = provider
        self.transcript = transcript
        self.index = index
        self._sink: EventSink | None = None
        self.closed = False
        self.turn: ActiveTurn | None = None
        self.session_approvals: dict[str, str] = {}
        """Requests allowed for the session (key -> option id), until this handle closes."""
        self.host_tools: dict[str, HostTool] = {}
        """OpenRequest.tools by name: the host's tools a ``host_tool`` step may call."""
        self.call_tool: CallTool | None = None
        self.session_id = ""
        """OpenRequest.session_id: the Task a host tool call belongs to."""
        self.source: TurnSource = provider.turn_source(self)
        self.files: FileRecord = provider.files_of(transcript)
        """The files this conversation's turns wrote (its diff), kept across reopens."""
        self.display_next: str | None = None
        """The text the next turn's user item shows (a command's ``/name args``)."""
        self.agent = ""
        """The selected custom agent (``[[agents]]`` id), "" for the default one."""
        self.mcp: dict[str, MCPStatus] = provider.mcp_for_conversation()
        """This conversation's MCP servers, as it opened with them."""

    # -- plumbing --------------------------------------------------------------------------

    def attach(self, sink: EventSink | None) -> None:
        """Set the EventSink of OpenRequest.events (events go nowhere without one)."""
        self._sink = sink

    def now(self) -> datetime:
        return self._provider.now()

    def lose_sign_in(self, reason: str) -> bool:
        """The runtime's sign-in expires (see FakeProvider.lose_sign_in)."""
        return self._provider.lose_sign_in(reason)

    async def sleep(self, seconds: float) -> None:
        """Pace the turn: scaled by the provider's time_scale; always a checkpoint."""
        await trio.sleep(max(0.0, seconds * self._provider.time_scale))

    def emit(self, event: Event) -> None:
        """Record and deliver one event; nothing flows once the conversation is closed."""
        if self.closed:
            return
        self.transcript.record(event)
        if self._sink is not None:
            self._sink.emit(event)

    def emit_turn(self, turn: ActiveTurn, event: Event) -> None:
        """Emit on behalf of a turn; a turn that already ended (cancelled) emits nothing."""
        if not turn.ended and self.turn is turn:
            self.emit(event)

    def next_id(self, turn: ActiveTurn, prefix: str) -> str:
        turn.counter += 1
        return f"{prefix}{turn.number}-{turn.counter}"

    def _check_open(self) -> None:
        if self.closed:
            raise Closed(f"conversation {self.transcript.meta.id} is closed")

    # -- Conversation ----------------------------------------------------------------------

    def id(self) -> str:
        return self.transcript.meta.id

    async def history(self) -> History:
        return self.transcript.history()

    async def send(self, prompt: Prompt) -> None:
        self._start(prompt)

    def _start(self, prompt: Prompt, display: str | None = None) -> None:
        """Start a turn for ``prompt`` (send and run_command): open, signed in and idle, or
        raise; ``display`` is the text its user item shows instead of the prompt's."""
        self._check_open()
        self._provider.require_sign_in()
        if self.turn is not None:
            raise Busy("a turn is already running in this conversation")
        self.display_next = display
        play = self.source.start(self, prompt)
        self._provider.spawn(self._play, self.turn, play)

    async def _play(self, turn: ActiveTurn, play: Callable[[], Awaitable[None]]) -> None:
        with turn.scope:
            try:
                await play()
            except TurnEnded as end:
                if end.state is None:
                    self.exit(end.message)
                    return
                self.finish(turn, end.state, error=end.message)
                return
            except Exception as exc:  # a fault ends this turn, never the provider's nursery
                message = f"fake provider error: {type(exc).__name__}: {exc}"
                self.finish(turn, TurnState.FAILED, error=message)
                return
            self.finish(turn, TurnState.COMPLETED)

    def begin_turn(self, prompt: Prompt, *, model: str, use_steers: bool = True) -> ActiveTurn:
        """Start a turn: the user item and the working state, before send returns."""
        turn = ActiveTurn(number=self.transcript.prompts + 1, model=model, use_steers=use_steers)
        self.turn = turn
        self.emit(Event(kind=EventKind.ITEM, item=self.user_item(turn, prompt)))
        self.emit(Event(kind=EventKind.TURN, turn=Turn(state=TurnState.WORKING, model=model)))
        return turn

    def user_item(self, turn: ActiveTurn, prompt: Prompt, delivery: str = "") -> Item:
        attachments = [
            Attachment(name=blob.name, mime=blob.mime, size=len(blob.data))
            for blob in prompt.attachments
        ]
        shown, self.display_next = self.display_next, None
        return Item(
            id=self.next_id(turn, "u"),
            kind=ItemKind.USER,
            text=prompt.text if shown is None or delivery else shown,
            time=self.now(),
            delivery=delivery,
            attachments=attachments,
        )

    def deliver_steers(self, turn: ActiveTurn) -> None:
        """Use queued steers now (a step boundary): each becomes a steer user item."""
        if not turn.use_steers:
            return
        while turn.steers and not turn.ended:
            prompt = turn.steers.pop(0)
            item = self.user_item(turn, prompt, delivery=DELIVERY_STEER)
            self.emit_turn(turn, Event(kind=EventKind.ITEM, item=item))

    def finish(
        self, turn: ActiveTurn, state: TurnState, *, error: str = "", reason: str = ""
    ) -> None:
        """End the turn once: unused steers get a notice, pending interactions expire."""
        if turn.ended:
            return
        for _ in turn.steers:
            notice = Item(
                id=self.next_id(turn, "n"),
                kind=ItemKind.NOTICE,
                text="A steering message was not used: the turn ended before it could be.",
                time=self.now(),
            )
            self.emit(Event(kind=EventKind.ITEM, item=notice))
        turn.steers.clear()
        self.expire(turn)
        stopped = SubagentStatus.FAILED if state is TurnState.FAILED else SubagentStatus.CANCELLED
        for record in turn.subagents.values():
            update = {"status": stopped, "ended_at": self.now()}
            self.emit(Event(kind=EventKind.SUBAGENT, subagent=record.model_copy(update=update)))
        turn.subagents.clear()
        turn.ended = True
        if self.turn is turn:
            self.turn = None
        self.emit(
            Event(
                kind=EventKind.TURN,
                turn=Turn(state=state, error=error, model=turn.model, reason=reason),
            )
        )
        turn.scope.cancel()

    def expire(self, turn: ActiveTurn) -> None:
        for pending in list(turn.pending.values()):
            expired = pending.interaction.model_copy(update={"state": InteractionState.EXPIRED})
            self.emit(Event(kind=EventKind.INTERACTION, interaction=expired))
        turn.pending.clear()

    def exit(self, message: str) -> None:
        """The runtime exited: report it and close the conversation."""
        turn = self.turn
        if turn is not None:
            turn.ended = True
            self.turn = None
            turn.scope.cancel()
        self.emit(Event(kind=EventKind.EXIT, error=message))
        self.mark_exited()

    def mark_exited(self) -> None:
        """After EventExit the conversation is closed: calls raise Closed, nothing flows."""
        self.closed = True
        self._provider.forget(self)

    async def ask(self, turn: ActiveTurn, interaction: Interaction) -> Answer:
        """Emit a pending interaction and wait for respond."""
        pending = Pending(interaction)
        turn.pending[interaction.id] = pending
        self.emit_turn(turn, Event(kind=EventKind.INTERACTION, interaction=interaction))
        await pending.answered.wait()
        assert pending.answer is not None
        return pending.answer

    async def commands(self) -> list[Command]:
        """The script's ``[[commands]]`` and its enabled, user-invocable ``[[skills]]``."""
        self._check_open()
        await trio.lowlevel.checkpoint()
        return self._provider.commands()

    async def run_command(self, name: str, args: Prompt) -> None:
        """Start a turn with the command's prompt; the user item shows ``/name arguments``."""
        self._check_open()
        spec = self._provider.command(name)
        if spec is None:
            if not self._provider.commands():
                raise Unsupported("the fake provider has no commands")
            raise AgentAPIError(f"/{name} is not a command of this conversation")
        text = args.text.strip()
        prompt = args.model_copy(update={"text": spec.expand(text)})
        self._start(prompt, display=f"/{name} {text}".rstrip())

    async def select_agent(self, id: str) -> None:
        """AgentSelector: a script ``[[agents]]`` id, or "" for the default agent."""
        self._check_open()
        if self.turn is not None:
            raise Busy("the agent cannot change during a turn")
        self._provider.check_agent(id)
        await trio.lowlevel.checkpoint()
        self.agent = id

    # -- MCPController ---------------------------------------------------------------------

    async def mcp_status(self) -> list[MCPStatus]:
        self._check_open()
        await trio.lowlevel.checkpoint()
        return [s.model_copy() for s in self.mcp.values()]

    async def set_mcp_server_enabled(self, name: str, enabled: bool) -> None:
        """Start or stop one of this conversation's servers (the user-wide setting stays)."""
        self._check_open()
        status = self._mcp_server(name)
        await trio.lowlevel.checkpoint()
        spec = self._provider.mcp_spec(name)
        connected = spec.status if spec is not None and spec.status != "disabled" else "connected"
        state = connected if enabled else MCP_DISABLED
        tools = [MCPTool(name=t) for t in (spec.tools if spec else ())]
        self.mcp[name] = status.model_copy(
            update={"status": state, "tools": tools if state == MCP_CONNECTED else []}
        )
        self.emit_mcp()

    async def restart_mcp_server(self, name: str) -> None:
        self._check_open()
        status = self._mcp_server(name)
        if status.status == MCP_DISABLED:
            raise AgentAPIError(f"MCP server {name!r} is disabled; enable it first")
        await trio.lowlevel.checkpoint()
        self.emit_mcp()

    async def mcp_sign_in(self, name: str, again: bool) -> str:
        self._check_open()
        self._mcp_server(name)
        raise Unsupported("the fake provider's MCP servers need no sign-in")

    def _mcp_server(self, name: str) -> MCPStatus:
        status = self.mcp.get(name)
        if status is None:
            raise AgentAPIError(f"no MCP server {name!r} in this conversation")
        return status

    def emit_mcp(self) -> None:
        servers = [
            MCPServerStatus(name=s.name, status=s.status, error=s.error, source=s.source)
            for s in self.mcp.values()
        ]
        snapshot = MCPStatusSnapshot(supported=True, ready=True, servers=servers)
        self.emit(Event(kind=EventKind.MCP_STATUS, mcp_status=snapshot))

    async def steer(self, prompt: Prompt) -> None:
        self._check_open()
        turn = self.turn
        if turn is None:
            raise AgentAPIError("no turn is running: a steer never starts a turn")
        turn.steers.append(prompt)

    async def cancel(self) -> None:
        self._check_open()
        turn = self.turn
        if turn is None:
            return
        latency = self._provider.cancel_latency
        if not latency:
            self.finish(turn, TurnState.CANCELLED)
            return

        async def later() -> None:  # an agent that answers its cancelled prompt a moment later
            await trio.sleep(latency)
            self.finish(turn, TurnState.CANCELLED)

        self._provider.spawn(later)

    async def cancel_subagent(self, agent_id: str) -> None:
        self._check_open()
        raise Unsupported("the fake provider cannot stop one subagent")

    async def prompt_subagent(self, agent_id: str, text: str) -> None:
        self._check_open()
        raise Unsupported("the fake provider cannot chat with a subagent")

    async def respond(self, interaction_id: str, answer: Answer) -> None:
        self._check_open()
        turn = self.turn
        pending = turn.pending.get(interaction_id) if turn is not None else None
        if turn is None or pending is None:
            raise InteractionGone(f"interaction {interaction_id} is not pending")
        state, resolution = check_answer(pending.interaction, answer)
        del turn.pending[interaction_id]
        done = pending.interaction.model_copy(update={"state": state, "resolution": resolution})
        self.emit_turn(turn, Event(kind=EventKind.INTERACTION, interaction=done))
        pending.answer = answer
        pending.answered.set()

    async def diff(self) -> list[FileDiff]:
        """The files the conversation's turns wrote: content before the first write, and now."""
        self._check_open()
        await trio.lowlevel.checkpoint()
        return self.files.diff()

    # -- HistoryRewinder -------------------------------------------------------------------

    async def preview_rewind(self, user_item_id: str) -> RewindPreview:
        self._check_open()
        await trio.lowlevel.checkpoint()
        turn = self.transcript.turn_of(user_item_id)
        if turn is None:
            raise ValueError(f"no prompt {user_item_id!r} is recorded in this conversation")
        touched = self.files.touched_since(turn)
        return RewindPreview(
            user_event_id=user_item_id,
            turns=self.transcript.prompts - turn + 1,
            files_available=True,
            files=NativeTurnChanges(status="available", files=len(touched)),
        )

    async def rewind(self, user_event_id: str, mode: str) -> RewindResult:
        """Discard the prompt ``user_event_id`` and everything after it (and, with
        conversation-and-files, put back the files those turns wrote)."""
        self._check_open()
        if mode not in (REWIND_CONVERSATION, REWIND_CONVERSATION_AND_FILES):
            raise ValueError(f"unknown rewind mode {mode!r}")
        if self.turn is not None:
            raise Busy("a turn is running; rewind when it has ended")
        turn = self.transcript.turn_of(user_event_id)
        if turn is None:
            raise ValueError(f"no prompt {user_event_id!r} is recorded in this conversation")
        await trio.lowlevel.checkpoint()
        restored: list[str] = []
        skipped: list[RewindSkip] = []
        if mode == REWIND_CONVERSATION_AND_FILES:
            restored, skipped = self.files.rewind(turn)
        removed = self.transcript.truncate(user_event_id)
        return RewindResult(
            outcome="rewound",
            events_removed=removed,
            restored_files=restored,
            skipped_files=skipped,
        )

    async def set_model(self, model: str, effort: str, context_size: str) -> None:
        self._check_open()
        if self.turn is not None:
            raise Busy("the model cannot change during a turn")
        self._provider.check_selection(model, effort, context_size)
        meta = self.transcript.meta
        meta.model, meta.effort, meta.context_size = model, effort, context_size
        self.transcript.save_meta()
        selection = ModelSelection(model=model, effort=effort, context_size=context_size or None)
        self.emit(Event(kind=EventKind.MODEL_SELECTION, model_selection=selection))

    async def set_title(self, title: str) -> None:
        self._check_open()
        meta = self.transcript.meta
        meta.title, meta.title_set = title, True
        self.transcript.save_meta()

    async def close(self) -> None:
        """Stop the turn (pending interactions expire unanswered), then stop all events."""
        if self.closed:
            return
        if self.turn is not None:
            self.finish(self.turn, TurnState.CANCELLED, reason="closed")
        self.closed = True
        self._provider.forget(self)


def check_answer(interaction: Interaction, answer: Answer) -> tuple[InteractionState, str]:
    """Validate an answer against its interaction; ValueError leaves it pending."""
    if interaction.kind is InteractionKind.PERMISSION:
        for option in interaction.options:
            if option.id == answer.decision:
                state = InteractionState.REJECTED if option.reject else InteractionState.ANSWERED
                return state, option.id
        offered = ", ".join(o.id for o in interaction.options)
        raise ValueError(f"decision {answer.decision!r} is not one of the options: {offered}")
    if answer.reject:
        return InteractionState.REJECTED, "rejected"
    if answer.cancel:
        return InteractionState.REJECTED, "cancelled"
    if len(answer.answers) != len(interaction.questions):
        raise ValueError(
            f"expected {len(interaction.questions)} answers (one per question), "
            f"got {len(answer.answers)}"
        )
    for number, (question, values) in enumerate(
        zip(interaction.questions, answer.answers, strict=True), start=1
    ):
        if question.field is not None:
            try:
                question.field_value(values)
            except ValueError as exc:
                raise ValueError(f"question {number}: the answer {exc}") from None
        elif not values:
            raise ValueError(f"question {number} has no answer")
        elif question.choices and not question.custom:
            wrong = [v for v in values if v not in question.choices]
            if wrong:
                raise ValueError(f"question {number}: {wrong[0]!r} is not one of its choices")
    return InteractionState.ANSWERED, "answered"
