"""A small, correct agentapi provider on trio, with switchable faults.

The conformance suite's own tests run it clean (every check passes) and with one fault
at a time (exactly that fault's check fails), which proves each check can fail. Prompts
pick the behaviour: "answer" streams a short answer, "long" runs until cancelled,
"permission" and "question" wait for an answer, "host tool" calls the host tool it was opened
with; anything else answers "ok".
"""

from __future__ import annotations

import dataclasses
import itertools
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Self

import trio

from ahp_bridge.agentapi import (
    AgentAPIError,
    Answer,
    Busy,
    CallTool,
    Capabilities,
    Closed,
    Command,
    ConversationNotFound,
    Delta,
    Event,
    EventKind,
    EventSink,
    FileDiff,
    FileEdit,
    History,
    HostTool,
    HostToolCall,
    Interaction,
    InteractionGone,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    ItemNotFound,
    Model,
    OpenRequest,
    Option,
    Prompt,
    Question,
    ReadRequest,
    RewindPreview,
    RewindResult,
    TitleRequest,
    ToolCall,
    ToolStatus,
    Turn,
    TurnState,
    Unsupported,
    UtilityRequest,
)

PROMPTS = {
    "answer": "answer",
    "long": "long",
    "permission": "permission",
    "question": "question",
    "exit": "exit",
    "host_tool": "host tool",
    "edit": "edit",
    "command": "explain",
}


@dataclass(frozen=True)
class Faults:
    """One switch per contract rule the toy can break; all off is a correct provider."""

    empty_display_name: bool = False  # provider_basics
    delta_kind_mismatch: bool = False  # transcript: a reasoning delta for an assistant item
    dangling_tool_call: bool = False  # transcript: a permission names a tool call never seen
    leak_to_sibling: bool = False  # conversation_isolation: events reach every open sink
    double_terminal: bool = False  # turn_lifecycle: "completed" reported twice
    output_after_end: bool = False  # turn_lifecycle: an assistant item after the turn ended
    event_after_close: bool = False  # events_after_close: a title event after close returns
    blocking_emit: bool = False  # emit_nonblocking: events through trio.from_thread.run_sync
    fold_send: bool = False  # busy_or_queued: a send during a turn silently joins it
    busy_but_queued: bool = False  # busy_or_queued: raises Busy, then runs the prompt anyway
    cancel_completes: bool = False  # cancel: a cancelled turn reports completed
    answer_lost_after_cancel: bool = False  # turn_after_cancel: the next turn ends empty
    cancel_answers: bool = False  # respond_gone: cancel reports pending interactions answered
    respond_again: bool = False  # respond_gone: an answered interaction accepts a new answer
    close_answers: bool = False  # close_expires: close reports pending interactions answered
    reopen_creates: bool = False  # reopen_unknown: an unknown id opens a new conversation
    usable_after_close: bool = False  # closed_conversation: send after close still works
    exit_keeps_open: bool = False  # exit_closes: the conversation stays usable after exit
    history_drops_answer: bool = False  # cap_history: history loses the assistant items
    read_unknown_empty: bool = False  # history_reader: an unknown id reads as empty
    titles_refused: bool = False  # cap_set_title: Titles advertised, set_title Unsupported
    diff_unadvertised: bool = False  # cap_diff: SessionDiff false, diff still answers
    set_model_refused: bool = False  # cap_set_model: a listed model is refused
    steer_wrong_error: bool = False  # cap_steer: steer raises Busy during a turn
    steer_dropped: bool = False  # cap_steer: an unused steer ends without a notice
    run_command_unsupported_lie: bool = False  # cap_commands: no commands, run_command runs
    run_command_any: bool = False  # cap_commands: an unlisted command still starts a turn
    diff_misses_edit: bool = False  # cap_file_edits: the diff leaves out the edited file
    rewind_keeps_history: bool = False  # cap_rewind: the rewound user item stays recorded
    subagent_accepts_unknown: bool = False  # cap_subagents: cancel_subagent of nobody succeeds
    host_call_wrong_id: bool = False  # cap_host_tools: the call's id names no tool item
    utility_task_id: bool = False  # host_tools_utility: a utility's call claims a Task


@dataclass
class Options:
    """The toy's configuration: faults, capabilities and how it treats a send during a turn."""

    faults: Faults = field(default_factory=Faults)
    queue_sends: bool = False
    supported: bool = True  # False: advertise (and offer) none of the optional features


