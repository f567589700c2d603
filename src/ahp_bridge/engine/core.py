"""The engine: every decision of the host, fed inputs, returning effects (sans-IO).

`Engine.handle(input)` is the whole interface: the shell feeds it what happened (a frame, a
socket gone, a batch of provider events, a job done, a timer) and carries out the effects it
returns, in order (see `effects`). Frames for peers go straight into each peer's outbox. The
engine reads no clock and makes no ids of its own: `now_ms` and `new_id` are injected, so a test
drives it with function calls and gets the same frames every time.

Rooms: `gate` (parsing, ids, routing), `handshake` (initialize, reconnect, subscriptions),
`fanout` (the store's one writer and the frames each peer is owed), `accept` (the one decision on
a client action), `sessions` and `chats` (their lifecycles, each chat's turns and provider calls),
`client_tools`, and the features' decisions (`settings`, `customizations`, `durable`).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from ahp_bridge import agentapi
from ahp_bridge.engine import accept, handshake
from ahp_bridge.engine.budget import RELEASES, Budget
from ahp_bridge.engine.chats import Chat, effects_of
from ahp_bridge.engine.client_tools import ClientToolLimits, Resolve
from ahp_bridge.engine.clients import KnownClients
from ahp_bridge.engine.customizations import Customizations
from ahp_bridge.engine.durable import DurableRecords
from ahp_bridge.engine.effects import Effect, Log, Restore, Run, Serve, SetTimer
from ahp_bridge.engine.fanout import Fanout, HostAction
from ahp_bridge.engine.gate import DEFERRED, Gate
from ahp_bridge.engine.inputs import (
    Answered,
    HostActions,
    HostToolCalled,
    HostToolCancelled,
    Input,
    JobDone,
    PeerGone,
    ProviderEvents,
    Received,
    Restored,
    TimerFired,
)
from ahp_bridge.engine.jobs import Job, Persist, ShellJob
from ahp_bridge.engine.peers import Peer
from ahp_bridge.engine.providers import ProviderInfo
from ahp_bridge.engine.sessions import NewSession, Session, Sessions
from ahp_bridge.engine.settings import SessionSettings
from ahp_bridge.engine.timeouts import Timeouts
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.actions_v1 import AUTOMATION_TYPES, CANVAS_TYPES
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.jsonrpc import RequestId
from ahp_bridge.protocol.lens import DEFAULT_LINE
from ahp_bridge.protocol.params import AUTOMATION_METHODS
from ahp_bridge.protocol.uris import ROOT
from ahp_bridge.state.limits import Limits
from ahp_bridge.state.store import Store
from ahp_bridge.translate import iso_from_ms
from ahp_bridge.translate.session_config import Settings

__all__ = ["Engine", "EngineConfig"]

#: Filesystem methods: the shell serves them, or they are refused (a host without a workspace).
FILESYSTEM = frozenset(
    {
        "resourceRead",
        "resourceWrite",
        "resourceList",
        "resourceCopy",
        "resourceDelete",
        "resourceMove",
        "resourceResolve",
        "resourceMkdir",
        "resourceRequest",
        "createResourceWatch",
    }
)
#: Features of 1.0 this host does not offer: the answer to their commands and actions.
NO_AUTOMATIONS = "automations are not offered by this host"
NO_CANVASES = "canvases are not offered by this host"
NO_MOVE = "moving chats between sessions is not offered by this host"


@dataclass(frozen=True)
class EngineConfig:
    """Everything the engine is told once, at start."""

    outbound_queue: int = 4096
    max_subscriptions: int = 1024
    remembered_request_ids: int = 4096
    max_json_depth: int = 64
    limits: Limits = field(default_factory=Limits)
    timeouts: Timeouts = field(default_factory=Timeouts)
    client_tools: ClientToolLimits = field(default_factory=ClientToolLimits)
    #: A disconnected client stays an active client this long (`bridge.active_client_grace`).
    active_client_grace: float = 30.0
    #: The default working directory (`bridge.workdir`), as a path and as sent to clients.
    workdir: str = ""
    default_directory: str | None = None
    completion_triggers: tuple[str, ...] = ()
    #: The host keeps a durable catalog of sessions.
    durable: bool = False
    #: Methods the shell serves (`effects.Serve`); the rest get the engine's answer.
    served: frozenset[str] = frozenset()


class Engine:
    """The host's rules (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        providers: Mapping[str, ProviderInfo],
        config: EngineConfig,
        *,
        now_ms: Callable[[], int],
        new_id: Callable[[], str],
        directory_uri: Callable[[str], str] = lambda path: path,
    ) -> None:
        self.config = config
        self.store = store
        self.limits = config.limits
        self.timeouts = config.timeouts
        self.client_tool_limits = config.client_tools
        self._now_ms = now_ms
        self._iso: tuple[int | None, str] = (None, "")
        self._new_id = new_id
        self.fanout = Fanout(store, outbound_queue=config.outbound_queue, clock=self.now_iso)
        self.gate = Gate(
            self.fanout,
            max_json_depth=config.max_json_depth,
            remembered_ids=config.remembered_request_ids,
        )
        self.clients = KnownClients(persist=self._remember_client if config.durable else None)
        self.peers: dict[Peer, None] = {}
        #: What each client id makes the host keep (limits.max_client_bytes, max_host_bytes).
        self.budget = Budget(config.limits)
        self.sessions = Sessions(
            self, providers=providers, workdir=config.workdir, durable=config.durable
        )
        # The features' observers, in the order they have always run.
        # Only a host with a catalog is told what to record (`persist` is gated alike).
        self.durable = (
            DurableRecords(self.fanout, self.sessions, self.now_iso) if config.durable else None
        )
        self.sessions.observe()
        self.fanout.observe(self.budget.observe(store), RELEASES)
        self.settings = SessionSettings(self.fanout, self.sessions)
        self.customizations = Customizations(
            self.fanout, self.sessions, directory_uri=directory_uri
        )
        #: Channels made only once asked for (a turn's changeset): True when one was made.
        self.materializers: list[Callable[[str], bool]] = []
        self._tickets = itertools.count(1)
        self._jobs: dict[int, Callable[[Any, BaseException | None], None]] = {}
        self._waiters: dict[int, Chat] = {}
        #: createSession requests the shell is preparing (checked here, recorded there).
        self.pending_creations: dict[tuple[Peer, RequestId], NewSession] = {}
        #: Hooks the shell's services give: a tool call's file edits as `fileEdit` contents
        #: (changes), and observers of applied envelopes that return effects.
        self.file_edit_hook: Callable[[Chat, str, list[agentapi.FileEdit]], list[Any]] = (
            lambda chat, turn, edits: []
        )
        self._route()

    # -- clock and ids (injected) --------------------------------------------------------------

    def now_ms(self) -> int:
        return self._now_ms()

    def now_iso(self) -> str:
        """The host's time, ISO-8601 (read for every applied envelope: a millisecond's text is
        made once)."""
        ms = self._now_ms()
        if ms != self._iso[0]:
            self._iso = (ms, iso_from_ms(ms))
        return self._iso[1]

    def new_id(self) -> str:
        return self._new_id()

    def start(self) -> None:
        """The root channel, with every agent as the providers are now."""
        self.store.create(ROOT, "root", {"agents": self.sessions.agents(), "activeSessions": 0})

    # -- what the handshake reads --------------------------------------------------------------

    @property
    def max_subscriptions(self) -> int:
        return self.config.max_subscriptions

    @property
    def default_directory(self) -> str | None:
        return self.config.default_directory

    @property
    def completion_triggers(self) -> tuple[str, ...]:
        return self.config.completion_triggers

    def capabilities(self) -> dict[str, Any]:
        return self.sessions.capabilities()

    def chat_provider(self, uri: str) -> str:
        """The provider of a chat (live, opening, or a subagent's)."""
        sessions = self.sessions
        chat = (
            sessions.chats.get(uri) or sessions.opening.get(uri) or sessions.subagent_chats.get(uri)
        )
        if chat is None:
            raise KeyError(f"no chat {uri}")
        return chat.provider.name

    # -- the interface -------------------------------------------------------------------------

    def open_peer(self, number: int) -> Peer:
        """A new connection: the record the shell feeds its frames with."""
        return Peer(number, self.fanout.wires[DEFAULT_LINE])

    def handle(self, event: Input) -> list[Effect]:
        """Decide what one input means; returns the effects, in order."""
        match event:
            case Received(peer=peer, text=text):
                self._received(peer, text)
            case Restored(peer=peer, message=message):
                if not peer.closed:
                    self.gate.handle(peer, message)
            case PeerGone(peer=peer):
                self._lost(peer)
            case Answered(peer=peer, request_id=request_id, result=result, error=error):
                self.answered(peer, request_id, result, error)
            case ProviderEvents(chat=uri, events=events):
                chat = self.sessions.chats.get(uri) or self.sessions.opening.get(uri)
                if chat is not None:
                    chat.on_events(events)
            case JobDone(ticket=ticket, result=result, error=error):
                done = self._jobs.pop(ticket, None)
                if done is not None:
                    done(result, error)
            case HostToolCalled(chat=uri, waiter=waiter, call=call):
                self._host_tool_called(uri, waiter, call)
            case HostToolCancelled(chat=uri, waiter=waiter):
                chat = self._waiters.pop(waiter, None)
                if chat is not None:
                    chat.host_tool_cancelled(waiter)
            case TimerFired(key=key):
                self._timer(key)
            case HostActions(actions=actions):
                self.fanout.apply_all(actions)
        return self.fanout.take_effects()

    def apply(self, channel: str, action: dict[str, Any]) -> list[Effect]:
        """Apply one host action (the shell's services), returning the effects."""
        return self.handle(HostActions([(channel, action)]))

    def take_effects(self) -> list[Effect]:
        """Effects decided outside `handle` (a service called the engine directly)."""
        return self.fanout.take_effects()

    # -- frames --------------------------------------------------------------------------------

    def _received(self, peer: Peer, text: str | None) -> None:
        if peer.closed:
            return
        if text is None:
            self.gate.binary(peer)
            return
        msg = self.gate.parse(peer, text)
        if msg is None:
            return
        dormant = self.gate.dormant(peer, msg)
        if dormant:
            self.fanout.effects.append(Restore(peer, dormant, msg))
            return
        self.gate.handle(peer, msg)

    def answered(
        self, peer: Peer, request_id: RequestId, result: Any, error: RpcError | None
    ) -> None:
        if peer.closed:
            return
        if error is not None:
            self.gate.answer_error(peer, request_id, error)
        else:
            self.gate.answer(peer, request_id, result)

    def _lost(self, peer: Peer) -> None:
        """The peer is gone (closed by either side): it leaves everything it was in."""
        was_open = peer in self.peers
        peer.closed = True
        self.peers.pop(peer, None)
        self.fanout.drop(peer)
        client_id = peer.client_id
        if was_open and client_id is not None and not self.is_connected(client_id):
            self.grace_timer(client_id)

    def connected(self, peer: Peer) -> None:
        self.peers[peer] = None

    def is_connected(self, client_id: str) -> bool:
        return any(p.client_id == client_id for p in self.peers)

    def grace_timer(self, client_id: str) -> None:
        self.fanout.effects.append(
            SetTimer(("active-client", client_id), self.config.active_client_grace)
        )

    # -- jobs and timers -----------------------------------------------------------------------

    def run(self, job: Job, done: Callable[[Any, BaseException | None], None] | None) -> int:
        """Hand `job` to the shell; `done` gets its outcome (None: nothing is fed back)."""
        if done is None:
            self.fanout.effects.append(Run(job))
            return 0
        ticket = next(self._tickets)
        self._jobs[ticket] = done
        self.fanout.effects.append(Run(job, ticket))
        return ticket

    def run_job(self, chat: Chat, job: Job) -> int:
        ticket = next(self._tickets)
        self._jobs[ticket] = partial(chat.job_done, ticket)
        self.fanout.effects.append(Run(job, ticket))
        return ticket

    def persist(self, op: str, *args: Any, **fields: Any) -> None:
        if self.config.durable:
            self.run(Persist(op, args, fields), None)

    def shell_job(self, name: str, channel: str = "", data: Any = None) -> None:
        self.run(ShellJob(name, channel, data), None)

    def _timer(self, key: tuple[Any, ...]) -> None:
        match key:
            case ("active-client", str(client_id)):
                self.sessions.client_expired(client_id)
            case ("hold", str(uri)):
                chat = self.sessions.chats.get(uri) or self.sessions.opening.get(uri)
                if chat is not None:
                    chat.hold_expired()
            case ("client-tool", str(uri), str(tool_call)):
                chat = self.sessions.chats.get(uri)
                if chat is not None:
                    chat.host_tool_timed_out(tool_call)
            case _:
                self.fanout.effects.append(Log("warning", "unknown timer", {"key": repr(key)}))

    # -- what chats and sessions need ----------------------------------------------------------

    def new_chat(self, session: Session, uri: str) -> Chat:
        info = self.sessions.providers[session.provider]
        return Chat(self, session, uri, info, settings=lambda: session.settings)

    def session_state(self, chat: Chat) -> dict[str, Any]:
        uri = chat.session.uri
        return self.store.state(uri) if self.store.has(uri) else {}

    def names_session(self, chat: Chat) -> bool:
        """The default chat's conversation names the session (as a client rename goes to it)."""
        uri = chat.session.uri
        if not self.store.has(uri):
            return True
        default = self.store.state(uri).get("defaultChat")
        return default is None or default == chat.uri

    def suspect_sign_in(self, provider: str) -> None:
        info = self.sessions.providers.get(provider)
        if info is not None and not info.signed_out and info.can_sign_in:
            self.shell_job("auth.check", data=provider)

    def conversation_replaced(self, chat: Chat) -> None:
        self.persist("update_chat", chat.uri, conversation_id=chat.conversation_id)

    def file_edits(self, chat: Chat, turn_id: str, edits: list[agentapi.FileEdit]) -> list[Any]:
        return self.file_edit_hook(chat, turn_id, edits)

    def mcp_status(self, chat: Chat, status: agentapi.MCPStatusSnapshot) -> None:
        self.customizations.mcp_event(chat, status)

    def subagent_chat_added(self, chat: Chat, uri: str) -> None:
        self.sessions.subagent_chats[uri] = chat

    def resolve_tools(self, resolved: Iterable[Resolve]) -> None:
        for effect in effects_of(resolved):
            self._waiters.pop(effect.waiter, None)
            self.fanout.effects.append(effect)

    def _host_tool_called(self, uri: str, waiter: int, call: agentapi.HostToolCall) -> None:
        chat = self.sessions.chats.get(uri) or self.sessions.opening.get(uri)
        if chat is None:
            result = agentapi.HostToolResult(
                text=f"The {call.name} tool call cannot reach its client: the chat is gone.",
                failed=True,
            )
            self.resolve_tools([(waiter, result)])
            return
        self._waiters[waiter] = chat
        chat.host_tool_called(waiter, call)

    def _remember_client(self, client_id: str, line: str) -> None:
        self.persist("remember_client", client_id, line, self.now_ms())

    # -- the routes ----------------------------------------------------------------------------

    def _route(self) -> None:
        gate = self.gate
        sessions = self.sessions
        served = self.config.served
        routes: dict[str, Callable[[Peer, dict[str, Any]], Any]] = {
            "initialize": lambda p, params: handshake.initialize(self, p, params),
            "ping": lambda p, params: None,
            "reconnect": lambda p, params: handshake.reconnect(self, p, params),
            "subscribe": lambda p, params: handshake.subscribe(self, p, params),
            "createSession": self._create_session,
            "disposeSession": sessions.dispose_session,
            "createChat": sessions.create_chat,
            "disposeChat": sessions.dispose_chat,
            "listSessions": sessions.list_sessions,
            "fetchTurns": lambda p, params: sessions.fetch_turns(p, params, self.gate.request_id),
            "completions": self._serve_or({"items": []}),
            "sessionConfigCompletions": self._serve_or({"items": []}),
            "resolveSessionConfig": self._serve_or(
                {"schema": {"type": "object", "properties": {}}, "values": {}}
            ),
            "authenticate": self._serve_or(None, self._not_protected),
            "createTerminal": _refuse(E.PERMISSION_DENIED, "This host does not offer terminals"),
            "disposeTerminal": _refuse(E.PERMISSION_DENIED, "This host does not offer terminals"),
            "invokeChangesetOperation": self._serve_or(None, self._no_changeset),
            "moveChat": _refuse(E.METHOD_NOT_FOUND, f"Method not found: {NO_MOVE}"),
        }
        for name in FILESYSTEM:
            routes[name] = (
                self._serve
                if name in served
                else _refuse(E.PERMISSION_DENIED, "This host does not expose a filesystem")
            )
        for name in AUTOMATION_METHODS:
            routes[name] = _refuse(E.METHOD_NOT_FOUND, f"Method not found: {NO_AUTOMATIONS}")
        gate.route(routes)
        gate.notifications["dispatchAction"] = lambda p, params: accept.dispatch(self, p, params)
        gate.notifications["unsubscribe"] = lambda p, params: handshake.unsubscribe(self, p, params)
        gate.dormant_named = self._dormant_named

    def _serve(self, peer: Peer, params: dict[str, Any]) -> Any:
        self.fanout.effects.append(Serve(peer, self.gate.request_id, self.gate.method, params))
        return DEFERRED

    def _serve_or(
        self, default: Any, fallback: Callable[[Peer, dict[str, Any]], Any] | None = None
    ) -> Callable[[Peer, dict[str, Any]], Any]:
        def handler(peer: Peer, params: dict[str, Any]) -> Any:
            if self.gate.method in self.config.served:
                return self._serve(peer, params)
            if fallback is not None:
                return fallback(peer, params)
            return default

        return handler

    @staticmethod
    def _not_protected(peer: Peer, params: dict[str, Any]) -> Any:
        raise RpcError(
            E.INVALID_PARAMS,
            f"Invalid params: resource: {params.get('resource')!r} is not protected by this host",
        )

    @staticmethod
    def _no_changeset(peer: Peer, params: dict[str, Any]) -> Any:
        raise RpcError(E.NOT_FOUND, f"No such changeset: {params['channel']}")

    def _create_session(self, peer: Peer, params: dict[str, Any]) -> Any:
        new = self.sessions.check_create(peer, params)
        self.fanout.effects.append(Serve(peer, self.gate.request_id, "createSession", params))
        self.pending_creations[(peer, self.gate.request_id)] = new
        return DEFERRED

    def session_prepared(
        self,
        peer: Peer,
        request_id: RequestId,
        *,
        workdir: str,
        config_state: dict[str, Any] | None,
        settings: Settings,
        error: RpcError | None = None,
    ) -> list[Effect]:
        """The shell checked, resolved and recorded a new session (or refused it)."""
        new = self.pending_creations.pop((peer, request_id))
        if error is not None:
            self.sessions.creation_refused(new)
            self.answered(peer, request_id, None, error)
            return self.take_effects()
        session = self.sessions.session_prepared(new, workdir, config_state, settings)
        self.answered(peer, request_id, None, None)
        self.sessions.open_default_chat(session, peer, new.params.get("progressToken"))
        return self.take_effects()

    def new_session(self, peer: Peer, request_id: RequestId) -> NewSession:
        """The `createSession` the shell is preparing (see `session_prepared`)."""
        return self.pending_creations[(peer, request_id)]

    def _dormant_named(self, method: str, params: Any) -> tuple[str, ...]:
        return accept.dormant_named(self.sessions.dormant, method, params)

    def not_offered(self, action_type: object) -> str | None:
        """Why an automation or canvas action is refused (they are not offered), else None."""
        if not isinstance(action_type, str):
            return None
        if action_type in AUTOMATION_TYPES:
            return NO_AUTOMATIONS
        if action_type in CANVAS_TYPES:
            return NO_CANVASES
        return None


def _refuse(code: int, message: str) -> Callable[[Peer, dict[str, Any]], Any]:
    def handler(peer: Peer, params: dict[str, Any]) -> Any:
        raise RpcError(code, message)

    return handler


__all__ += ["FILESYSTEM", "HostAction"]
