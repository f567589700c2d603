"""One chat, sans-IO: its translators, its turn lifecycle, its provider calls and their outcomes.

A chat is one provider conversation. Provider events come in batches (`on_events`) and become
actions through `translate.events`; accepted client actions become provider calls through
`translate.commands`. The chat owns the lifecycle of its turns (its translator's
`TurnLifecycle` is the one record of whether a turn runs: the accept rules and the queue read
it) and the queue of its provider calls: each queued piece of work is a generator that yields
the jobs it needs (open, call, close) one at a time and receives each outcome, so a plan that
takes several steps (reopen with new client tools, then send; a replacement conversation when
the provider forgot this one, then the same send again) reads as straight-line code, and the
shell's worker only ever runs one job of a chat at a time, in the order given here.

A work item may also *hold*: the prompt of a turn started right after a cancel waits until the
provider has reported the end of the cancelled turn (an agent still busy with it would refuse
the prompt), at most `timeouts.turn_end`. A call that fails after its action was accepted
becomes host actions (`chat/error`), never silence. After the provider's `exit` the chat stays
usable: the next call reopens the conversation by its id, or opens a new one when the provider
no longer has it (healing: the chat is told so with a system notification).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import quote

from ahp_bridge import agentapi
from ahp_bridge.engine.client_tools import ClientToolLimits, ClientTools, Resolve, tool_call_id
from ahp_bridge.engine.effects import CancelTimer, Log, ResolveHostTool, Run, SetTimer
from ahp_bridge.engine.fanout import Fanout
from ahp_bridge.engine.jobs import (
    CallChat,
    CloseConversation,
    FeatureCall,
    FollowUpFailed,
    Job,
    OpenConversation,
    Opened,
)
from ahp_bridge.engine.providers import ProviderInfo
from ahp_bridge.engine.timeouts import Timeouts
from ahp_bridge.protocol.action_types import ActionType as A
from ahp_bridge.protocol.uris import session_id
from ahp_bridge.state import status as st
from ahp_bridge.state.limits import Limits
from ahp_bridge.state.reducers.chat import resumable
from ahp_bridge.translate import iso_from_ms, ms_from_iso
from ahp_bridge.translate.coalesce import coalesce
from ahp_bridge.translate.commands import (
    Call,
    CommandContext,
    Rejection,
    Respond,
    RunCommand,
    SelectAgent,
    Send,
    SetModel,
    SetTitle,
    Steer,
    next_queued_turn,
    plan_command,
    synced_answers,
)
from ahp_bridge.translate.events import EventTranslator
from ahp_bridge.translate.host_tools import HOST_TOOLS_META_KEY, ToolPlan

__all__ = ["CARRIED", "LOST", "META_KEY", "NOTICE", "Chat", "ChatHost", "Hold", "Work"]

#: What a chat tells its user when its conversation was replaced (healing).
NOTICE = (
    "The agent no longer had this chat's conversation (its provider lost it, for example when "
    "it restarted without its data), so a new conversation was started. It does not remember "
    "the earlier turns of this chat: repeat what it needs to know."
)
#: The `_meta` key that marks the notice (clients may style it; tests find it).
META_KEY = "ahpBridge.conversationReplaced"
#: Calls that mean the same on the new conversation, so the one that found out runs again
#: there (the provider did not have the conversation, so it accepted nothing). Answers,
#: steering and cancels concern what the lost conversation was doing: they fail as they did.
CARRIED = (Send, SetModel, SetTitle, SelectAgent)
#: Why a turn the lost conversation was running ended.
LOST = "the provider no longer has this chat's conversation; a new one was started"

#: Client actions that start (or restart) a turn at the provider.
STARTS = frozenset({A.CHAT_TURN_STARTED, A.CHAT_TURN_RESUME})
#: Client actions that answer a client tool call the provider waits on.
CLIENT_TOOL_ACTIONS = frozenset({A.CHAT_TOOL_CALL_COMPLETE, A.CHAT_TOOL_CALL_RESULT_CONFIRMED})


@dataclass(frozen=True, slots=True)
class Hold:
    """Wait until `ready()` (re-checked after every batch of the chat's events), at most
    `seconds` (`timeouts.<key>`): then go on anyway."""

    ready: Callable[[], bool]
    key: str
    seconds: float


Step = Job | Hold
#: A piece of work on the chat's queue: yields steps, receives each job's result (a failed
#: job's exception is thrown into it).
Work = Generator[Step, Any, None]


class ChatHost(Protocol):
    """What a chat needs of the engine around it."""

    fanout: Fanout
    limits: Limits
    timeouts: Timeouts
    client_tool_limits: ClientToolLimits

    def now_ms(self) -> int: ...
    def new_id(self) -> str: ...
    def run_job(self, chat: Chat, job: Job) -> int: ...
    def resolve_tools(self, resolved: Iterable[Resolve]) -> None: ...
    def session_state(self, chat: Chat) -> dict[str, Any]: ...
    def names_session(self, chat: Chat) -> bool: ...
    def suspect_sign_in(self, provider: str) -> None: ...
    def conversation_replaced(self, chat: Chat) -> None: ...
    def file_edits(self, chat: Chat, turn_id: str, edits: list[agentapi.FileEdit]) -> list[Any]: ...
    def mcp_status(self, chat: Chat, status: agentapi.MCPStatusSnapshot) -> None: ...
    def subagent_chat_added(self, chat: Chat, uri: str) -> None: ...


class SessionRef(Protocol):
    """What a chat knows of its session (`engine.sessions.Session`)."""

    uri: str
    workdir: str
    working_directories: list[str]


class Chat:
    """One chat's state and decisions (see the module docstring)."""

    def __init__(
        self,
        host: ChatHost,
        session: SessionRef,
        uri: str,
        provider: ProviderInfo,
        *,
        settings: Callable[[], Any],
    ) -> None:
        self.host = host
        self.session = session
        self.uri = uri
        self.provider = provider
        #: The session's settings (model, effort, context size, agent) as they are now.
        self._settings = settings
        self.translator = EventTranslator(
            uri,
            session.uri,
            new_id=host.new_id,
            now_ms=host.now_ms,
            subagent_chat_uri=self.subagent_uri,
            file_edits=lambda turn, edits: host.file_edits(self, turn, edits),
        )
        #: One translator per subagent, each building that subagent's read-only chat.
        self.subagents: dict[str, EventTranslator] = {}
        self.conversation_id = ""
        #: A conversation is open (between a successful open and its exit or close).
        self.open = False
        #: What the open conversation can do (read when it opened).
        self.facts = Opened("")
        #: The chat stopped listening (closed, disposed, host stopping).
        self.detached = False
        self.tools = ClientTools(
            host.client_tool_limits,
            supported=provider.capabilities.host_tools,
            provider=provider.name,
            failed=self._tool_failed,
        )
        self.tools_refresh_queued = False
        #: The provider's `/` commands as last read (name and alias -> name).
        self.command_names: dict[str, str] = {}
        self._queue: deque[Callable[[], Work]] = deque()
        self._work: Work | None = None
        self._ticket: int | None = None
        self._hold: Hold | None = None

    # -- the conversation ----------------------------------------------------------------------

    def open_request(self, conversation_id: str, plan: ToolPlan) -> agentapi.OpenRequest:
        """What `Provider.open` gets (the shell adds the sink and the host tool callback)."""
        chosen = self._settings()
        return agentapi.OpenRequest(
            session_id=session_id(self.session.uri),
            conversation_id=conversation_id,
            workdir=self.session.workdir,
            model=chosen.model,
            effort=chosen.effort,
            context_size=chosen.context_size,
            agent=chosen.agent,
            tools=plan.host_tools(),
        )

    def opening(
        self, conversation_id: str, *, replacing: bool = False, record: bool = False
    ) -> Generator[Step, Any, Opened]:
        """Open the conversation with the active clients' tools; an open the provider refuses
        for clashing tool names is made again without them (their refusal says why)."""
        while True:
            plan = self.wanted_tools()
            request = self.open_request(conversation_id, plan)
            job = OpenConversation(
                self.uri, request, replacing=replacing, record=record, default=self.is_default()
            )
            try:
                opened: Opened = yield job
            except agentapi.HostToolClash as exc:
                if not plan.tools or not self.tools.refuse_clash(exc, plan):
                    raise
                self.host.fanout.effects.append(
                    Log("info", "client tools refused by the provider", {"chat": self.uri})
                )
                replacing = False
                continue
            except agentapi.SignedOut:
                self.host.suspect_sign_in(self.provider.name)
                raise
            break
        self.opened(plan, opened)
        return opened

    def opened(self, plan: ToolPlan, opened: Opened) -> None:
        """The conversation is open with `plan`: calls and tool items now follow it."""
        self.open = True
        self.facts = opened
        self.conversation_id = opened.conversation_id
        self.tools.plan = plan
        owners = {name: (o.client_id, o.display) for name, o in plan.owners().items()}
        self.translator.set_client_tools(owners)
        self.publish_tools()

    def is_default(self) -> bool:
        return self.host.names_session(self)

    def wanted_tools(self) -> ToolPlan:
        return self.tools.wanted(self.host.session_state(self).get("activeClients") or [])

    def tools_stale(self) -> bool:
        """The open conversation registered other tools than the active clients offer now."""
        return self.wanted_tools().key() != self.tools.plan.key()

    def publish_tools(self) -> None:
        """Say in session ``_meta`` which client tools are registered and which were refused."""
        if not self.host.names_session(self):
            return
        plan = self.tools.plan
        meta = plan.meta() if plan.tools or plan.refused else None
        self.apply_all(self.translator.set_session_meta(HOST_TOOLS_META_KEY, meta))

    def _ensure_open(self) -> Generator[Step, Any, None]:
        if not self.open:
            if not self.conversation_id:
                raise agentapi.Closed("the conversation is closed")
            self.host.fanout.effects.append(
                Log("info", "reopening conversation", {"chat": self.uri})
            )
            yield from self.opening(self.conversation_id)

    def _reopen(self) -> Generator[Step, Any, None]:
        """Open the conversation again by its id (same transcript) with the current host tools."""
        self.host.fanout.effects.append(
            Log("info", "reopening conversation with new client tools", {"chat": self.uri})
        )
        self.open = False
        yield from self.opening(self.conversation_id, replacing=True)

    def detach(self) -> None:
        """Stop listening: nothing queued runs any more, waiting client tool calls fail."""
        self.detached = True
        self._queue.clear()
        self.host.resolve_tools(self.tools.close())

    def closing(self, doing: str = "close", *, stop: bool = False) -> CloseConversation:
        self.open = False
        return CloseConversation(self.uri, doing, stop=stop)

    def dispose(self) -> Run:
        """The chat is gone: its conversation is let go now, whatever its queue was doing."""
        self.detach()
        return Run(self.closing(stop=True))

    # -- the queue -----------------------------------------------------------------------------

    def has_room(self) -> bool:
        return len(self._queue) < self.host.limits.max_pending_calls

    def queue_full(self) -> str:
        """The rejection reason of an action refused because the call queue is full."""
        return (
            f"{self.host.limits.max_pending_calls} operations already wait for this chat's "
            "provider, the most it holds (limits.max_pending_calls): try again when they are done"
        )

    def enqueue(self, work: Callable[[], Work]) -> None:
        if self.detached:
            return
        if not self.has_room():
            self.host.fanout.effects.append(
                Log("warning", "chat call queue refused a call", {"chat": self.uri})
            )
            return
        self._queue.append(work)
        self._pump()

    def enqueue_calls(
        self,
        calls: list[Call | FeatureCall],
        failed: Callable[[BaseException], None],
        done: Callable[[], None] | None = None,
    ) -> bool:
        """Run calls on the conversation, in order, after those already queued; the first
        failure stops them and goes to `failed`. False when the queue is full."""
        if not self.has_room():
            return False

        def work() -> Work:
            for call in calls:
                try:
                    yield from self._ensure_open()
                    yield CallChat(self.uri, call)
                except Exception as exc:
                    failed(exc)
                    return
            if done is not None:
                done()

        self.enqueue(work)
        return True

    @property
    def busy(self) -> bool:
        """A job of this chat runs or waits (the shell's worker is not idle for it)."""
        return self._work is not None

    def _pump(self) -> None:
        while self._work is None and self._queue and not self.detached:
            self._work = self._queue.popleft()()
            self._advance(None, None)

    def _advance(self, value: Any, error: BaseException | None) -> None:
        work = self._work
        assert work is not None
        while True:
            try:
                step = work.throw(error) if error is not None else work.send(value)
            except StopIteration:
                self._work = None
                self._ticket = None
                return
            except Exception as exc:
                self.host.fanout.effects.append(
                    Log("error", "chat call failed", {"chat": self.uri}, exc)
                )
                self._work = None
                self._ticket = None
                return
            value, error = None, None
            if isinstance(step, Hold):
                if step.ready():
                    continue
                self._hold = step
                self.host.fanout.effects.append(SetTimer(("hold", self.uri), step.seconds))
                return
            self._ticket = self.host.run_job(self, step)
            return

    def job_done(self, ticket: int, result: Any, error: BaseException | None) -> None:
        """The shell finished the job with `ticket`: the work that asked for it goes on."""
        if ticket != self._ticket or self._work is None:
            return
        self._ticket = None
        if self.detached:
            self._work.close()
            self._work = None
            return
        self._advance(result, error)
        self._pump()

    def recheck_hold(self) -> None:
        hold = self._hold
        if hold is not None and hold.ready():
            self._release_hold()

    def hold_expired(self) -> None:
        hold = self._hold
        if hold is None:
            return
        self.host.fanout.effects.append(
            Log(
                "warning",
                f"the provider did not end the cancelled turn within {hold.seconds:g} s "
                f"(timeouts.{hold.key}); sending the next prompt anyway",
                {"chat": self.uri},
            )
        )
        self._release_hold()

    def _release_hold(self) -> None:
        self._hold = None
        self.host.fanout.effects.append(CancelTimer(("hold", self.uri)))
        if self._work is not None:
            self._advance(None, None)
            self._pump()

    # -- provider -> clients -------------------------------------------------------------------

    def subagent_uri(self, agent_id: str) -> str:
        """The read-only chat of one subagent of this chat's conversation (unique per chat)."""
        return f"{self.uri}/subagent/{quote(agent_id, safe='')}"

    def subagent_uris(self) -> list[str]:
        return [self.subagent_uri(agent_id) for agent_id in self.subagents]

    def _open_subagent_chat(self, subagent: agentapi.Subagent) -> None:
        """Create the read-only chat a subagent's transcript streams into (session/chatAdded)."""
        uri = self.subagent_uri(subagent.id)
        store = self.host.fanout.store
        if store.has(uri) or not store.has(self.session.uri):
            return
        parent_chat = (
            self.subagent_uri(subagent.parent_agent_id) if subagent.parent_agent_id else self.uri
        )
        state: dict[str, Any] = {
            "resource": uri,
            "title": subagent.name or "Subagent",
            "status": st.IDLE,
            "modifiedAt": iso_from_ms(self.host.now_ms()),
            "turns": [],
            "interactivity": "read-only",
        }
        if subagent.parent_tool_call_id:
            state["origin"] = {
                "kind": "tool",
                "chat": parent_chat,
                "toolCallId": subagent.parent_tool_call_id,
            }
        store.create(uri, "chat", state)
        self.subagents[subagent.id] = EventTranslator(
            uri,
            self.session.uri,
            new_id=self.host.new_id,
            now_ms=self.host.now_ms,
            subagent_chat_uri=self.subagent_uri,
            agent_id=subagent.id,
        )
        self.host.subagent_chat_added(self, uri)
        summary = {k: v for k, v in state.items() if k != "turns"}
        self.host.fanout.apply(self.session.uri, {"type": A.SESSION_CHAT_ADDED, "summary": summary})

    def on_events(self, events: list[agentapi.Event]) -> None:
        """A batch from the sink: runs of deltas are translated together and coalesced."""
        burst: list[tuple[str, dict[str, Any]]] = []
        for event in events:
            if self.detached:
                return
            if event.kind == agentapi.EventKind.DELTA:
                for translator in self.subagents.values():
                    burst.extend(translator.translate(event))
                burst.extend(self.translator.translate(event))
                continue
            self.apply_all(coalesce(burst))
            burst = []
            self._on_event(event)
            if event.kind == agentapi.EventKind.EXIT:
                break  # the conversation is closed: nothing after its exit counts
        else:
            self.apply_all(coalesce(burst))
        self.recheck_hold()

    def _on_event(self, event: agentapi.Event) -> None:
        if self.detached:
            return
        sub = event.subagent if event.kind == agentapi.EventKind.SUBAGENT else None
        if sub is not None and sub.id and sub.id not in self.subagents:
            self._open_subagent_chat(sub)
        for translator in self.subagents.values():
            self.apply_all(translator.translate(event))
        status = event.mcp_status if event.kind == agentapi.EventKind.MCP_STATUS else None
        if status is not None:
            self.host.mcp_status(self, status)  # typed: the session's MCP customizations
        emitted = self.translator.translate(event)
        if event.kind == agentapi.EventKind.TITLE and not self.host.names_session(self):
            # Another chat's title names that chat (its catalog entry), not the whole session.
            emitted = [(c, a) for c, a in emitted if a.get("type") != A.SESSION_TITLE_CHANGED]
        self.apply_all(emitted)
        if event.turn is not None and event.turn.state == agentapi.TurnState.FAILED:
            self.host.suspect_sign_in(self.provider.name)  # an expired sign-in, perhaps
        if event.kind == agentapi.EventKind.EXIT:
            # The contract: after Exit the conversation is closed; the next call reopens it.
            self.open = False
        if event.kind in (agentapi.EventKind.TURN, agentapi.EventKind.EXIT):
            self.host.resolve_tools(self.tools.sweep(self.translator.active_turn_id))
            if self.translator.active_turn_id is None and self.tools_stale():
                self.queue_tools_refresh()
        self.start_queued_if_idle()

    def apply_all(self, emitted: Iterable[tuple[str, dict[str, Any]]]) -> None:
        self.host.fanout.apply_all(emitted)

    # -- client tools --------------------------------------------------------------------------

    def _tool_failed(self, tool_call: str, result: dict[str, Any]) -> None:
        self.apply_all(self.translator.client_call_failed(tool_call, result))
        self.host.fanout.effects.append(Log("info", "client tool call failed", {"chat": self.uri}))

    def host_tool_called(self, waiter: int, call: agentapi.HostToolCall) -> None:
        """The provider called a client's tool (its events before the call were delivered)."""
        problem, owner, answered = self.tools.called(waiter, call, self.translator.active_turn_id)
        if answered or (problem is None and owner is None):
            self.host.resolve_tools(answered)
            return
        if problem is None:
            emitted, refused = self.translator.client_call(
                call.call_id, call.name, call.agent_id, call.arguments.decode("utf-8")
            )
            self.apply_all(emitted)
            if refused:
                problem = f"The {call.name} tool call cannot reach its client: {refused}."
        if problem is not None or owner is None:
            self.host.resolve_tools(self.tools.refuse(waiter, call, problem or "", owner))
            return
        key = self.tools.start(waiter, call, owner, self.translator.active_turn_id)
        self.host.fanout.effects.append(
            SetTimer(("client-tool", self.uri, key), self.host.client_tool_limits.timeout)
        )

    def host_tool_timed_out(self, key: str) -> None:
        self.host.resolve_tools(self.tools.timed_out(key))

    def host_tool_cancelled(self, waiter: int) -> None:
        self.host.resolve_tools(self.tools.cancelled(waiter))

    def clients_changed(self, active: set[str]) -> None:
        """The session's active clients changed: their calls, and the tools the chat registers."""
        self.host.resolve_tools(self.tools.clients_left(active))
        wanted = self.wanted_tools()
        if wanted.key() != self.tools.plan.key():
            self.queue_tools_refresh()
        elif wanted != self.tools.plan:
            self.tools.plan = wanted
            self.publish_tools()

    def queue_tools_refresh(self) -> None:
        if self.tools_refresh_queued or self.detached or not self.open:
            return
        self.tools_refresh_queued = True
        self.enqueue(self._refresh_tools)

    def _refresh_tools(self) -> Work:
        """Reopen with the active clients' tools, unless a turn runs (its end comes back here)."""
        self.tools_refresh_queued = False
        if not self.open or self.translator.active_turn_id is not None:
            return
        if self.tools_stale():
            try:
                yield from self._reopen()
            except Exception as exc:  # the next call reopens it (or says why it cannot)
                self.host.fanout.effects.append(
                    Log(
                        "warning",
                        "reopening with new client tools failed",
                        {"chat": self.uri, "error": str(exc)},
                    )
                )

    # -- clients -> provider -------------------------------------------------------------------

    def context(self, session_ready: bool) -> CommandContext:
        """What the planner knows of this chat when a client action arrives."""
        state = self.host.fanout.store.state(self.uri)
        active = state.get("activeTurn") or {}
        # A provider-started turn can be running before it is announced in state.
        active_id = active.get("id") or self.translator.active_turn_id
        inputs = self.translator.pending_inputs()
        return CommandContext(
            session_ready=session_ready,
            active_turn_id=active_id,
            models=self.provider.models,
            permissions=self.translator.pending_permissions(),
            inputs=inputs,
            input_answers={rid: synced_answers(state, rid) for rid in inputs},
            can_set_title=self.provider.capabilities.titles,
            workdir=self.session.workdir,
            resumable_turn_id=_resumable_turn_id(state),
            client_calls=self.tools.waiting(),
            commands=self.command_names,
        )

    def accepted(self, action: dict[str, Any], calls: tuple[Call, ...]) -> None:
        """A client action on this chat (or its session) was applied: what follows from it."""
        self.apply_all(self.translator.observe_client_action(action))
        kind = action.get("type")
        if kind in CLIENT_TOOL_ACTIONS:
            self.host.resolve_tools(self.tools.client_action(action))
        elif kind == A.CHAT_TURN_CANCELLED:
            self.host.resolve_tools(self.tools.sweep(self.translator.active_turn_id))
        if kind == A.CHAT_TURN_RESUME:
            # The reopened turn runs on: its duration counts from when it first started.
            active = self.host.fanout.store.state(self.uri).get("activeTurn") or {}
            started = ms_from_iso(active.get("startedAt")) or self.host.now_ms()
            self.translator.turn_started_by_client(str(action["turnId"]), started)
        if calls:
            self.enqueue(lambda: self._run(calls, action))
        self.start_queued_if_idle()

    def _run(self, calls: tuple[Call, ...], action: dict[str, Any]) -> Work:
        """Run one action's planned calls in order; the first failure ends the plan."""
        starts = action.get("type") in STARTS
        riders = _riders(calls)
        for index, call in enumerate(calls):
            if index in riders.values():
                continue  # it went with the call before it
            if isinstance(call, SetModel | Send | RunCommand) and self._cancelled_before_sent(
                action
            ):
                self.translator.turn_not_sent()  # it never starts at the provider
                break
            if starts and index == 0:
                # A turn cancelled just before may still be running at the provider.
                yield Hold(self._provider_idle, "turn_end", self.host.timeouts.turn_end)
                if self._cancelled_before_sent(action):
                    self.translator.turn_not_sent()
                    break
            try:
                yield from self._ensure_open()
                if isinstance(call, SetModel | Send) and self.tools_stale():
                    yield from self._reopen()  # no turn runs yet: the new one gets the new tools
                if isinstance(call, SetModel | Send | RunCommand) and self._cancelled_before_sent(
                    action
                ):
                    self.translator.turn_not_sent()  # cancelled while the conversation opened
                    break
                rider = riders.get(index)
                then = (calls[rider],) if rider is not None else ()
                yield CallChat(self.uri, call, then)
            except FollowUpFailed as follow:
                self._after_success(call, action)
                assert rider is not None
                self._failed(calls[rider], action, follow.error)
                break
            except agentapi.InteractionGone:
                # Answered elsewhere or expired: the provider's own event resolves the request.
                self.host.fanout.effects.append(
                    Log("info", "interaction already gone", {"chat": self.uri})
                )
                break
            except agentapi.ConversationNotFound as lost:
                # Reopening it, or a call on it, says the provider forgot the conversation:
                # a new one takes its place.
                try:
                    yield from self._recover(action)
                    if not isinstance(call, CARRIED):
                        raise lost
                    yield CallChat(self.uri, call)
                except Exception as exc:
                    self._failed(call, action, exc)
                    break
                self._after_success(call, action)
            except Exception as exc:
                self._failed(call, action, exc)
                break
            else:
                self._after_success(call, action)
                if rider is not None:
                    self._after_success(calls[rider], action)
        self.start_queued_if_idle()

    def _provider_idle(self) -> bool:
        """The provider reported the end of every turn a client cancelled."""
        return not self.translator.turns.owes_end()

    def _cancelled_before_sent(self, action: dict[str, Any]) -> bool:
        """A client cancelled this turn while its send was still waiting in the queue."""
        if action.get("type") not in STARTS or not self.host.fanout.store.has(self.uri):
            return False
        active = self.host.fanout.store.state(self.uri).get("activeTurn") or {}
        return bool(active.get("id") != action.get("turnId"))

    def _failed(self, call: Call, action: dict[str, Any], exc: BaseException) -> None:
        self.host.fanout.effects.append(
            Log(
                "info",
                "provider call failed",
                {"chat": self.uri, "call": type(call).__name__, "error": type(exc).__name__},
            )
        )
        starts = action.get("type") in STARTS
        if isinstance(call, Send | RunCommand | SetModel) and starts:
            if self.translator.active_turn_id == action.get("turnId"):
                self.apply_all(self.translator.fail_turn(_error_type(exc), _message(exc)))
            else:  # cancelled meanwhile: whatever it sent, nothing more comes of it
                self.translator.turn_not_sent()
        elif isinstance(call, Steer) and action.get("type") == A.CHAT_PENDING_MESSAGE_SET:
            self._remove_pending("steering", str(action.get("id")))
        if isinstance(exc, agentapi.SignedOut) or starts:
            self.host.suspect_sign_in(self.provider.name)  # an expired sign-in?

    def _after_success(self, call: Call, action: dict[str, Any]) -> None:
        if isinstance(call, Steer) and action.get("type") == A.CHAT_PENDING_MESSAGE_SET:
            self._remove_pending("steering", str(action.get("id")))

    def _remove_pending(self, kind: str, message_id: str) -> None:
        store = self.host.fanout.store
        if not store.has(self.uri):
            return
        state = store.state(self.uri)
        steering = state.get("steeringMessage") or {}
        queued = state.get("queuedMessages") or []
        present = (
            steering.get("id") == message_id
            if kind == "steering"
            else any(m.get("id") == message_id for m in queued)
        )
        if present:
            self.host.fanout.apply(
                self.uri, {"type": A.CHAT_PENDING_MESSAGE_REMOVED, "kind": kind, "id": message_id}
            )

    # -- healing -------------------------------------------------------------------------------

    def _recover(self, action: dict[str, Any]) -> Generator[Step, Any, None]:
        """A call on the open conversation raised ConversationNotFound: end the turn it was
        running (unless that turn is the one `action` is starting), then replace it."""
        running = self.translator.active_turn_id
        own = action.get("type") in STARTS and action.get("turnId") == running
        if running is not None and not own:
            self.apply_all(self.translator.fail_turn("conversationLost", LOST))
        yield from self.replacing(self.conversation_id)

    def replacing(self, lost: str) -> Generator[Step, Any, None]:
        """Open a new conversation in place of `lost`, record it and tell the user."""
        self.open = False
        yield self.closing("closing a lost conversation")
        yield from self.opening("")
        self.host.fanout.effects.append(
            Log(
                "warning",
                "conversation replaced",
                {"chat": self.uri, "lost": lost, "conversation": self.conversation_id},
            )
        )
        self.host.conversation_replaced(self)
        self.announce_replaced(lost)

    def announce_replaced(self, lost: str) -> None:
        """Put the notice in the chat: in its running turn, or as a host turn of its own."""
        fanout = self.host.fanout
        store = fanout.store
        if not store.has(self.uri):
            return  # not published yet (a restore): the caller announces once it is
        part: dict[str, Any] = {
            "kind": "systemNotification",
            "content": NOTICE,
            "_meta": {META_KEY: {"lost": lost, "conversation": self.conversation_id}},
        }
        active = store.state(self.uri).get("activeTurn")
        turn_id = active.get("id") if isinstance(active, dict) else None
        if turn_id is not None:
            # The turn that found out: its provider content comes after the notice (a turn the
            # lost conversation was running has ended before a replacement is made).
            fanout.apply(self.uri, {"type": A.CHAT_RESPONSE_PART, "turnId": turn_id, "part": part})
            return
        host_turn = self.host.new_id()
        now = iso_from_ms(self.host.now_ms())
        message = {"text": NOTICE, "origin": {"kind": "systemNotification"}}
        fanout.apply(
            self.uri,
            {
                "type": A.CHAT_TURN_STARTED,
                "turnId": host_turn,
                "startedAt": now,
                "message": message,
            },
        )
        fanout.apply(self.uri, {"type": A.CHAT_RESPONSE_PART, "turnId": host_turn, "part": part})
        fanout.apply(self.uri, {"type": A.CHAT_TURN_COMPLETE, "turnId": host_turn, "duration": 0})

    # -- turns the host starts -----------------------------------------------------------------

    def start_queued_if_idle(self) -> None:
        store = self.host.fanout.store
        if self.detached or not store.has(self.uri):
            return
        if self.translator.active_turn_id is not None:
            return  # a provider-started turn may run before it is announced
        state = store.state(self.uri)
        if state.get("activeTurn") or not state.get("queuedMessages"):
            return  # nothing to start: no id minted, no clock read (every accepted action)
        action = next_queued_turn(state, self.host.new_id(), self.host.now_ms())
        if action is not None:
            self.host_turn(action)

    def host_turn(self, action: dict[str, Any]) -> None:
        """A turn the host starts (the next queued message, `createChat.initialMessage`)."""
        plan = plan_command(action, self.context(session_ready=True))
        if isinstance(plan, Rejection):
            self.host.fanout.effects.append(
                Log("info", "host turn refused", {"chat": self.uri, "reason": plan.reason})
            )
            return
        self.host.fanout.apply(self.uri, action)
        self.apply_all(self.translator.observe_client_action(action))
        if plan.calls:
            calls = plan.calls
            self.enqueue(lambda: self._run(calls, action))

    def start_turn_from_message(self, message: dict[str, Any]) -> None:
        """`createChat.initialMessage`: start the chat's first turn as if a client sent it."""
        if (message.get("origin") or {}).get("kind") != "user":
            self.host.fanout.effects.append(
                Log(
                    "info",
                    "host turn refused",
                    {
                        "chat": self.uri,
                        "reason": "clients may only start turns with a user message",
                    },
                )
            )
            return
        self.host_turn(
            {
                "type": A.CHAT_TURN_STARTED,
                "turnId": self.host.new_id(),
                "startedAt": iso_from_ms(self.host.now_ms()),
                "message": message,
            }
        )


def effects_of(resolved: Iterable[Resolve]) -> list[ResolveHostTool]:
    return [ResolveHostTool(waiter, result) for waiter, result in resolved]


def _riders(calls: tuple[Call, ...]) -> dict[int, int]:
    """Calls that ride with the one before them in one job: a denial's suggestion (`Steer`
    right after a `Respond`) must reach the provider before the turn it steers can end."""
    return {
        i: i + 1
        for i, call in enumerate(calls[:-1])
        if isinstance(call, Respond) and isinstance(calls[i + 1], Steer)
    }


def _resumable_turn_id(state: dict[str, Any]) -> str | None:
    """The latest turn's id when it ended in a resumable error (what chat/turnResume may name)."""
    turns = state.get("turns") or []
    last = turns[-1] if turns else None
    return last.get("id") if resumable(last) and isinstance(last, dict) else None


def _error_type(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return reason if isinstance(reason, str) and reason else type(exc).__name__


def _message(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


__all__ += ["effects_of", "tool_call_id"]
