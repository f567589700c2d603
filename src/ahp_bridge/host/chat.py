"""One chat's runtime: its provider conversation, its event translator and its call queue.

Provider events arrive through a `ChatSink` on the trio thread and become actions through
`translate.events`; accepted client actions become Conversation calls through
`translate.commands`. Calls run one at a time, in acceptance order, on a worker task, so a
cancel never overtakes the send it cancels. A call that fails after its action was accepted
becomes host actions (`chat/error`), never silence. When the runtime exits, the chat stays
usable: the next prompt reopens the conversation by its id, or opens a new one when the
provider no longer has it (host/healing.py).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.host import healing
from ahp_bridge.host.client_tools import ClientTools
from ahp_bridge.host.sinks import ChatSink
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.uris import session_id
from ahp_bridge.state import status as st
from ahp_bridge.state.reducers.chat import known_turn, resumable
from ahp_bridge.translate import iso_from_ms, ms_from_iso
from ahp_bridge.translate.coalesce import coalesce
from ahp_bridge.translate.commands import (
    Call,
    Cancel,
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

if TYPE_CHECKING:
    from ahp_bridge.host.connection import Connection
    from ahp_bridge.host.sessions import ProviderEntry, Session, SessionManager

log = structlog.get_logger(__name__)


class HostClock:
    """Wall-clock time for the host shell (the sans-IO core only ever receives it)."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def now_iso(self) -> str:
        return iso_from_ms(self.now_ms())


Job = Callable[[], Awaitable[None]]


