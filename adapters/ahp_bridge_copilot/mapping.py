"""Map Copilot session events (the SDK's ``SessionEvent.to_dict()`` wire shape) to agentapi Events.

Pure and synchronous: no SDK objects, no I/O, no clock (times come from the events), so recorded
streams replay through it in unit tests. One ``EventMapper`` per conversation holds what the
mapping needs to remember: whether a turn runs and how it is ending, the tool items being
updated, pending interactions, subagents, steers not yet seen, and our own title to ignore its echo.
The conversation calls it only from the SDK's asyncio thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ahp_bridge.agentapi import (
    DELIVERY_STEER,
    ELICITATION_FORM,
    ELICITATION_URL,
    MAX_MCP_STATUS_SERVERS,
    SUBAGENT_TRIGGER_AGENT,
    SUBAGENT_TRIGGER_SPAWN,
    SUBAGENT_TRIGGER_USER,
    TODO_BLOCKED,
    TODO_DONE,
    TODO_IN_PROGRESS,
    TODO_PENDING,
    Activity,
    Context,
    Delta,
    Elicitation,
    Event,
    EventKind,
    ExecutionState,
    Field,
    FileEdit,
    Interaction,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    MCPServerStatus,
    MCPStatusSnapshot,
    ModelSelection,
    Option,
    OutputLine,
    Question,
    Retry,
    SkillLoad,
    Subagent,
    SubagentRun,
    SubagentStatus,
    Todo,
    TokenUsage,
    ToolCall,
    ToolStatus,
    Turn,
    TurnState,
    Usage,
)

from .sdk_errors import is_signed_out_message

MAX_INPUT_BYTES = 16 << 10
MAX_OUTPUT_BYTES = 64 << 10
MAX_DETAIL_BYTES = 16 << 10
MAX_LINE_BYTES = 512
MAX_TAIL_LINES = 10
MAX_FILE_EDITS = 32

# Decisions offered for a permission request, by the SDK's PermissionDecision kinds.
APPROVE_ONCE = "approve-once"
APPROVE_SESSION = "approve-for-session"
REJECT = "reject"

_PERMISSION_TITLES = {
    "shell": "Run a shell command",
    "write": "Write a file",
    "read": "Read a file",
    "url": "Fetch a URL",
    "memory": "Store a memory",
}
# session.info kinds that only echo what a tool item already shows.
_QUIET_INFO = {"file_created", "file_modified", "file_edited", "cancellation"}

__all__ = [
    "APPROVE_ONCE",
    "APPROVE_SESSION",
    "REJECT",
    "EventMapper",
    "clip",
    "parse_time",
    "todo_rows",
    "token_usage",
    "usage_from_metrics",
]


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, on a character boundary."""
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[:limit].decode(errors="ignore")


def parse_time(value: Any) -> datetime | None:
    """An event timestamp (ISO 8601 string or datetime) as an aware datetime."""
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def token_usage(data: dict[str, Any], at: datetime | None) -> TokenUsage:
    """One model call's tokens from an ``assistant.usage`` event's data (wrong types count 0)."""
    cost = data.get("cost")
    return TokenUsage(
        model=_str(data.get("model")),
        time=at,
        input=_int(data.get("inputTokens")),
        output=_int(data.get("outputTokens")),
        cache_read=_int(data.get("cacheReadTokens")),
        cache_write=_int(data.get("cacheWriteTokens")),
        duration_ms=_int(data.get("duration")),
        cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else 0.0,
    )


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    return 0


def _json_text(value: Any, limit: int) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return clip(value, limit)
    return clip(json.dumps(value, ensure_ascii=False, sort_keys=True), limit)


@dataclass
class _TurnState:
    active: bool = False
    error: str = ""
    abort_reason: str = ""
    cancel_requested: bool = False
    model: str = ""


@dataclass
class _PendingSteer:
    text: str
    seen: bool = False