class ToyProvider:
    """A provider whose conversations run in a nursery it owns (``async with provider``)."""

    def __init__(self, options: Options | None = None) -> None:
        self.options = options or Options()
        self.faults = self.options.faults
        self._stack: AsyncExitStack | None = None
        self._nursery: trio.Nursery | None = None
        self._records: dict[str, list[Item]] = {}
        self._ids = itertools.count(1)
        self._open: list[ToyConversation] = []

    async def __aenter__(self) -> Self:
        self._stack = AsyncExitStack()
        self._nursery = await self._stack.enter_async_context(trio.open_nursery())
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._stack is not None
        try:
            with trio.CancelScope(shield=True):
                await self.shutdown()
        finally:
            result = await self._stack.__aexit__(exc_type, exc, tb)
        return result

    @property
    def nursery(self) -> trio.Nursery:
        assert self._nursery is not None, "use the provider inside 'async with'"
        return self._nursery

    def name(self) -> str:
        return "toy"

    def display_name(self) -> str:
        return "" if self.faults.empty_display_name else "Toy provider"

    def capabilities(self) -> Capabilities:
        on = self.options.supported
        return Capabilities(
            cancel=on,
            permissions=on,
            questions=on,
            session_diff=on and not self.faults.diff_unadvertised,
            history=on,
            titles=on,
            host_tools=on,
            rewind=on,
        )

    async def check(self) -> None:
        await trio.lowlevel.checkpoint()

    async def title(self, req: TitleRequest) -> str:
        await trio.lowlevel.checkpoint()
        return f"About {req.text[:20]}"

    async def models(self) -> list[Model]:
        await trio.lowlevel.checkpoint()
        if not self.options.supported:
            raise Unsupported("the toy offers only its default model")
        return [Model(id="toy-1", name="Toy One", efforts=["low", "high"], context_sizes=[])]

    async def open(self, req: OpenRequest) -> ToyConversation:
        await trio.lowlevel.checkpoint()
        conversation_id = req.conversation_id
        if conversation_id and conversation_id not in self._records:
            if not self.faults.reopen_creates:
                raise ConversationNotFound(f"no conversation {conversation_id!r}")
            self._records[conversation_id] = []
        if not conversation_id:
            conversation_id = f"toy-{next(self._ids)}"
            self._records[conversation_id] = []
        assert req.events is not None
        conv = ToyConversation(self, conversation_id, req.events, self._records[conversation_id])
        conv.tools, conv.call_tool, conv.task_id = list(req.tools), req.call_tool, req.session_id
        self._open.append(conv)
        return conv

    async def run_utility(self, req: UtilityRequest) -> str:
        """A utility call: one host tool call if the prompt asks for it, then the reply."""
        await trio.lowlevel.checkpoint()
        if req.prompt == PROMPTS["host_tool"] and req.tools and req.call_tool is not None:
            task = "toy-task" if self.faults.utility_task_id else ""
            call = HostToolCall(name=req.tools[0].name, call_id="u1", task_id=task, arguments=b"{}")
            result = await req.call_tool(call)
            return f"the tool said {result.text}"
        return "ok"

    async def read_history(self, req: ReadRequest) -> History:
        await trio.lowlevel.checkpoint()
        record = self._records.get(req.conversation_id)
        if record is None:
            if not self.faults.read_unknown_empty:
                raise ConversationNotFound(f"no conversation {req.conversation_id!r}")
            record = []
        return History(items=list(record))

    async def shutdown(self) -> None:
        for conv in list(self._open):
            await conv.close()
        self.nursery.cancel_scope.cancel()


@dataclass
class _Turn:
    scope: trio.CancelScope
    done: trio.Event = field(default_factory=trio.Event)
    pending: dict[str, Interaction] = field(default_factory=dict)
    answers: dict[str, Answer] = field(default_factory=dict)
    answered: trio.Event = field(default_factory=trio.Event)
    queued: list[str] = field(default_factory=list)
    steers: list[str] = field(default_factory=list)
    exited: bool = False
    cancelled: bool = False  # by Conversation.cancel, not by close


