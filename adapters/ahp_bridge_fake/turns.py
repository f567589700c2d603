"""Play a TOML script's steps as a turn: the events each step kind emits, and its pacing."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence

from ahp_bridge.agentapi import (
    ELICITATION_FORM,
    MAX_HOST_TOOL_ARGUMENTS,
    Answer,
    Context,
    Delta,
    Elicitation,
    Event,
    EventKind,
    FileEdit,
    HostToolCall,
    HostToolResult,
    Interaction,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    Option,
    Prompt,
    Question,
    Subagent,
    SubagentStatus,
    TokenUsage,
    ToolCall,
    ToolStatus,
    TurnState,
    Usage,
)
from ahp_bridge.agentapi import Field as FormField

from .conversation import ActiveTurn, FakeConversation, TurnEnded
from .script import (
    ContextStep,
    FieldSpec,
    HostToolStep,
    OptionSpec,
    PermissionStep,
    QuestionStep,
    Script,
    Step,
    SubagentStep,
    TextStep,
    TokensStep,
    ToolStep,
    UsageStep,
    ValueStep,
)

NO_RULE = "no script rule matches this prompt"
#: The failure of a `sign_out` step in a runtime that has no sign-in.
NO_SIGN_IN = (
    "sign_out: this fake runtime has no sign-in to lose; configure the fake provider with "
    "sign_in_token"
)


class ScriptedTurns:
    """A TurnSource that plays the first script rule matching each prompt."""

    def __init__(self, script: Script) -> None:
        self.script = script

    def start(
        self, conversation: FakeConversation, prompt: Prompt
    ) -> Callable[[], Awaitable[None]]:
        meta = conversation.transcript.meta
        rule = self.script.rule_for(
            prompt.text,
            conversation.transcript.prompts + 1,
            title=meta.title,
            workdir=meta.workdir,
            index=conversation.index,
        )
        model = (rule.model if rule else "") or meta.model
        turn = conversation.begin_turn(prompt, model=model, use_steers=rule.steer if rule else True)
        player = _Player(conversation, turn)

        async def play() -> None:
            if rule is None:
                raise TurnEnded(TurnState.FAILED, NO_RULE)
            await player.steps(rule.steps, "")

        return play


class _Player:
    """Runs steps for one turn; ``agent`` is "" for the main agent or a subagent id."""

    def __init__(self, conversation: FakeConversation, turn: ActiveTurn) -> None:
        self.c = conversation
        self.turn = turn
        self.tool_calls: dict[str, int] = {}
        self.last_text: dict[str, str] = {}

    def emit(self, event: Event) -> None:
        self.c.emit_turn(self.turn, event)

    def item(self, item: Item) -> None:
        self.emit(Event(kind=EventKind.ITEM, item=item))

    async def steps(self, steps: Sequence[Step], agent: str) -> None:
        for step in steps:
            if not agent:
                self.c.deliver_steers(self.turn)
            await self.step(step, agent)

    async def step(self, step: Step, agent: str) -> None:
        if isinstance(step, TextStep):
            await self.text(step, agent)
        elif isinstance(step, ToolStep):
            await self.tool(step, agent, self.c.next_id(self.turn, "t"))
        elif isinstance(step, HostToolStep):
            await self.host_tool(step, agent)
        elif isinstance(step, PermissionStep):
            await self.permission(step, agent)
        elif isinstance(step, QuestionStep):
            await self.question(step, agent)
        elif isinstance(step, SubagentStep):
            await self.subagent(step, agent)
        elif isinstance(step, UsageStep):
            self.emit(Event(kind=EventKind.USAGE, usage=Usage(ai_units=step.ai_units)))
        elif isinstance(step, TokensStep):
            tokens = TokenUsage(
                model=step.model or self.turn.model,
                time=self.c.now(),
                input=step.input,
                output=step.output,
                cache_read=step.cache_read,
                cache_write=step.cache_write,
                duration_ms=step.duration_ms,
                cost=step.cost,
            )
            self.emit(Event(kind=EventKind.TOKENS, tokens=tokens))
        elif isinstance(step, ContextStep):
            context = Context(used=step.used, limit=step.limit)
            self.emit(Event(kind=EventKind.CONTEXT, context=context))
        elif isinstance(step, ValueStep):
            await self.value(step, agent)
        else:  # pragma: no cover - the parser builds only the classes above
            raise TypeError(f"unknown step {step!r}")

    async def value(self, step: ValueStep, agent: str) -> None:
        if step.kind == "delay":
            await self.c.sleep(step.seconds)
        elif step.kind == "title":
            if not self.c.transcript.meta.title_set:
                self.emit(Event(kind=EventKind.TITLE, title=step.value))
        elif step.kind == "notice":
            notice = Item(
                id=self.c.next_id(self.turn, "n"),
                kind=ItemKind.NOTICE,
                text=step.value,
                time=self.c.now(),
                agent_id=agent,
            )
            self.item(notice)
        elif step.kind == "error":
            raise TurnEnded(TurnState.FAILED, step.value)
        elif step.kind == "sign_out":
            lost = self.c.lose_sign_in(step.value)
            raise TurnEnded(TurnState.FAILED, step.value if lost else NO_SIGN_IN)
        elif step.kind == "exit":
            raise TurnEnded(None, step.value)
        elif step.kind == "stop":
            raise TurnEnded(TurnState.COMPLETED)

    async def text(self, step: TextStep, agent: str) -> None:
        kind = ItemKind.REASONING if step.kind == "reasoning" else ItemKind.ASSISTANT
        item_id = self.c.next_id(self.turn, "r" if kind is ItemKind.REASONING else "a")
        started = self.c.now()
        size = step.chunk_size
        for offset in range(0, len(step.text), size):
            if offset:
                await self.c.sleep(step.delay)
            delta = Delta(item_id=item_id, kind=kind, text=step.text[offset : offset + size])
            delta.agent_id = agent
            self.emit(Event(kind=EventKind.DELTA, delta=delta))
        ended = self.c.now() if kind is ItemKind.REASONING else None
        self.item(
            Item(
                id=item_id,
                kind=kind,
                text=step.text,
                time=started,
                ended_at=ended,
                agent_id=agent,
            )
        )
        if kind is ItemKind.ASSISTANT:
            self.last_text[agent] = step.text

    async def tool(self, step: ToolStep, agent: str, item_id: str) -> None:
        started = self.c.now()
        running = ToolCall(
            name=step.name,
            title=step.title,
            status=ToolStatus.RUNNING,
            input=step.input,
            progress=step.progress,
        )
        self.item(Item(id=item_id, kind=ItemKind.TOOL, tool=running, time=started, agent_id=agent))
        self.tool_calls[agent] = self.tool_calls.get(agent, 0) + 1
        await self.c.sleep(step.duration)
        failed = step.status == "failed"
        output = step.output
        edits: list[FileEdit] = []
        for e in step.file_edits:
            if not e.writes:
                edits.append(
                    FileEdit(
                        path=e.path,
                        kind=e.kind,
                        additions=e.additions,
                        deletions=e.deletions,
                        diff_status=e.diff_status,
                    )
                )
                continue
            try:
                edits.append(self.c.files.write(self.turn.number, e.path, e.kind, e.content))
            except (ValueError, OSError) as exc:  # the tool fails as a real edit would
                failed = True
                output = f"cannot edit {e.path}: {exc}"
                break
        done = ToolCall(
            name=step.name,
            title=step.title,
            status=ToolStatus.FAILED if failed else ToolStatus.COMPLETED,
            input=step.input,
            output=output,
            exit_code=step.exit_code,
            file_edits=edits,
        )
        self.item(
            Item(
                id=item_id,
                kind=ItemKind.TOOL,
                tool=done,
                time=started,
                ended_at=self.c.now(),
                agent_id=agent,
            )
        )

    async def host_tool(self, step: HostToolStep, agent: str) -> None:
        """Call a host tool as a model would: the tool item, call_tool, the item's end.

        A tool the conversation was not opened with, or arguments beyond
        MAX_HOST_TOOL_ARGUMENTS, fail the call without reaching the host.
        """
        item_id = step.call_id or self.c.next_id(self.turn, "h")
        started = self.c.now()
        running = ToolCall(
            name=step.name, title=step.title, status=ToolStatus.RUNNING, input=step.arguments
        )
        self.item(Item(id=item_id, kind=ItemKind.TOOL, tool=running, time=started, agent_id=agent))
        arguments = step.arguments.encode("utf-8")
        call_tool = self.c.call_tool
        outcome = "failed"
        if step.name not in self.c.host_tools or call_tool is None:
            result = HostToolResult(text=f"There is no tool named {step.name}.", failed=True)
            outcome = "missing"
        elif len(arguments) > MAX_HOST_TOOL_ARGUMENTS:
            text = f"The call's arguments exceed {MAX_HOST_TOOL_ARGUMENTS} bytes."
            result = HostToolResult(text=text, failed=True)
        else:
            call = HostToolCall(
                name=step.name,
                call_id=item_id,
                task_id=self.c.session_id,
                agent_id=agent,
                arguments=_raw_arguments(arguments),
            )
            result = await call_tool(call)
            outcome = "failed" if result.failed else "ok"
        done = ToolCall(
            name=step.name,
            title=step.title,
            status=ToolStatus.FAILED if result.failed else ToolStatus.COMPLETED,
            input=step.arguments,
            output=result.text,
        )
        ended = self.c.now()
        item = Item(
            id=item_id, kind=ItemKind.TOOL, tool=done, time=started, ended_at=ended, agent_id=agent
        )
        self.item(item)
        self.tool_calls[agent] = self.tool_calls.get(agent, 0) + 1
        if step.reply:
            reply = step.reply.replace("{text}", result.text)
            await self.text(TextStep(kind="text", text=reply, chunk_size=max(1, len(reply))), agent)
        await self.branch(step.on, (outcome, "default"), agent)

    async def permission(self, step: PermissionStep, agent: str) -> None:
        """Ask, unless an earlier allow-for-session answer covers this request.

        A ``session`` option (allow-session by default) allows the same request (same tool,
        else same title) without asking until the conversation closes; allow-once covers
        only the request it answered.
        """
        key = f"tool:{step.tool.name}" if step.tool is not None else f"title:{step.title}"
        remembered = self.c.session_approvals.get(key)
        option = next((o for o in step.options if o.id == remembered), None)
        tool_id = self.c.next_id(self.turn, "t") if step.tool is not None else ""
        if option is None:
            option = await self.ask_permission(step, agent, tool_id)
            if option.session:
                self.c.session_approvals[key] = option.id
        if step.tool is not None:
            if option.reject:
                await self.denied(step.tool, agent, tool_id)
            else:
                await self.tool(step.tool, agent, tool_id)
        fallback = "reject" if option.reject else "allow"
        await self.branch(step.on, (option.id, fallback, "default"), agent)

    async def ask_permission(self, step: PermissionStep, agent: str, tool_id: str) -> OptionSpec:
        started = self.c.now()
        if step.tool is not None:
            waiting = ToolCall(
                name=step.tool.name,
                title=step.tool.title,
                status=ToolStatus.PENDING,
                input=step.tool.input,
            )
            self.item(
                Item(id=tool_id, kind=ItemKind.TOOL, tool=waiting, time=started, agent_id=agent)
            )
        interaction = Interaction(
            id=self.c.next_id(self.turn, "perm"),
            kind=InteractionKind.PERMISSION,
            title=step.title,
            detail=step.detail,
            intention=step.intention,
            options=[
                Option(id=o.id, label=o.label, reject=o.reject, allow_once=o.allow_once)
                for o in step.options
            ],
            state=InteractionState.PENDING,
            time=started,
            agent_id=agent,
            tool_call_id=tool_id,
        )
        answer = await self.c.ask(self.turn, interaction)
        return next(o for o in step.options if o.id == answer.decision)

    async def denied(self, step: ToolStep, agent: str, tool_id: str) -> None:
        started = self.c.now()
        denied = ToolCall(
            name=step.name,
            title=step.title,
            status=ToolStatus.FAILED,
            input=step.input,
            output="The user denied permission to run this tool.",
        )
        self.item(
            Item(
                id=tool_id,
                kind=ItemKind.TOOL,
                tool=denied,
                time=started,
                ended_at=started,
                agent_id=agent,
            )
        )

    async def question(self, step: QuestionStep, agent: str) -> None:
        questions = [
            Question(
                text=q.text,
                header=q.header,
                choices=list(q.choices),
                multiple=q.multiple,
                custom=q.custom,
                field=_form_field(q.field) if q.field is not None else None,
            )
            for q in step.questions
        ]
        elicitation = None
        if step.kind == "form":
            elicitation = Elicitation(mode=ELICITATION_FORM, source=step.source)
        interaction = Interaction(
            id=self.c.next_id(self.turn, "q"),
            kind=InteractionKind.QUESTION,
            title=step.title,
            detail=step.detail,
            questions=questions,
            state=InteractionState.PENDING,
            time=self.c.now(),
            agent_id=agent,
            elicitation=elicitation,
        )
        answer = await self.c.ask(self.turn, interaction)
        await self.branch(step.on, _question_keys(answer), agent)

    async def branch(
        self, on: Mapping[str, Sequence[Step]], keys: Sequence[str], agent: str
    ) -> None:
        for key in keys:
            if key in on:
                await self.steps(on[key], agent)
                return

    async def subagent(self, step: SubagentStep, agent: str) -> None:
        agent_id = step.id or self.c.next_id(self.turn, "sa")
        tool_id = self.c.next_id(self.turn, "t")
        started = self.c.now()
        spawn = ToolCall(name="task", title=step.name, status=ToolStatus.RUNNING)
        self.item(Item(id=tool_id, kind=ItemKind.TOOL, tool=spawn, time=started, agent_id=agent))
        record = Subagent(
            id=agent_id,
            model=step.model or self.turn.model,
            parent_tool_call_id=tool_id,
            parent_agent_id=agent,
            name=step.name,
            description=step.description,
            background=step.background,
            status=SubagentStatus.RUNNING,
            started_at=started,
        )
        self.emit(Event(kind=EventKind.SUBAGENT, subagent=record))
        self.turn.subagents[agent_id] = record
        await self.steps(step.steps, agent_id)
        del self.turn.subagents[agent_id]
        failed = step.status == "failed"
        ended = record.model_copy(
            update={
                "status": SubagentStatus.FAILED if failed else SubagentStatus.COMPLETED,
                "error": step.error,
                "ended_at": self.c.now(),
                "tool_calls": self.tool_calls.get(agent_id, 0),
            }
        )
        self.emit(Event(kind=EventKind.SUBAGENT, subagent=ended))
        result = ToolCall(
            name="task",
            title=step.name,
            status=ToolStatus.FAILED if failed else ToolStatus.COMPLETED,
            output=step.error if failed else self.last_text.get(agent_id, ""),
        )
        self.item(
            Item(
                id=tool_id,
                kind=ItemKind.TOOL,
                tool=result,
                time=started,
                ended_at=self.c.now(),
                agent_id=agent,
            )
        )
        self.tool_calls[agent] = self.tool_calls.get(agent, 0) + 1


def _raw_arguments(arguments: bytes) -> bytes:
    """The model's arguments as RawJSON: malformed JSON travels as a JSON string of its text."""
    try:
        json.loads(arguments or b"{}")
    except ValueError:
        return json.dumps(arguments.decode("utf-8", errors="replace")).encode()
    return arguments


def _question_keys(answer: Answer) -> tuple[str, ...]:
    if answer.reject:
        return ("reject", "default")
    if answer.cancel:
        return ("cancel", "default")
    first = answer.answers[0][0] if answer.answers and answer.answers[0] else ""
    return (first, "answered", "default") if first else ("answered", "default")


def _form_field(spec: FieldSpec) -> FormField:
    return FormField(
        name=spec.name,
        type=spec.type,
        required=spec.required,
        values=list(spec.values),
        format=spec.format,
        minimum=spec.minimum,
        maximum=spec.maximum,
        min_length=spec.min_length,
        max_length=spec.max_length,
        min_items=spec.min_items,
        max_items=spec.max_items,
    )