@dataclass
class EventMapper:
    """Stateful SDK-event → agentapi-event mapping for one conversation."""

    turn: _TurnState = field(default_factory=_TurnState)
    tools: dict[tuple[str, str], Item] = field(default_factory=dict)
    interactions: dict[str, Interaction] = field(default_factory=dict)
    session_approvals: dict[str, dict[str, Any]] = field(default_factory=dict)
    """For each pending permission, what "approve for the session" remembers."""
    responded: dict[str, InteractionState] = field(default_factory=dict)
    subagents: dict[str, Subagent] = field(default_factory=dict)
    multi_turn: set[str] = field(default_factory=set)
    """Subagents that take follow-ups (background, multi-turn): they go idle, not completed."""
    prompted: set[str] = field(default_factory=set)
    """Idle subagents we sent a prompt to (their next run is the user's)."""
    steers: dict[str, _PendingSteer] = field(default_factory=dict)
    own_titles: list[str] = field(default_factory=list)
    last_prompt_tokens: int = 0
    last_cached_tokens: int = 0
    model: str = ""
    signed_out_hint: str = ""
    """Said instead of the runtime's own words when a turn fails for want of a sign-in."""
    mcp: dict[str, MCPServerStatus] = field(default_factory=dict)
    """The conversation's MCP servers as the CLI last reported them."""
    held: list[Event] | None = None
    """While our prompt is on its way (``submit_turn``): what the CLI's events mapped to so far."""

    # -- calls from the conversation ------------------------------------------------------------

    def begin_turn(self) -> list[Event]:
        """A turn we did not submit (the CLI reports it): working (idempotent while one runs)."""
        if self.turn.active:
            return []
        self.turn = _TurnState(active=True, model=self.model)
        turn = Turn(state=TurnState.WORKING, model=self.model)
        return [Event(kind=EventKind.TURN, turn=turn)]

    def submit_turn(self) -> None:
        """Our prompt is about to go out: the turn runs from now on; what it says is held.

        A turn's events can be mapped before ``send`` returns: the CLI may send them before its
        answer, and events queued on the loop together with the answer run first (the awaiting
        coroutine resumes a step later). A signed-out CLI fails a turn within milliseconds, so
        its error and its end often come first. So the turn is active before the prompt goes
        out, and what the CLI says meanwhile counts for it but is held: it follows ``working``
        once the prompt is accepted (``turn_accepted``); a refused prompt started no turn.
        """
        self.turn = _TurnState(active=True, model=self.model)
        self.held = []

    def turn_accepted(self) -> list[Event]:
        """The CLI accepted our prompt: working, then what the turn said meanwhile."""
        held, self.held = self.held, None
        if held is None:
            return []  # given up already (the conversation closed, the runtime exited)
        working = Event(kind=EventKind.TURN, turn=Turn(state=TurnState.WORKING, model=self.model))
        return [working, *held]

    def turn_not_accepted(self) -> list[Event]:
        """Our prompt was not accepted (or its fate is unknown): no turn started here.

        Returns what was held except the turn's own states; the caller reports the failure.
        """
        held, self.held = self.held, None
        if held is None:
            return []
        self.turn = _TurnState(model=self.model)
        return [e for e in held if e.kind is not EventKind.TURN]

    @property
    def busy(self) -> bool:
        """A turn runs, or our prompt for one is on its way."""
        return self.turn.active or self.held is not None

    def note_cancel(self) -> None:
        self.turn.cancel_requested = True

    def note_own_title(self, title: str) -> None:
        self.own_titles.append(title)

    def note_steer(self, message_id: str, text: str) -> None:
        self.steers[message_id] = _PendingSteer(text)

    def note_subagent_prompt(self, agent_id: str) -> None:
        self.prompted.add(agent_id)

    def note_response(self, interaction_id: str, state: InteractionState) -> None:
        """Our Respond was accepted; the completion event will carry this state."""
        self.responded[interaction_id] = state

    def pending(self, interaction_id: str) -> Interaction | None:
        return self.interactions.get(interaction_id)

    def expire_all(self, resolution: str) -> list[Event]:
        """End every pending interaction without an answer (turn ended, closed, exited)."""
        out = []
        for inter in list(self.interactions.values()):
            out.append(self._finish(inter, InteractionState.EXPIRED, resolution))
        self.interactions.clear()
        return out

    def end_turn_exit(self, error: str) -> list[Event]:
        """The runtime went away mid-turn: fail the turn and expire what it waited on.

        A prompt still on its way started no turn: its ``send`` fails, and the caller says so.
        """
        out = self.turn_not_accepted()
        out += self.expire_all("runtime exited")
        if self.turn.active:
            self.turn.active = False
            out.append(Event(kind=EventKind.TURN, turn=Turn(state=TurnState.FAILED, error=error)))
        return out

    # -- the mapping ----------------------------------------------------------------------------

    def map(self, ev: dict[str, Any]) -> list[Event]:
        """The agentapi events for one SDK session event (possibly none)."""
        etype = _str(ev.get("type"))
        data = ev.get("data")
        if not isinstance(data, dict):
            data = {}
        handler = _HANDLERS.get(etype)
        if handler is None:
            return []
        agent = _str(ev.get("agentId"))
        at = parse_time(ev.get("timestamp"))
        out = handler(self, ev, data, agent, at)
        if self.held is not None:
            self.held.extend(out)
            return []
        return out

    # user and assistant messages

    def _user_message(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        out: list[Event] = []
        mid = _str(d.get("messageId")) or _str(ev.get("id"))
        delivery = ""
        steer = self.steers.pop(mid, None)
        if d.get("delivery") == "steering" or steer is not None:
            delivery = DELIVERY_STEER
        if not agent and not self.turn.active:
            out.extend(self.begin_turn())
        sub = self.subagents.get(agent) if agent else None
        if sub is not None and sub.status is SubagentStatus.IDLE:
            trigger = SUBAGENT_TRIGGER_USER if agent in self.prompted else SUBAGENT_TRIGGER_AGENT
            self.prompted.discard(agent)
            sub.start_run(at, trigger)
            sub.status = SubagentStatus.RUNNING
            sub.ended_at = None
            out.append(Event(kind=EventKind.SUBAGENT, subagent=sub.snapshot()))
        item = Item(
            id=mid,
            kind=ItemKind.USER,
            text=_str(d.get("content")),
            time=at,
            agent_id=agent,
            delivery=delivery,
        )
        out.append(Event(kind=EventKind.ITEM, item=item))
        return out

    def _turn_start(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        if agent:
            return []
        model = _str(d.get("model"))
        if model:
            self.model = model
        return self.begin_turn()

    def _message_delta(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        text = _str(d.get("deltaContent"))
        mid = _str(d.get("messageId"))
        if not text or not mid:
            return []
        delta = Delta(item_id=mid, kind=ItemKind.ASSISTANT, text=text, agent_id=agent)
        return [Event(kind=EventKind.DELTA, delta=delta)]

    def _message(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        text = _str(d.get("content"))
        mid = _str(d.get("messageId")) or _str(ev.get("id"))
        if not text:
            return []  # a message that only carries tool requests
        item = Item(id=mid, kind=ItemKind.ASSISTANT, text=text, time=at, agent_id=agent)
        return [Event(kind=EventKind.ITEM, item=item)]

    def _reasoning_delta(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        text = _str(d.get("deltaContent"))
        rid = _str(d.get("reasoningId"))
        if not text or not rid:
            return []
        delta = Delta(item_id=rid, kind=ItemKind.REASONING, text=text, agent_id=agent)
        return [Event(kind=EventKind.DELTA, delta=delta)]

    def _reasoning(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        text = _str(d.get("content"))
        rid = _str(d.get("reasoningId")) or _str(ev.get("id"))
        if not text:
            return []
        item = Item(id=rid, kind=ItemKind.REASONING, text=text, time=at, agent_id=agent)
        return [Event(kind=EventKind.ITEM, item=item)]

    def _intent(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        if agent:
            return []
        return [Event(kind=EventKind.ACTIVITY, activity=Activity(intent=_str(d.get("intent"))))]

    def _turn_retry(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        retry = Retry(count=max(1, _int(d.get("attempt"))), reason=_str(d.get("reason")), at=at)
        if agent:
            sub = self.subagents.get(agent)
            if sub is None:
                return []
            sub.retry = retry
            return [Event(kind=EventKind.SUBAGENT, subagent=sub.snapshot())]
        return [Event(kind=EventKind.ACTIVITY, activity=Activity(retry=retry))]

    # tools

    def _tool_start(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        call_id = _str(d.get("toolCallId"))
        if not call_id:
            return []
        tool = ToolCall(
            name=_str(d.get("toolName")) or "tool",
            title=_str(d.get("toolTitle")),
            status=ToolStatus.RUNNING,
            input=_json_text(d.get("arguments"), MAX_INPUT_BYTES),
        )
        item = Item(id=call_id, kind=ItemKind.TOOL, tool=tool, time=at, agent_id=agent)
        self.tools[(agent, call_id)] = item
        return [Event(kind=EventKind.ITEM, item=item.model_copy(deep=True))]

    def _tool_item(self, agent: str, call_id: str, name: str, at: Any) -> Item:
        item = self.tools.get((agent, call_id))
        if item is None:
            tool = ToolCall(name=name or "tool", status=ToolStatus.RUNNING)
            item = Item(id=call_id, kind=ItemKind.TOOL, tool=tool, time=at, agent_id=agent)
            self.tools[(agent, call_id)] = item
        return item

    def _shell_output(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        call_id = _str(d.get("toolCallId"))
        item = self.tools.get((agent, call_id))
        if item is None or item.tool is None:
            return []
        err = d.get("stream") == "stderr"
        lines = _str(d.get("text")).splitlines()
        tail = list(item.tool.tail)
        tail.extend(OutputLine(text=clip(line, MAX_LINE_BYTES), err=err) for line in lines)
        item.tool.tail = tail[-MAX_TAIL_LINES:]
        return [Event(kind=EventKind.ITEM, item=item.model_copy(deep=True))]

    def _tool_progress(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        call_id = _str(d.get("toolCallId"))
        item = self.tools.get((agent, call_id))
        if item is None or item.tool is None:
            return []
        item.tool.progress = clip(_str(d.get("progressMessage")), MAX_LINE_BYTES)
        return [Event(kind=EventKind.ITEM, item=item.model_copy(deep=True))]

    def _tool_complete(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        call_id = _str(d.get("toolCallId"))
        if not call_id:
            return []
        item = self._tool_item(agent, call_id, _str(d.get("toolName")), at)
        self.tools.pop((agent, call_id), None)
        tool = item.tool or ToolCall(name="tool", status=ToolStatus.RUNNING)
        success = d.get("success") is True
        result = _dict(d.get("result"))
        error = _dict(d.get("error"))
        output = _str(result.get("content")) if success else _str(error.get("message"))
        if not output and not success:
            output = _str(result.get("content"))
        tool.status = ToolStatus.COMPLETED if success else ToolStatus.FAILED
        tool.output = clip(output, MAX_OUTPUT_BYTES)
        tool.progress = ""
        tool.tail = []
        tool.exit_code = _exit_code(result, _dict(d.get("shellExecution")))
        edits = [e for e in d.get("fileEdits") or [] if isinstance(e, dict) and e.get("path")]
        tool.file_edits = [_file_edit(e) for e in edits[:MAX_FILE_EDITS]]
        tool.file_edits_truncated = len(edits) > MAX_FILE_EDITS
        if edits:
            tool.edit_event_id = _str(ev.get("id"))
        item.tool = tool
        item.ended_at = at
        return [Event(kind=EventKind.ITEM, item=item)]

    # interactions

    def _permission_requested(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        rid = _str(d.get("requestId"))
        req = _dict(d.get("permissionRequest"))
        if not rid:
            return []
        kind = _str(req.get("kind"))
        options = [Option(id=APPROVE_ONCE, label="Allow once", allow_once=True)]
        if req.get("canOfferSessionApproval") is True:
            options.append(Option(id=APPROVE_SESSION, label="Allow for this session"))
        options.append(Option(id=REJECT, label="Reject", reject=True))
        inter = Interaction(
            id=rid,
            kind=InteractionKind.PERMISSION,
            title=_permission_title(kind, req),
            detail=clip(_permission_detail(kind, req), MAX_DETAIL_BYTES),
            intention=_str(req.get("intention")),
            options=options,
            state=InteractionState.PENDING,
            time=at,
            agent_id=agent or _str(d.get("ownerAgentId")),
            tool_call_id=_str(req.get("toolCallId")) or _str(d.get("toolCallId")),
        )
        self.interactions[rid] = inter
        approval = _session_approval(kind, req)
        if approval is not None:
            self.session_approvals[rid] = approval
        return [Event(kind=EventKind.INTERACTION, interaction=inter.model_copy(deep=True))]

    def _permission_completed(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        rid = _str(d.get("requestId"))
        inter = self.interactions.pop(rid, None)
        if inter is None:
            return []
        result = _dict(d.get("result"))
        outcome = _str(result.get("kind"))
        ours = self.responded.pop(rid, None)
        if ours is None:
            state = InteractionState.EXPIRED
        elif outcome.startswith("denied") or ours is InteractionState.REJECTED:
            state = InteractionState.REJECTED
        else:
            state = InteractionState.ANSWERED
        return [self._finish(inter, state, outcome)]

    def _question_requested(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        rid = _str(d.get("requestId"))
        if not rid:
            return []
        choices = [c for c in d.get("choices") or [] if isinstance(c, str)]
        custom = d.get("allowFreeform") is not False
        question = Question(text=_str(d.get("question")), choices=choices, custom=custom)
        inter = Interaction(
            id=rid,
            kind=InteractionKind.QUESTION,
            title="The agent asks",
            questions=[question],
            state=InteractionState.PENDING,
            time=at,
            agent_id=agent,
            tool_call_id=_str(d.get("toolCallId")),
        )
        self.interactions[rid] = inter
        return [Event(kind=EventKind.INTERACTION, interaction=inter.model_copy(deep=True))]

    def _question_completed(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        rid = _str(d.get("requestId"))
        inter = self.interactions.pop(rid, None)
        if inter is None:
            return []
        ours = self.responded.pop(rid, None)
        state = ours if ours is not None else InteractionState.EXPIRED
        return [self._finish(inter, state, "")]

    def _elicitation_requested(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        rid = _str(d.get("requestId"))
        if not rid:
            return []
        mode = ELICITATION_URL if d.get("mode") == "url" else ELICITATION_FORM
        elicitation = Elicitation(
            mode=mode,
            source=_str(d.get("elicitationSource")),
            url=_str(d.get("url")) if mode == ELICITATION_URL else "",
        )
        questions = [] if mode == ELICITATION_URL else _form_questions(d.get("requestedSchema"))
        inter = Interaction(
            id=rid,
            kind=InteractionKind.QUESTION,
            title=clip(_str(d.get("message")) or "The agent asks", MAX_DETAIL_BYTES),
            questions=questions,
            state=InteractionState.PENDING,
            time=at,
            agent_id=agent,
            tool_call_id=_str(d.get("toolCallId")),
            elicitation=elicitation,
        )
        self.interactions[rid] = inter
        return [Event(kind=EventKind.INTERACTION, interaction=inter.model_copy(deep=True))]

    def _elicitation_completed(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        rid = _str(d.get("requestId"))
        inter = self.interactions.pop(rid, None)
        if inter is None:
            return []
        ours = self.responded.pop(rid, None)
        action = _str(d.get("action"))
        if ours is None:
            state = InteractionState.EXPIRED
        elif action == "decline":
            state = InteractionState.REJECTED
        else:
            state = ours
        return [self._finish(inter, state, action)]

    def _finish(self, inter: Interaction, state: InteractionState, resolution: str) -> Event:
        self.session_approvals.pop(inter.id, None)
        done = inter.model_copy(deep=True)
        done.state = state
        done.resolution = resolution
        self.responded.pop(inter.id, None)
        return Event(kind=EventKind.INTERACTION, interaction=done)

    # turn end, errors, aborts

    def _idle(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        if agent:
            return []
        out = self.expire_all("turn ended")
        for mid, steer in list(self.steers.items()):
            del self.steers[mid]
            text = "A steering message was not delivered before the turn ended."
            if steer.text:
                text += " It was: " + clip(steer.text, 200)
            note = Item(id=f"steer-undelivered-{mid}", kind=ItemKind.NOTICE, text=text, time=at)
            out.append(Event(kind=EventKind.ITEM, item=note))
        if not self.turn.active:
            return out
        st = self.turn
        self.turn = _TurnState(model=self.model)
        if d.get("aborted") is True or (st.cancel_requested and st.abort_reason):
            turn = Turn(state=TurnState.CANCELLED, reason=st.abort_reason, model=st.model)
        elif st.error:
            turn = Turn(state=TurnState.FAILED, error=st.error, model=st.model)
        else:
            turn = Turn(state=TurnState.COMPLETED, model=st.model or self.model)
        out.append(Event(kind=EventKind.TURN, turn=turn))
        return out

    def _error(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        message = clip(_str(d.get("message")) or "the provider reported an error", 2048)
        if self.signed_out_hint and is_signed_out_message(message):
            message = self.signed_out_hint
        if not agent and self.turn.active:
            self.turn.error = message
        note = Item(
            id=_str(ev.get("id")) or f"error-{len(message)}",
            kind=ItemKind.NOTICE,
            text=message,
            time=at,
            agent_id=agent,
        )
        return [Event(kind=EventKind.ITEM, item=note)]

    def _abort(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        if not agent:
            self.turn.abort_reason = _str(d.get("reason")) or "aborted"
        return []

    def _notice(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        kind = _str(d.get("infoType")) or _str(d.get("warningType"))
        if kind in _QUIET_INFO:
            return []
        text = _str(d.get("message"))
        if not text:
            return []
        note = Item(
            id=_str(ev.get("id")) or text[:32],
            kind=ItemKind.NOTICE,
            text=clip(text, 2048),
            time=at,
            agent_id=agent,
        )
        return [Event(kind=EventKind.ITEM, item=note)]

    # titles, models, modes

    def _title(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        title = _str(d.get("title"))
        if not title:
            return []
        if title in self.own_titles:
            self.own_titles.remove(title)
            return []
        return [Event(kind=EventKind.TITLE, title=title)]

    def _model_change(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        if agent:
            return []
        model = _str(d.get("newModel"))
        if not model:
            return []
        self.model = model
        sel = ModelSelection(
            model=model,
            effort=d.get("reasoningEffort") if isinstance(d.get("reasoningEffort"), str) else None,
            context_size=d.get("contextTier") if isinstance(d.get("contextTier"), str) else None,
        )
        return [Event(kind=EventKind.MODEL_SELECTION, model_selection=sel)]

    def _session_start(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        model = _str(d.get("selectedModel"))
        if model and not agent:
            self.model = model
        return []

    # MCP servers: the whole list, then one server's changes

    def _mcp_loaded(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        self.mcp = {}
        for server in d.get("servers") or []:
            name = _str(server.get("name"))
            if name:
                self.mcp[name] = MCPServerStatus(
                    name=name,
                    status=_str(server.get("status")),
                    error=_str(server.get("error")),
                    source=_str(server.get("source")),
                )
        return [self._mcp_event()]

    def _mcp_status(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        name = _str(d.get("serverName"))
        if not name:
            return []
        known = self.mcp.get(name)
        self.mcp[name] = MCPServerStatus(
            name=name,
            status=_str(d.get("status")),
            error=_str(d.get("error")),
            source=known.source if known is not None else _str(d.get("configSource")),
        )
        return [self._mcp_event()]

    def _mcp_removed(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        if self.mcp.pop(_str(d.get("serverName")), None) is None:
            return []
        return [self._mcp_event()]

    def _mcp_event(self) -> Event:
        servers = list(self.mcp.values())
        snapshot = MCPStatusSnapshot(
            supported=True,
            ready=True,
            servers=servers[:MAX_MCP_STATUS_SERVERS],
            truncated=len(servers) > MAX_MCP_STATUS_SERVERS,
        )
        return Event(kind=EventKind.MCP_STATUS, mcp_status=snapshot)

    def _mode_changed(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        mode = _str(d.get("newMode"))
        return [Event(kind=EventKind.EXECUTION, execution=ExecutionState(known=True, mode=mode))]

    # usage, tokens, context, compaction

    def _usage(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        inp = _int(d.get("inputTokens"))
        if not agent:
            self.turn.model = _str(d.get("model")) or self.turn.model
            self.last_prompt_tokens = inp
            self.last_cached_tokens = _int(d.get("cacheReadTokens"))
        return [Event(kind=EventKind.TOKENS, tokens=token_usage(d, at))]

    def _aiu(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        nano = d.get("totalNanoAiu")
        if not isinstance(nano, int | float) or isinstance(nano, bool):
            return []
        return [Event(kind=EventKind.USAGE, usage=Usage(ai_units=float(nano) / 1e9))]

    def _context(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        if agent:
            return []
        ctx = Context(
            used=_int(d.get("currentTokens")),
            limit=_int(d.get("tokenLimit")),
            prompt=self.last_prompt_tokens,
            cached=self.last_cached_tokens,
        )
        return [Event(kind=EventKind.CONTEXT, context=ctx)]

    def _compaction_start(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        if agent:
            return []
        return [Event(kind=EventKind.COMPACTION, compacting=True)]

    def _compaction_done(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        if agent:
            return []
        if d.get("success") is True:
            text = "The conversation was compacted."
            pre, post = _int(d.get("preCompactionTokens")), _int(d.get("postCompactionTokens"))
            if pre and post:
                text = f"The conversation was compacted from {pre} to {post} tokens."
        else:
            text = "Compaction failed: " + clip(_str(d.get("error")) or "unknown error", 512)
        note = Item(id=_str(ev.get("id")) or "compaction", kind=ItemKind.NOTICE, text=text, time=at)
        return [
            Event(kind=EventKind.COMPACTION, compacting=False),
            Event(kind=EventKind.ITEM, item=note),
        ]

    # subagents and skills

    def _subagent_started(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        if not agent:
            return []
        mode = _str(d.get("executionMode"))
        sub = Subagent(
            id=agent,
            model=_str(d.get("model")),
            parent_tool_call_id=_str(d.get("toolCallId")),
            parent_agent_id=_str(d.get("parentId")) if d.get("parentId") != agent else "",
            name=_str(d.get("agentDisplayName")) or _str(d.get("agentName")) or "subagent",
            description=_str(d.get("agentDescription")),
            background=bool(mode) and mode != "sync",
            status=SubagentStatus.RUNNING,
            started_at=at,
            runs=[
                SubagentRun(
                    started_at=at, status=SubagentStatus.RUNNING, trigger=SUBAGENT_TRIGGER_SPAWN
                )
            ],
        )
        self.subagents[agent] = sub
        return [Event(kind=EventKind.SUBAGENT, subagent=sub.snapshot())]

    def _subagent_configured(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        sub = self.subagents.get(agent)
        if sub is None:
            return []
        sub.model = _str(d.get("model")) or sub.model
        sub.effort = _str(d.get("reasoningEffort")) or sub.effort
        if d.get("multiTurn") is True and sub.background:
            self.multi_turn.add(agent)
        return [Event(kind=EventKind.SUBAGENT, subagent=sub.snapshot())]

    def _subagent_ended(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        sub = self.subagents.get(agent)
        if sub is None:
            return []
        if ev.get("type") == "subagent.failed":
            sub.status = SubagentStatus.FAILED
            sub.error = clip(_str(d.get("error")) or "the subagent failed", 2048)
        elif d.get("cancelled") is True:
            sub.status = SubagentStatus.CANCELLED
        elif agent in self.multi_turn:
            sub.status = SubagentStatus.IDLE  # it takes follow-ups (PromptSubagent)
        else:
            sub.status = SubagentStatus.COMPLETED
        sub.ended_at = at
        sub.retry = None
        sub.tokens = _int(d.get("totalTokens")) or sub.tokens
        sub.tool_calls = _int(d.get("totalToolCalls")) or sub.tool_calls
        sub.model = _str(d.get("model")) or sub.model
        return [Event(kind=EventKind.SUBAGENT, subagent=sub.snapshot())]

    def _notification(
        self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any
    ) -> list[Event]:
        """``agent_idle``: a multi-turn subagent finished a run (the CLI sends no completion
        event for follow-up runs)."""
        kind = _dict(d.get("kind"))
        sub = self.subagents.get(_str(kind.get("agentId")))
        if kind.get("type") != "agent_idle" or sub is None:
            return []
        if sub.status is not SubagentStatus.RUNNING:
            return []
        sub.status = SubagentStatus.IDLE
        sub.ended_at = at
        sub.retry = None
        return [Event(kind=EventKind.SUBAGENT, subagent=sub.snapshot())]

    def _skill(self, ev: dict[str, Any], d: dict[str, Any], agent: str, at: Any) -> list[Event]:
        name = _str(d.get("name"))
        if not name:
            return []
        load = SkillLoad(
            id=_str(ev.get("id")),
            agent_id=agent,
            name=name,
            description=clip(_str(d.get("description")), 1024),
            at=at,
        )
        return [Event(kind=EventKind.SKILL, skill=load)]


def usage_from_metrics(metrics: dict[str, Any]) -> Usage | None:
    """The conversation's AI units from ``session.usage.getMetrics`` (wire dict).

    None when the runtime reports no AI credits (``aiCreditsStatus: unavailable``, as with your
    own model provider) or no total: an unknown cost is not reported as zero.
    """
    if metrics.get("aiCreditsStatus") == "unavailable":
        return None
    total = metrics.get("totalNanoAiu")
    if not isinstance(total, int | float) or isinstance(total, bool):
        parts = [
            m.get("totalNanoAiu")
            for m in _dict(metrics.get("modelMetrics")).values()
            if isinstance(m, dict)
        ]
        nums = [p for p in parts if isinstance(p, int | float) and not isinstance(p, bool)]
        if not nums:
            return None
        total = sum(nums)
    return Usage(ai_units=float(total) / 1e9)


_TODO_STATUS = {
    "pending": TODO_PENDING,
    "todo": TODO_PENDING,
    "in_progress": TODO_IN_PROGRESS,
    "in-progress": TODO_IN_PROGRESS,
    "done": TODO_DONE,
    "completed": TODO_DONE,
    "complete": TODO_DONE,
    "blocked": TODO_BLOCKED,
}


def todo_rows(rows: Any) -> list[Todo]:
    """agentapi Todos for the rows of the session's ``todos`` table (SDK rows or dicts)."""
    out = []
    for i, row in enumerate(rows or []):
        get = row.get if isinstance(row, dict) else lambda k, r=row: getattr(r, k, None)
        title = _str(get("title")) or _str(get("description"))
        if not title:
            continue
        status = _TODO_STATUS.get(_str(get("status")).lower().strip(), TODO_PENDING)
        out.append(Todo(id=_str(get("id")) or str(i), title=clip(title, 512), status=status))
    return out


def _exit_code(result: dict[str, Any], shell: dict[str, Any]) -> int | None:
    """A shell call's exit code: from the result's shell_exit part, else shellExecution."""
    candidates = [
        p.get("exitCode")
        for p in result.get("contents") or []
        if isinstance(p, dict) and p.get("type") == "shell_exit"
    ]
    candidates.append(shell.get("exitCode"))
    for code in candidates:
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def _file_edit(e: dict[str, Any]) -> FileEdit:
    adds, dels = e.get("linesAdded"), e.get("linesRemoved")
    known = isinstance(adds, int) and isinstance(dels, int)
    return FileEdit(
        path=clip(_str(e.get("path")), 4096),
        kind=_str(e.get("kind")) or "edit",
        additions=adds if known and isinstance(adds, int) else 0,
        deletions=dels if known and isinstance(dels, int) else 0,
        diff_status="available" if known else "unavailable",
    )


def _session_approval(kind: str, req: dict[str, Any]) -> dict[str, Any] | None:
    """The ``approve-for-session`` fields that make the CLI remember this kind of request.

    Without them the CLI approves only the one request. None when the request does not offer
    a session approval.
    """
    if req.get("canOfferSessionApproval") is not True:
        return None
    if kind == "shell":
        ids = [c.get("identifier") for c in req.get("commands") or [] if isinstance(c, dict)]
        return {"approval": {"kind": "commands", "commandIdentifiers": [i for i in ids if i]}}
    if kind in ("read", "write", "memory"):
        return {"approval": {"kind": kind}}
    if kind == "mcp":
        approval = {"kind": "mcp", "serverName": _str(req.get("serverName"))}
        if req.get("toolName"):
            approval["toolName"] = _str(req.get("toolName"))
        return {"approval": approval}
    if kind == "custom-tool":
        return {"approval": {"kind": "custom-tool", "toolName": _str(req.get("toolName"))}}
    if kind == "url":
        host = _str(req.get("url")).split("://", 1)[-1].split("/", 1)[0]
        return {"domain": host} if host else {}
    return {}


def _permission_title(kind: str, req: dict[str, Any]) -> str:
    if kind == "mcp":
        tool = _str(req.get("toolTitle")) or _str(req.get("toolName"))
        return f"Use {tool} from {_str(req.get('serverName'))}"
    if kind == "custom-tool":
        return f"Use the tool {_str(req.get('toolName'))}"
    return _PERMISSION_TITLES.get(kind, f"Allow {kind or 'an action'}")


def _permission_detail(kind: str, req: dict[str, Any]) -> str:
    if kind == "shell":
        return _str(req.get("fullCommandText"))
    if kind == "write":
        name, diff = _str(req.get("fileName")), _str(req.get("diff"))
        return f"{name}\n{diff}" if diff else name
    if kind == "read":
        return _str(req.get("path"))
    if kind == "url":
        return _str(req.get("url"))
    if kind in ("mcp", "custom-tool"):
        return _json_text(req.get("args"), MAX_DETAIL_BYTES)
    return ""


def _form_questions(schema: Any) -> list[Question]:
    """Questions for an elicitation form's JSON Schema (flat object of primitive properties)."""
    if not isinstance(schema, dict):
        return []
    props = schema.get("properties")
    if not isinstance(props, dict):
        return []
    required = set(schema.get("required") or [])
    out = []
    for name, prop in props.items():
        if not isinstance(prop, dict):
            continue
        ftype = _str(prop.get("type")) or "string"
        choices: list[str] = []
        values: list[str] = []
        enum = prop.get("enum")
        if ftype == "array" and isinstance(prop.get("items"), dict):
            enum = prop["items"].get("enum")
        if isinstance(enum, list):
            values = [str(v) for v in enum]
            names = prop.get("enumNames")
            choices = (
                [str(v) for v in names]
                if isinstance(names, list) and len(names) == len(values)
                else values
            )
        elif ftype == "boolean":
            choices, values = ["Yes", "No"], ["true", "false"]
        fld = Field(
            name=name,
            type=ftype
            if ftype in ("string", "number", "integer", "boolean", "array")
            else "string",
            required=name in required,
            values=values,
            format=_str(prop.get("format")),
            minimum=prop.get("minimum") if isinstance(prop.get("minimum"), int | float) else None,
            maximum=prop.get("maximum") if isinstance(prop.get("maximum"), int | float) else None,
            min_length=prop.get("minLength") if isinstance(prop.get("minLength"), int) else None,
            max_length=prop.get("maxLength") if isinstance(prop.get("maxLength"), int) else None,
            min_items=prop.get("minItems") if isinstance(prop.get("minItems"), int) else None,
            max_items=prop.get("maxItems") if isinstance(prop.get("maxItems"), int) else None,
        )
        out.append(
            Question(
                text=_str(prop.get("description")) or _str(prop.get("title")) or name,
                header=_str(prop.get("title")),
                choices=choices,
                multiple=ftype == "array",
                custom=not choices,
                field=fld,
            )
        )
    return out


_HANDLERS = {
    "user.message": EventMapper._user_message,
    "assistant.turn_start": EventMapper._turn_start,
    "assistant.message_delta": EventMapper._message_delta,
    "assistant.message": EventMapper._message,
    "assistant.reasoning_delta": EventMapper._reasoning_delta,
    "assistant.reasoning": EventMapper._reasoning,
    "assistant.intent": EventMapper._intent,
    "assistant.turn_retry": EventMapper._turn_retry,
    "assistant.usage": EventMapper._usage,
    "tool.execution_start": EventMapper._tool_start,
    "tool.shell_output": EventMapper._shell_output,
    "tool.execution_progress": EventMapper._tool_progress,
    "tool.execution_complete": EventMapper._tool_complete,
    "permission.requested": EventMapper._permission_requested,
    "permission.completed": EventMapper._permission_completed,
    "user_input.requested": EventMapper._question_requested,
    "user_input.completed": EventMapper._question_completed,
    "elicitation.requested": EventMapper._elicitation_requested,
    "elicitation.completed": EventMapper._elicitation_completed,
    "session.idle": EventMapper._idle,
    "session.error": EventMapper._error,
    "abort": EventMapper._abort,
    "session.info": EventMapper._notice,
    "session.warning": EventMapper._notice,
    "session.title_changed": EventMapper._title,
    "session.model_change": EventMapper._model_change,
    "session.start": EventMapper._session_start,
    "session.resume": EventMapper._session_start,
    "session.mode_changed": EventMapper._mode_changed,
    "session.mcp_servers_loaded": EventMapper._mcp_loaded,
    "session.mcp_server_status_changed": EventMapper._mcp_status,
    "session.mcp_server_removed": EventMapper._mcp_removed,
    "session.usage_checkpoint": EventMapper._aiu,
    "session.shutdown": EventMapper._aiu,
    "session.usage_info": EventMapper._context,
    "session.compaction_start": EventMapper._compaction_start,
    "session.compaction_complete": EventMapper._compaction_done,
    "subagent.started": EventMapper._subagent_started,
    "subagent.configured": EventMapper._subagent_configured,
    "subagent.completed": EventMapper._subagent_ended,
    "subagent.failed": EventMapper._subagent_ended,
    "skill.invoked": EventMapper._skill,
    "system.notification": EventMapper._notification,
}