class ChatRuntime:
    def __init__(
        self, manager: SessionManager, session: Session, uri: str, entry: ProviderEntry
    ) -> None:
        self.manager = manager
        self.hub = manager.hub
        self.session = session
        self.uri = uri
        self.entry = entry
        self.conversation: agentapi.Conversation | None = None
        self.conversation_id = ""
        self.sink: ChatSink | None = None
        changes = manager.changes
        self.translator = EventTranslator(
            uri,
            session.uri,
            new_id=lambda: str(uuid.uuid4()),
            now_ms=manager.clock.now_ms,
            subagent_chat_uri=self.subagent_uri,
            file_edits=(lambda turn, edits: changes.tool_edits(self, turn, edits))
            if changes is not None
            else None,
        )
        #: One translator per subagent, each building that subagent's read-only chat.
        self._subagents: dict[str, EventTranslator] = {}
        #: Calls waiting for the worker; a client that floods the chat beyond it is refused.
        self._pending = manager.limits.max_pending_calls
        self._send, self._recv = trio.open_memory_channel[Job](self._pending)
        self._closed = False
        self.client_tools = ClientTools(self, manager.client_tool_limits)
        self._tools_refresh_queued = False
        #: The provider's `/` commands as last read (name and alias -> name; host/slash.py).
        self.command_names: dict[str, str] = {}

    # -- conversation lifetime -----------------------------------------------------------------

    async def open(self, conversation_id: str) -> None:
        """Open (or reopen by id) the provider conversation behind this chat.

        The session's active clients' tools are its host tools; an open the provider refuses
        for clashing tool names is made again without them (their refusal says why). The
        session's settings (model, effort, context size, agent) go with every open.
        """
        chosen = self.session.settings
        while True:
            plan = self.client_tools.wanted()
            sink = ChatSink(self._on_events, self.manager.token)
            request = agentapi.OpenRequest(
                session_id=session_id(self.session.uri),
                conversation_id=conversation_id,
                workdir=self.session.workdir,
                model=chosen.model,
                effort=chosen.effort,
                context_size=chosen.context_size,
                agent=chosen.agent,
                events=sink,
                tools=plan.host_tools(),
                call_tool=self.client_tools.call_tool if plan.tools else None,
            )
            try:
                conversation = await self.entry.provider.open(request)
            except agentapi.HostToolClash as exc:
                sink.close()
                if not plan.tools or not self.client_tools.refuse_clash(exc, plan):
                    raise
                continue
            except agentapi.SignedOut:
                sink.close()
                self.manager.sign_in_watch.suspect(self.entry)
                raise
            except BaseException:
                sink.close()
                raise
            break
        self.sink = sink
        self.conversation = conversation
        self.conversation_id = conversation.id()
        self.client_tools.opened(plan)

    async def _reopen(self) -> None:
        """Open the conversation again by its id (same transcript) with the current host tools."""
        await self.let_go("close before reopening")
        log.info("reopening conversation with new client tools", chat=self.uri)
        await self.open(self.conversation_id)

    def client_tools_changed(self, active: set[str]) -> None:
        """The session's active clients changed: their calls, and the tools the chat registers."""
        if self.client_tools.clients_changed(active):
            self._queue_tools_refresh()

    def _queue_tools_refresh(self) -> None:
        if self._tools_refresh_queued or self._closed or self.conversation is None:
            return
        self._tools_refresh_queued = True
        self._enqueue(self._refresh_tools)

    async def _refresh_tools(self) -> None:
        """Reopen with the active clients' tools, unless a turn runs (its end comes back here)."""
        self._tools_refresh_queued = False
        if self.conversation is None or self.translator.active_turn_id is not None:
            return
        if self.client_tools.stale():
            try:
                await self._reopen()
            except Exception as exc:  # the next call reopens it (or says why it cannot)
                log.warning("reopening with new client tools failed", chat=self.uri, error=str(exc))

    def start(self) -> None:
        self.manager.nursery.start_soon(self._worker)

    def detach(self) -> None:
        """Stop listening without calling the provider (host shutdown: the provider closes all)."""
        self._closed = True
        self.client_tools.close()
        if self.sink is not None:
            self.sink.close()
        self._send.close()

    async def close(self) -> None:
        """Close the conversation (it is detached, never deleted) and stop the worker."""
        self.detach()
        await self.let_go("close")

    async def let_go(self, doing: str) -> None:
        """Stop listening to the conversation and close it; past `timeouts.close` it is let go
        without waiting (a failure is only logged: the bridge is done with it either way)."""
        conversation, self.conversation = self.conversation, None
        if self.sink is not None:
            self.sink.close()
        if conversation is None:
            return
        with trio.move_on_after(self.manager.timeouts.close):
            try:
                await conversation.close()
            except Exception as exc:
                log.info(f"{doing} failed", chat=self.uri, error=str(exc))

    async def _ensure_open(self) -> agentapi.Conversation:
        if self.conversation is None:
            if not self.conversation_id:
                raise agentapi.Closed("the conversation is closed")
            log.info("reopening conversation", chat=self.uri)
            await self.open(self.conversation_id)
        assert self.conversation is not None
        return self.conversation

    # -- provider -> clients -------------------------------------------------------------------

    def subagent_uri(self, agent_id: str) -> str:
        """The read-only chat of one subagent of this chat's conversation (unique per chat)."""
        return f"{self.uri}/subagent/{quote(agent_id, safe='')}"

    def subagent_uris(self) -> list[str]:
        return [self.subagent_uri(agent_id) for agent_id in self._subagents]

    def _open_subagent_chat(self, subagent: agentapi.Subagent) -> None:
        """Create the read-only chat a subagent's transcript streams into (session/chatAdded)."""
        uri = self.subagent_uri(subagent.id)
        store = self.hub.store
        if store.has(uri) or not store.has(self.session.uri):
            return
        parent_chat = (
            self.subagent_uri(subagent.parent_agent_id) if subagent.parent_agent_id else self.uri
        )
        state: dict[str, Any] = {
            "resource": uri,
            "title": subagent.name or "Subagent",
            "status": st.IDLE,
            "modifiedAt": self.manager.clock.now_iso(),
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
        self._subagents[subagent.id] = EventTranslator(
            uri,
            self.session.uri,
            new_id=lambda: str(uuid.uuid4()),
            now_ms=self.manager.clock.now_ms,
            subagent_chat_uri=self.subagent_uri,
            agent_id=subagent.id,
        )
        self.manager.subagent_chats[uri] = self
        summary = {k: v for k, v in state.items() if k != "turns"}
        self.hub.apply(
            self.session.uri, {"type": ActionType.SESSION_CHAT_ADDED, "summary": summary}
        )

    def _on_events(self, events: list[agentapi.Event]) -> None:
        """A batch from the sink: runs of deltas are translated together and coalesced."""
        burst: list[tuple[str, dict[str, Any]]] = []
        for event in events:
            if self._closed:
                return
            if event.kind == agentapi.EventKind.DELTA:
                for translator in self._subagents.values():
                    burst.extend(translator.translate(event))
                burst.extend(self.translator.translate(event))
                continue
            self._apply_all(coalesce(burst))
            burst = []
            self._on_event(event)
            if event.kind == agentapi.EventKind.EXIT:
                return  # the conversation is closed: nothing after its exit counts
        self._apply_all(coalesce(burst))

    def _on_event(self, event: agentapi.Event) -> None:
        if self._closed:
            return
        sub = event.subagent if event.kind == agentapi.EventKind.SUBAGENT else None
        if sub is not None and sub.id and sub.id not in self._subagents:
            self._open_subagent_chat(sub)
        for translator in self._subagents.values():
            self._apply_all(translator.translate(event))
        customizations = self.manager.customizations
        status = event.mcp_status if event.kind == agentapi.EventKind.MCP_STATUS else None
        if status is not None and customizations is not None:
            customizations.mcp_event(self, status)  # typed: the session's MCP customizations
        emitted = self.translator.translate(event)
        if event.kind == agentapi.EventKind.TITLE and not self._names_session():
            # Another chat's title names that chat (its catalog entry), not the whole session.
            emitted = [
                (c, a) for c, a in emitted if a.get("type") != ActionType.SESSION_TITLE_CHANGED
            ]
        self._apply_all(emitted)
        if event.turn is not None and event.turn.state == agentapi.TurnState.FAILED:
            self.manager.sign_in_watch.suspect(self.entry)  # an expired sign-in, perhaps
        if event.kind == agentapi.EventKind.EXIT:
            # The contract: after Exit the conversation is closed; the next prompt reopens it.
            if self.sink is not None:
                self.sink.close()
            self.conversation = None
        if event.kind in (agentapi.EventKind.TURN, agentapi.EventKind.EXIT):
            self.client_tools.sweep()
            if self.translator.active_turn_id is None and self.client_tools.stale():
                self._queue_tools_refresh()
        self._start_queued_if_idle()

    def _names_session(self) -> bool:
        """The default chat's conversation names the session (as a client rename goes to it)."""
        if not self.hub.store.has(self.session.uri):
            return True
        default = self.hub.store.state(self.session.uri).get("defaultChat")
        return default is None or default == self.uri

    def names_session(self) -> bool:
        return self._names_session()

    def apply_all(self, emitted: list[tuple[str, dict[str, Any]]]) -> None:
        self._apply_all(emitted)

    def _apply_all(self, emitted: list[tuple[str, dict[str, Any]]]) -> None:
        store = self.hub.store
        for channel, action in emitted:
            if store.has(channel):
                self.hub.apply(channel, action)

    # -- clients -> provider -------------------------------------------------------------------

    def _context(self) -> CommandContext:
        state = self.hub.store.state(self.uri)
        active = state.get("activeTurn") or {}
        # A provider-started turn can be running before it is announced in state.
        active_id = active.get("id") or self.translator.active_turn_id
        inputs = self.translator.pending_inputs()
        return CommandContext(
            session_ready=self.hub.store.state(self.session.uri).get("lifecycle") == "ready",
            active_turn_id=active_id,
            models=self.entry.models,
            permissions=self.translator.pending_permissions(),
            inputs=inputs,
            input_answers={rid: synced_answers(state, rid) for rid in inputs},
            can_set_title=self.entry.capabilities.titles,
            workdir=self.session.workdir,
            resumable_turn_id=_resumable_turn_id(state),
            client_calls=self.client_tools.waiting(),
            commands=self.command_names,
        )

    def client_action(
        self,
        conn: Connection,
        action: dict[str, Any],
        origin: dict[str, Any],
        channel: str | None = None,
        *,
        sent: dict[str, Any] | None = None,
    ) -> None:
        """Plan, apply and echo one client action on this chat (or its session), then call.

        `action` is canonical; a refusal echoes `sent`, the action as the client sent it.
        """
        channel = channel or self.uri
        sent = action if sent is None else sent
        if action.get("type") == ActionType.CHAT_TURN_STARTED and known_turn(
            self.hub.store.state(self.uri), action.get("turnId")
        ):
            # 1.0: a turn id the chat already knows is a no-op (a client's retry); the echo
            # tells it so, and nothing reaches the provider again.
            self.hub.apply(channel, action, origin)
            return
        plan = plan_command(action, self._context())
        if isinstance(plan, Rejection):
            self.hub.reject(conn, channel, sent, origin, plan.reason)
            return
        if plan.calls and not self._has_room():
            self.hub.reject(conn, channel, sent, origin, self.queue_full())
            return
        self.hub.apply(channel, action, origin)
        self._apply_all(self.translator.observe_client_action(action))
        if action.get("type") in _CLIENT_TOOL_ACTIONS:
            self.client_tools.client_action(action)
        elif action.get("type") == ActionType.CHAT_TURN_CANCELLED:
            self.client_tools.sweep()
        if action.get("type") == ActionType.CHAT_TURN_RESUME:
            # The reopened turn runs on: its duration counts from when it first started.
            active = self.hub.store.state(self.uri).get("activeTurn") or {}
            started = ms_from_iso(active.get("startedAt")) or self.manager.clock.now_ms()
            self.translator.turn_started_by_client(str(action["turnId"]), started)
        if plan.calls:
            self._enqueue(lambda: self._run(plan.calls, action))
        self._start_queued_if_idle()

    def enqueue_calls(
        self,
        calls: list[Callable[[agentapi.Conversation], Awaitable[None]]],
        failed: Callable[[Exception], None],
    ) -> bool:
        """Run provider calls on this chat's worker, in order, after those already queued; the
        first failure stops them and goes to `failed`. False when the queue is full."""
        if not self._has_room():
            return False

        async def job() -> None:
            for call in calls:
                try:
                    await call(await self._ensure_open())
                except Exception as exc:
                    failed(exc)
                    return

        self._enqueue(job)
        return True

    def _has_room(self) -> bool:
        return self._send.statistics().current_buffer_used < self._pending

    def queue_full(self) -> str:
        """The rejection reason of an action refused because the call queue is full."""
        return (
            f"{self._pending} operations already wait for this chat's provider, the most it "
            "holds (limits.max_pending_calls): try again when they are done"
        )

    def _enqueue(self, job: Job) -> None:
        try:
            self._send.send_nowait(job)
        except (trio.WouldBlock, trio.ClosedResourceError):
            log.warning("chat call queue refused a call", chat=self.uri)

    async def _worker(self) -> None:
        async with self._recv:
            async for job in self._recv:
                try:
                    await job()
                except Exception:
                    log.exception("chat call failed", chat=self.uri)

    async def _run(self, calls: tuple[Call, ...], action: dict[str, Any]) -> None:
        """Run one action's planned calls in order; the first failure ends the plan."""
        for call in calls:
            if isinstance(call, SetModel | Send | RunCommand) and self._cancelled_before_sent(
                action
            ):
                self.translator.turn_not_sent()  # it never starts at the provider
                break
            try:
                conversation = await self._ensure_open()
                if isinstance(call, SetModel | Send) and self.client_tools.stale():
                    await self._reopen()  # no turn runs yet: the new one gets the new tools
                    conversation = await self._ensure_open()
                await _execute(conversation, call)
            except agentapi.InteractionGone:
                # Answered elsewhere or expired: the provider's own event resolves the request.
                log.info("interaction already gone", chat=self.uri)
                break
            except agentapi.ConversationNotFound as lost:
                # Reopening it, or a call on it, says the provider forgot the conversation:
                # a new one takes its place (host/healing.py).
                try:
                    conversation = await healing.recover(self, action)
                    if not isinstance(call, healing.CARRIED):
                        raise lost
                    await _execute(conversation, call)
                except Exception as exc:
                    self._failed(call, action, exc)
                    break
                self._after_success(call, action)
            except Exception as exc:
                self._failed(call, action, exc)
                break
            else:
                self._after_success(call, action)
        self._start_queued_if_idle()

    def _cancelled_before_sent(self, action: dict[str, Any]) -> bool:
        """A client cancelled this turn while its send was still waiting in the queue."""
        if action.get("type") not in _STARTS or not self.hub.store.has(self.uri):
            return False
        active = self.hub.store.state(self.uri).get("activeTurn") or {}
        return bool(active.get("id") != action.get("turnId"))

    def _failed(self, call: Call, action: dict[str, Any], exc: Exception) -> None:
        log.info(
            "provider call failed",
            chat=self.uri,
            call=type(call).__name__,
            error=type(exc).__name__,
        )
        self._after_failure(call, action, exc)
        if isinstance(exc, agentapi.SignedOut) or action.get("type") in _STARTS:
            self.manager.sign_in_watch.suspect(self.entry)  # an expired sign-in?

    def _after_success(self, call: Call, action: dict[str, Any]) -> None:
        if isinstance(call, Steer) and action.get("type") == ActionType.CHAT_PENDING_MESSAGE_SET:
            self._remove_pending("steering", str(action.get("id")))

    def _after_failure(self, call: Call, action: dict[str, Any], exc: Exception) -> None:
        if isinstance(call, Send | RunCommand | SetModel) and action.get("type") in _STARTS:
            if self.translator.active_turn_id == action.get("turnId"):
                self._apply_all(self.translator.fail_turn(_error_type(exc), _message(exc)))
            else:  # cancelled meanwhile: whatever it sent, nothing more comes of it
                self.translator.turn_not_sent()
        elif isinstance(call, Steer) and action.get("type") == ActionType.CHAT_PENDING_MESSAGE_SET:
            self._remove_pending("steering", str(action.get("id")))

    def _remove_pending(self, kind: str, message_id: str) -> None:
        state = self.hub.store.state(self.uri)
        steering = state.get("steeringMessage") or {}
        queued = state.get("queuedMessages") or []
        present = (
            steering.get("id") == message_id
            if kind == "steering"
            else any(m.get("id") == message_id for m in queued)
        )
        if present:
            self.hub.apply(
                self.uri,
                {"type": ActionType.CHAT_PENDING_MESSAGE_REMOVED, "kind": kind, "id": message_id},
            )

    def start_turn_from_message(self, message: dict[str, Any]) -> None:
        """`createChat.initialMessage`: start the chat's first turn as if a client sent it."""
        action = {
            "type": ActionType.CHAT_TURN_STARTED,
            "turnId": str(uuid.uuid4()),
            "startedAt": self.manager.clock.now_iso(),
            "message": message,
        }
        self._host_turn(action)

    def _start_queued_if_idle(self) -> None:
        if self._closed or not self.hub.store.has(self.uri):
            return
        if self.translator.active_turn_id is not None:
            return  # a provider-started turn may run before it is announced
        action = next_queued_turn(
            self.hub.store.state(self.uri), str(uuid.uuid4()), self.manager.clock.now_ms()
        )
        if action is not None:
            self._host_turn(action)

    def _host_turn(self, action: dict[str, Any]) -> None:
        plan = plan_command(action, self._context())
        if isinstance(plan, Rejection):
            log.info("host turn refused", chat=self.uri, reason=plan.reason)
            return
        self.hub.apply(self.uri, action)
        self._apply_all(self.translator.observe_client_action(action))
        if plan.calls:
            self._enqueue(lambda: self._run(plan.calls, action))


async def _execute(conversation: agentapi.Conversation, call: Call) -> None:
    match call:
        case SetModel(model=model, effort=effort, context_size=size):
            await conversation.set_model(model, effort, size)
        case Send(prompt=prompt):
            await conversation.send(prompt)
        case RunCommand(name=name, args=args):
            await conversation.run_command(name, args)
        case Cancel():
            await conversation.cancel()
        case Respond(interaction_id=interaction_id, answer=answer):
            await conversation.respond(interaction_id, answer)
        case Steer(prompt=prompt):
            await conversation.steer(prompt)
        case SetTitle(title=title):
            await conversation.set_title(title)
        case SelectAgent(agent_id=agent_id):
            if not isinstance(conversation, agentapi.AgentSelector):
                raise agentapi.Unsupported("this provider cannot select custom agents")
            await conversation.select_agent(agent_id)


#: Client actions that answer a client tool call the provider waits on (host/client_tools.py).
_CLIENT_TOOL_ACTIONS = frozenset(
    {ActionType.CHAT_TOOL_CALL_COMPLETE, ActionType.CHAT_TOOL_CALL_RESULT_CONFIRMED}
)
#: Client actions that start (or restart) a turn at the provider.
_STARTS = frozenset({ActionType.CHAT_TURN_STARTED, ActionType.CHAT_TURN_RESUME})


def _resumable_turn_id(state: dict[str, Any]) -> str | None:
    """The latest turn's id when it ended in a resumable error (what chat/turnResume may name)."""
    turns = state.get("turns") or []
    last = turns[-1] if turns else None
    return last.get("id") if resumable(last) and isinstance(last, dict) else None


def _error_type(exc: Exception) -> str:
    reason = getattr(exc, "reason", None)
    return reason if isinstance(reason, str) and reason else type(exc).__name__


def _message(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