class ToyConversation:
    """One toy conversation: prompts run as turns in the provider's nursery."""

    def __init__(
        self, provider: ToyProvider, conversation_id: str, sink: EventSink, record: list[Item]
    ) -> None:
        self._provider = provider
        self._faults = provider.faults
        self._id = conversation_id
        self._sink = sink
        self._record = record
        self._turn: _Turn | None = None
        self._after_cancel = False
        self._closed = False
        self._exited = False
        self._seq = itertools.count(1)
        self._finished: set[str] = set()
        self.tools: list[HostTool] = []
        self.call_tool: CallTool | None = None
        self.task_id = ""
        self._edited = False

    # -- plumbing ------------------------------------------------------------------------

    async def _emit(self, event: Event) -> None:
        if self._faults.blocking_emit:
            await trio.to_thread.run_sync(trio.from_thread.run_sync, self._sink.emit, event)
        else:
            self._sink.emit(event)
        if self._faults.leak_to_sibling:
            for other in self._provider._open:
                if other is not self:
                    other._sink.emit(event)

    async def _item(self, item: Item) -> None:
        await self._emit(Event(kind=EventKind.ITEM, item=item))
        for i, old in enumerate(self._record):
            if (old.agent_id, old.id) == (item.agent_id, item.id):
                self._record[i] = item
                return
        self._record.append(item)

    async def _turn_state(self, state: TurnState) -> None:
        await self._emit(Event(kind=EventKind.TURN, turn=Turn(state=state)))

    async def _interaction(self, ia: Interaction) -> None:
        await self._emit(Event(kind=EventKind.INTERACTION, interaction=ia))

    def _check_open(self) -> None:
        if self._closed:
            raise Closed(f"conversation {self._id} is closed")

    # -- Conversation --------------------------------------------------------------------

    def id(self) -> str:
        return self._id

    async def history(self) -> History:
        await trio.lowlevel.checkpoint()
        self._check_open()
        if not self._provider.options.supported:
            raise Unsupported("the toy records no history")
        items = list(self._record)
        if self._faults.history_drops_answer:
            items = [i for i in items if i.kind != ItemKind.ASSISTANT]
        return History(items=items)

    async def send(self, prompt: Prompt) -> None:
        await trio.lowlevel.checkpoint()
        if not (self._faults.usable_after_close and self._closed and not self._exited):
            self._check_open()
        if self._turn is not None:
            if self._faults.fold_send:
                return
            if self._faults.busy_but_queued:
                self._turn.queued.append(prompt.text)
                raise Busy("a turn is running")
            if self._provider.options.queue_sends:
                self._turn.queued.append(prompt.text)
                return
            raise Busy("a turn is running")
        self._start(prompt.text)

    def _start(self, text: str) -> None:
        turn = _Turn(scope=trio.CancelScope())
        self._turn = turn
        self._provider.nursery.start_soon(self._run_turn, turn, text)

    async def _run_turn(self, turn: _Turn, text: str) -> None:
        n = next(self._seq)
        await self._item(Item(id=f"u{n}", kind=ItemKind.USER, text=text))
        await self._turn_state(TurnState.WORKING)
        state = TurnState.COMPLETED
        lost, self._after_cancel = (
            self._faults.answer_lost_after_cancel and self._after_cancel,
            False,
        )
        with turn.scope:
            if not lost:  # the fault: what the cancelled turn left ends this one at once
                await self._script(turn, text, n)
        if turn.exited:
            self._turn = None
            turn.done.set()
            return
        if turn.scope.cancelled_caught:
            state = TurnState.COMPLETED if self._faults.cancel_completes else TurnState.CANCELLED
            self._after_cancel = True
        fabricate = self._faults.cancel_answers and turn.cancelled
        withdrawn = InteractionState.ANSWERED if fabricate else InteractionState.EXPIRED
        for ia in turn.pending.values():
            await self._interaction(ia.model_copy(update={"state": withdrawn}))
            self._finished.add(ia.id)
        turn.pending.clear()
        if turn.steers and not self._faults.steer_dropped:
            await self._item(Item(id=f"n{n}", kind=ItemKind.NOTICE, text="steer not used"))
        self._turn = None
        await self._turn_state(state)
        if self._faults.double_terminal:
            await self._turn_state(state)
        if self._faults.output_after_end:
            await self._item(Item(id=f"late{n}", kind=ItemKind.ASSISTANT, text="late"))
        turn.done.set()
        if turn.queued and not self._closed:
            self._start(turn.queued.pop(0))

    async def _script(self, turn: _Turn, text: str, n: int) -> None:
        if text == PROMPTS["answer"]:
            for chunk in ("Hel", "lo"):
                await self._emit(
                    Event(
                        kind=EventKind.DELTA,
                        delta=Delta(item_id=f"a{n}", kind=ItemKind.ASSISTANT, text=chunk),
                    )
                )
                await trio.sleep(0)
            if self._faults.delta_kind_mismatch:
                await self._emit(
                    Event(
                        kind=EventKind.DELTA,
                        delta=Delta(item_id=f"a{n}", kind=ItemKind.REASONING, text="?"),
                    )
                )
            await self._item(Item(id=f"a{n}", kind=ItemKind.ASSISTANT, text="Hello"))
        elif text == PROMPTS["long"]:
            await self._emit(
                Event(
                    kind=EventKind.DELTA,
                    delta=Delta(item_id=f"a{n}", kind=ItemKind.ASSISTANT, text="Thinking"),
                )
            )
            await trio.sleep_forever()
        elif text == PROMPTS["exit"]:
            turn.exited = True
            if not self._faults.exit_keeps_open:
                self._closed = self._exited = True
                self._provider._open.remove(self)
            await self._emit(Event(kind=EventKind.EXIT, error="the toy runtime exited"))
        elif text in (PROMPTS["permission"], PROMPTS["question"]):
            await self._ask(turn, text, n)
        elif text == PROMPTS["host_tool"] and self.tools and self.call_tool is not None:
            tool = self.tools[0]
            running = ToolCall(name=tool.name, status=ToolStatus.RUNNING)
            await self._item(Item(id=f"h{n}", kind=ItemKind.TOOL, tool=running))
            call_id = f"x{n}" if self._faults.host_call_wrong_id else f"h{n}"
            call = HostToolCall(
                name=tool.name, call_id=call_id, task_id=self.task_id, arguments=b'{"text":"toy"}'
            )
            result = await self.call_tool(call)
            done = ToolCall(name=tool.name, status=ToolStatus.COMPLETED, output=result.text)
            await self._item(Item(id=f"h{n}", kind=ItemKind.TOOL, tool=done))
            await self._item(Item(id=f"a{n}", kind=ItemKind.ASSISTANT, text=result.text))
        elif text == PROMPTS["edit"]:
            edit = FileEdit(path="README.md", kind="edit", additions=1, diff_status="available")
            running = ToolCall(name="write", status=ToolStatus.RUNNING)
            await self._item(Item(id=f"t{n}", kind=ItemKind.TOOL, tool=running))
            done = ToolCall(name="write", status=ToolStatus.COMPLETED, file_edits=[edit])
            await self._item(Item(id=f"t{n}", kind=ItemKind.TOOL, tool=done))
            self._edited = True
        else:
            await self._item(Item(id=f"a{n}", kind=ItemKind.ASSISTANT, text="ok"))

    async def _ask(self, turn: _Turn, text: str, n: int) -> None:
        if text == PROMPTS["permission"]:
            await self._item(
                Item(
                    id=f"t{n}",
                    kind=ItemKind.TOOL,
                    tool=ToolCall(name="shell", status=ToolStatus.RUNNING),
                )
            )
            ia = Interaction(
                id=f"p{n}",
                kind=InteractionKind.PERMISSION,
                title="Run a command",
                options=[
                    Option(id="allow-once", label="Allow once", allow_once=True),
                    Option(id="reject", label="Reject", reject=True),
                ],
                state=InteractionState.PENDING,
                tool_call_id="t-missing" if self._faults.dangling_tool_call else f"t{n}",
            )
        else:
            ia = Interaction(
                id=f"q{n}",
                kind=InteractionKind.QUESTION,
                title="Pick a colour",
                questions=[Question(text="Which colour?", choices=["red", "blue"])],
                state=InteractionState.PENDING,
            )
        turn.pending[ia.id] = ia
        await self._interaction(ia)
        await turn.answered.wait()
        answer = turn.answers[ia.id]
        reply = answer.decision or answer.answers[0][0]
        if text == PROMPTS["permission"]:
            await self._item(
                Item(
                    id=f"t{n}",
                    kind=ItemKind.TOOL,
                    tool=ToolCall(name="shell", status=ToolStatus.COMPLETED),
                )
            )
        await self._item(Item(id=f"a{n}", kind=ItemKind.ASSISTANT, text=f"answer: {reply}"))

    async def commands(self) -> list[Command]:
        await trio.lowlevel.checkpoint()
        if not self._provider.options.supported:
            raise Unsupported("the toy has no commands")
        return [Command(name="explain", description="Explain", kind="command", input_hint="")]

    async def run_command(self, name: str, args: Prompt) -> None:
        await trio.lowlevel.checkpoint()
        if not self._provider.options.supported and not self._faults.run_command_unsupported_lie:
            raise Unsupported("the toy has no commands")
        listed = name == "explain" or not self._provider.options.supported
        if not listed and not self._faults.run_command_any:
            raise AgentAPIError(f"/{name} is not a command of the toy")
        await self.send(Prompt(text=f"/{name} {args.text}"))

    async def steer(self, prompt: Prompt) -> None:
        await trio.lowlevel.checkpoint()
        self._check_open()
        if self._faults.steer_wrong_error:
            raise Busy("the toy cannot take a steer now")
        if not self._provider.options.supported:
            raise Unsupported("the toy cannot steer")
        if self._turn is not None:
            self._turn.steers.append(prompt.text)

    async def cancel(self) -> None:
        await trio.lowlevel.checkpoint()
        self._check_open()
        if self._turn is not None:
            self._turn.cancelled = True
            self._turn.scope.cancel()

    async def cancel_subagent(self, agent_id: str) -> None:
        await trio.lowlevel.checkpoint()
        if not self._faults.subagent_accepts_unknown:
            raise ItemNotFound(f"no subagent {agent_id!r}")

    async def prompt_subagent(self, agent_id: str, text: str) -> None:
        await trio.lowlevel.checkpoint()
        raise Unsupported("the toy has no subagents")

    async def respond(self, interaction_id: str, answer: Answer) -> None:
        await trio.lowlevel.checkpoint()
        self._check_open()
        if self._faults.respond_again and interaction_id in self._finished:
            return
        turn = self._turn
        if turn is None or interaction_id not in turn.pending:
            raise InteractionGone(f"interaction {interaction_id!r} is not pending")
        ia = turn.pending.pop(interaction_id)
        self._finished.add(interaction_id)
        turn.answers[interaction_id] = answer
        await self._interaction(ia.model_copy(update={"state": InteractionState.ANSWERED}))
        turn.answered.set()

    async def diff(self) -> list[FileDiff]:
        await trio.lowlevel.checkpoint()
        self._check_open()
        if not self._provider.options.supported:
            raise Unsupported("the toy records no file changes")
        if self._edited and self._faults.diff_misses_edit:
            return []
        return [FileDiff(path="README.md", additions=1, deletions=0)]

    async def preview_rewind(self, user_item_id: str) -> RewindPreview:
        await trio.lowlevel.checkpoint()
        self._check_open()
        ids = [i.id for i in self._record if i.kind == ItemKind.USER]
        if user_item_id not in ids:
            raise ItemNotFound(f"no user item {user_item_id!r}")
        return RewindPreview(user_event_id=user_item_id, turns=len(ids) - ids.index(user_item_id))

    async def rewind(self, user_event_id: str, mode: str) -> RewindResult:
        await trio.lowlevel.checkpoint()
        self._check_open()
        at = next((i for i, item in enumerate(self._record) if item.id == user_event_id), None)
        if at is None:
            raise ItemNotFound(f"no user item {user_event_id!r}")
        if not self._faults.rewind_keeps_history:
            del self._record[at:]
        return RewindResult(outcome="rewound", events_removed=1)

    async def set_model(self, model: str, effort: str, context_size: str) -> None:
        await trio.lowlevel.checkpoint()
        self._check_open()
        if not self._provider.options.supported or self._faults.set_model_refused:
            raise Unsupported("the toy cannot switch models")
        if model != "toy-1":
            raise ValueError(f"unknown model {model!r}")

    async def set_title(self, title: str) -> None:
        await trio.lowlevel.checkpoint()
        self._check_open()
        if not self._provider.options.supported or self._faults.titles_refused:
            raise Unsupported("the toy cannot title")

    async def close(self) -> None:
        if self._closed:
            return
        turn = self._turn
        if turn is not None:
            if self._faults.close_answers:
                for ia in list(turn.pending.values()):
                    await self._interaction(
                        ia.model_copy(update={"state": InteractionState.ANSWERED})
                    )
                turn.pending.clear()
            turn.scope.cancel()
            await turn.done.wait()
        self._closed = True
        if self in self._provider._open:
            self._provider._open.remove(self)
        if self._faults.event_after_close:
            self._provider.nursery.start_soon(self._late_title)

    async def _late_title(self) -> None:
        await trio.sleep(0)
        self._sink.emit(Event(kind=EventKind.TITLE, title="late title"))


def toy_options(**faults: Any) -> Options:
    """Options with the named faults switched on."""
    return Options(faults=dataclasses.replace(Faults(), **faults))
