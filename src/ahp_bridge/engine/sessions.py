"""AHP sessions and chats, sans-IO: their records, lifecycle, the session list and its news.

Each session has chats; each chat is one provider conversation (opened for the default chat
once `createSession` has been recorded, for the others at `createChat`). This module owns the
lifecycle (creating, ready, creationFailed, disposed), the limits on how many there are, the
session list (`listSessions`, with the dormant sessions of an earlier run) and what every peer
hears of changes to it (`root/sessionAdded`, `root/sessionSummaryChanged`, ...). It waits for
nothing: opening a conversation is a job of the chat (`Chat.opening`), recording a session is
the shell's (`effects.Serve`), and what each finished job means is decided here.
"""

from __future__ import annotations

import base64
import difflib
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol

import orjson

from ahp_bridge.engine.budget import CHAT, HOST, RESERVE, Budget, Slot
from ahp_bridge.engine.chats import Chat, Step
from ahp_bridge.engine.effects import Log
from ahp_bridge.engine.fanout import Fanout, HostAction, Later, Reaction
from ahp_bridge.engine.gate import DEFERRED
from ahp_bridge.engine.jobs import Job, ReadTurns
from ahp_bridge.engine.peers import Peer
from ahp_bridge.engine.providers import ProviderInfo, agent_info
from ahp_bridge.engine.records import FAILED, READY, ChatRecord, SessionRecord
from ahp_bridge.engine.summaries import (
    SUMMARY_FIELDS,
    aggregate,
    chat_summary_changes,
    session_chats,
)
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol import notifications as N
from ahp_bridge.protocol.action_types import ActionType as A
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.jsonrpc import RequestId, notification_frame
from ahp_bridge.protocol.uris import ANNOTATIONS_SUFFIX, ROOT, session_uri_problem
from ahp_bridge.state import status as st
from ahp_bridge.state.envelope import Envelope
from ahp_bridge.state.limits import Limits, size_of
from ahp_bridge.state.turn_window import TurnsPage
from ahp_bridge.translate.commands import SetModel
from ahp_bridge.translate.session_config import Settings

__all__ = ["IMPORT_CONFIG_KEY", "Dormant", "NewSession", "ReopenedChat", "Session", "Sessions"]

#: `createSession` config key naming a provider conversation to open as the new session.
IMPORT_CONFIG_KEY = "ahpBridge.importConversation"

#: Session actions that change the active clients, and so the chats' client tools.
ACTIVE_CLIENT_ACTIONS = frozenset({A.SESSION_ACTIVE_CLIENT_SET, A.SESSION_ACTIVE_CLIENT_REMOVED})


@dataclass
class Session:
    uri: str
    provider: str
    created_at: str
    working_directories: list[str]
    workdir: str
    chats: dict[str, Chat] = field(default_factory=dict)
    announced: dict[str, Any] = field(default_factory=dict)
    disposed: bool = False
    #: A provider conversation to open instead of a new one (`ahpBridge.importConversation`).
    import_conversation: str = ""
    #: Model, effort, context size and agent chosen for it (`session/configChanged`).
    settings: Settings = field(default_factory=Settings)
    #: The client id that created it in this run (limits.max_sessions_per_client).
    created_by: str | None = None


@dataclass(frozen=True)
class NewSession:
    """A `createSession` that passed the engine's checks: what the shell records first (its
    working directories checked against `bridge.allowed_directories`, its settings resolved
    from the provider's schema, the catalog written), then hands back with `session_prepared`.
    """

    uri: str
    provider: str
    created_at: str
    working_directories: tuple[str, ...]
    workdir: str
    import_conversation: str
    client_id: str | None
    params: dict[str, Any]


class SessionHost(Protocol):
    """What the session book needs of the engine around it."""

    fanout: Fanout
    limits: Limits
    budget: Budget

    def now_iso(self) -> str: ...
    def new_id(self) -> str: ...
    def new_chat(self, session: Session, uri: str) -> Chat: ...
    def persist(self, op: str, *args: Any, **fields: Any) -> None: ...
    def run(self, job: Job, done: Callable[[Any, BaseException | None], None] | None) -> int: ...
    def answered(
        self, peer: Peer, request_id: RequestId, result: Any, error: RpcError | None
    ) -> None: ...
    def is_connected(self, client_id: str) -> bool: ...
    def grace_timer(self, client_id: str) -> None: ...


class Dormant:
    """Sessions of an earlier run, from the catalog: listed, not live, until a request names
    them or one of their chats (the shell restores them then)."""

    def __init__(self) -> None:
        self.records: dict[str, SessionRecord] = {}
        self._chat_owner: dict[str, str] = {}

    def load(self, records: Iterable[SessionRecord]) -> None:
        for record in records:
            self.records[record.uri] = record
            for chat in record.chats:
                self._chat_owner[chat.uri] = record.uri

    def known(self, uri: str) -> bool:
        """A session or chat URI the catalog holds that is not restored yet."""
        return uri in self.records or uri in self._chat_owner

    def owner(self, uri: str) -> str:
        """The dormant session a session or chat URI belongs to."""
        return self._chat_owner.get(uri, uri)

    def take(self, uri: str) -> SessionRecord | None:
        """Forget a dormant session (restored, or disposed without being restored)."""
        record = self.records.pop(uri, None)
        if record is not None:
            for chat in record.chats:
                self._chat_owner.pop(chat.uri, None)
        return record

    def __len__(self) -> int:
        return len(self.records)


class Sessions:
    """Every session and chat of the host (see the module docstring)."""

    def __init__(
        self,
        host: SessionHost,
        *,
        providers: Mapping[str, ProviderInfo],
        workdir: str,
        durable: bool,
    ) -> None:
        self.host = host
        self.fanout = host.fanout
        self.store = host.fanout.store
        self.providers = dict(providers)
        self.names = list(self.providers)
        self.workdir = workdir
        #: The host keeps a durable catalog (sessions are recorded before they are announced).
        self.durable = durable
        self.dormant = Dormant()
        self.sessions: dict[str, Session] = {}
        self.chats: dict[str, Chat] = {}
        #: Read-only chats of subagents, by URI, with the chat whose conversation feeds them.
        self.subagent_chats: dict[str, Chat] = {}
        #: Sessions being recorded (reserved: a second createSession of the URI is refused).
        self.creating: dict[str, NewSession] = {}
        #: Chats whose conversation is opening (reserved; counted against the session's limit).
        self.opening: dict[str, Chat] = {}
        #: fetchTurns requests waiting for a page read from the archive, by chat.
        self.fetching: dict[str, list[tuple[Peer, RequestId]]] = {}

    def observe(self) -> None:
        """Follow every envelope: chat entries and the session list stay in step."""
        self.fanout.observe(self._chat_entry_sync, None)
        self.fanout.observe(self._session_news, None)

    # -- agents --------------------------------------------------------------------------------

    def agents(self) -> list[dict[str, Any]]:
        return [agent_info(info) for info in self.providers.values()]

    def announce_agents(self) -> None:
        """`root/agentsChanged` with every agent as it is now (models, sign-in)."""
        self.fanout.apply(ROOT, {"type": A.ROOT_AGENTS_CHANGED, "agents": self.agents()})

    def capabilities(self) -> dict[str, Any]:
        """Each provider's agentapi capabilities (AgentInfo has no `_meta`: the initialize
        result's `_meta` carries them, for the versions that have one)."""
        return {name: info.capabilities.to_json() for name, info in self.providers.items()}

    # -- createSession -------------------------------------------------------------------------

    def check_create(self, peer: Peer, params: dict[str, Any]) -> NewSession:
        """Everything about a `createSession` that needs no I/O; RpcError refuses it."""
        uri = params["channel"]
        problem = session_uri_problem(uri)
        if problem is not None:
            raise RpcError(E.INVALID_PARAMS, f"Invalid params: channel: {problem} (got {uri!r})")
        if (
            uri in self.sessions
            or self.store.has(uri)
            or self.store.has(uri + ANNOTATIONS_SUFFIX)
            or uri in self.creating
            or self.dormant.known(uri)
        ):
            raise RpcError(E.SESSION_ALREADY_EXISTS, f"Session already exists: {uri}")
        self._check_session_limits(peer.client_id, params)
        provider = params.get("provider") or (self.names[0] if self.names else "")
        if provider not in self.providers:
            served = list(self.providers)
            close = difflib.get_close_matches(provider, served, n=1, cutoff=0.5)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise RpcError(
                E.PROVIDER_NOT_FOUND,
                f"Provider not found: {provider!r}{hint} (served: {', '.join(served) or 'none'})",
            )
        self.providers[provider].require_signed_in()
        if params.get("fork") is not None:
            raise RpcError(E.INVALID_PARAMS, "Invalid params: fork: forking is not supported")
        dirs = list(params.get("workingDirectories") or [])
        chosen = (params.get("config") or {}).get("workingDirectory")
        if not dirs and isinstance(chosen, str) and chosen:
            dirs = [chosen]  # the setting names the directory when the list does not
        active = params.get("activeClient")
        if active is not None and active.get("clientId") != peer.client_id:
            raise RpcError(
                E.INVALID_PARAMS,
                "Invalid params: activeClient.clientId: must be this connection's clientId",
            )
        imported = (params.get("config") or {}).get(IMPORT_CONFIG_KEY)
        if imported is not None and (not isinstance(imported, str) or not imported):
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: config.{IMPORT_CONFIG_KEY}: expected a conversation id",
            )
        new = NewSession(
            uri=uri,
            provider=provider,
            created_at=self.host.now_iso(),
            working_directories=tuple(dirs),
            workdir="",  # the shell resolves it (the first directory's path, or the default)
            import_conversation=imported or "",
            client_id=peer.client_id,
            params=params,
        )
        charges: dict[Slot, int] = {
            ("session",): size_of(params),
            RESERVE: self.host.budget.chat_bytes,
        }
        self._charge(peer.client_id, uri, charges, "this session (with its chat's turn history)")
        self.creating[uri] = new
        return new

    def _charge(
        self, client_id: str | None, channel: str, charges: dict[Slot, int], what: str
    ) -> None:
        """Charge a request's slots to its client, or refuse it (limits.max_client_bytes)."""
        budget, owner = self.host.budget, client_id or HOST
        problem = budget.problem(owner, channel, ("request",), sum(charges.values()), what)
        if problem is not None:
            raise RpcError(E.PERMISSION_DENIED, f"Permission denied: {problem}")
        for slot, size in charges.items():
            budget.charge(owner, channel, slot, size)

    def _check_session_limits(self, client_id: str | None, params: dict[str, Any]) -> None:
        """Refuse a `createSession` over a limit (counting those still being recorded)."""
        limits = self.host.limits
        check_sizes(params, limits)
        held = len(self.sessions) + len(self.dormant) + len(self.creating)
        if held >= limits.max_sessions:
            raise RpcError(
                E.PERMISSION_DENIED,
                f"Permission denied: this host already keeps {held} sessions, its limit "
                f"(limits.max_sessions): dispose of sessions you no longer need",
            )
        mine = sum(1 for s in self.sessions.values() if s.created_by == client_id) + sum(
            1 for n in self.creating.values() if n.client_id == client_id
        )
        if client_id is not None and mine >= limits.max_sessions_per_client:
            raise RpcError(
                E.PERMISSION_DENIED,
                f"Permission denied: client {client_id!r} already created {mine} sessions, the "
                "most one client may (limits.max_sessions_per_client): dispose of sessions you "
                "no longer need",
            )

    def session_prepared(
        self,
        new: NewSession,
        workdir: str,
        config_state: dict[str, Any] | None,
        settings: Settings,
    ) -> Session:
        """The shell resolved and recorded the new session: it exists now, and is announced."""
        self.creating.pop(new.uri, None)
        params = new.params
        dirs = list(new.working_directories)
        session = Session(
            new.uri,
            new.provider,
            new.created_at,
            dirs,
            workdir,
            settings=settings,
            created_by=new.client_id,
            import_conversation=new.import_conversation,
        )
        state: dict[str, Any] = {
            "provider": new.provider,
            "title": "",
            "status": st.IDLE,
            "lifecycle": "creating",
            "activeClients": [],
            "chats": [],
        }
        if dirs:
            state["workingDirectories"] = dirs
        if config_state is not None:
            state["config"] = config_state
        active = params.get("activeClient")
        if active is not None:
            state["activeClients"] = [active]
        self.add_session_channels(new.uri, state)
        self.sessions[new.uri] = session
        session.announced = self.summary(session)
        self.fanout.notify(ROOT, N.SESSION_ADDED, {"channel": ROOT, "summary": session.announced})
        self.active_sessions_changed()
        return session

    def creation_refused(self, new: NewSession) -> None:
        self.creating.pop(new.uri, None)
        self.host.budget.release_channel(new.uri)

    def open_default_chat(
        self, session: Session, peer: Peer | None, progress_token: str | None
    ) -> None:
        """Open the session's default chat on its own queue; the session becomes ready (or
        creationFailed) with it."""
        chat_uri = f"ahp-chat:/{self.host.new_id()}"
        chat = self.host.new_chat(session, chat_uri)
        self.opening[chat_uri] = chat

        def progress(step: int, message: str) -> None:
            if progress_token is not None and peer is not None and not peer.closed:
                params = {
                    "channel": ROOT,
                    "progressToken": progress_token,
                    "progress": step,
                    "total": 2,
                    "message": message,
                }
                self.fanout.send(peer, notification_frame(N.PROGRESS, params))

        def work() -> Generator[Step, Any, None]:
            progress(0, "opening the provider conversation")
            try:
                result = yield from chat.opening(session.import_conversation, record=self.durable)
            except Exception as exc:
                self.opening.pop(chat_uri, None)
                yield chat.closing(stop=True)
                if session.disposed:
                    return
                message = str(exc) or repr(exc)
                self.fanout.effects.append(
                    Log(
                        "warning",
                        "session creation failed",
                        {"session": session.uri, "error": str(exc)},
                    )
                )
                if self.durable:
                    self.host.persist("update_session", session.uri, status=FAILED, error=message)
                self.fanout.apply(
                    session.uri,
                    {
                        "type": A.SESSION_CREATION_FAILED,
                        "error": {"errorType": type(exc).__name__, "message": message},
                    },
                )
                progress(2, "failed")
                return
            self.opening.pop(chat_uri, None)
            if session.disposed:
                yield chat.closing(stop=True)
                return
            turns = result.turns
            self.publish_chat(session, chat, turns=turns)
            self.fanout.apply(
                session.uri, {"type": A.SESSION_DEFAULT_CHAT_CHANGED, "defaultChat": chat_uri}
            )
            self.fanout.apply(session.uri, {"type": A.SESSION_READY})
            progress(2, "ready")

        chat.enqueue(work)

    def publish_chat(
        self,
        session: Session,
        chat: Chat,
        *,
        turns: list[dict[str, Any]] | None = None,
        title: str = "",
        modified_at: str | None = None,
    ) -> None:
        now = modified_at or self.host.now_iso()
        state = {
            "resource": chat.uri,
            "title": title,
            "status": st.IDLE,
            "modifiedAt": now,
            "turns": list(turns or []),
        }
        self.store.create(chat.uri, "chat", state)
        budget = self.host.budget
        if budget.charged(chat.uri, CHAT) is None and not budget.move(
            session.uri, RESERVE, chat.uri, CHAT
        ):  # a restored chat: the host's, never refused
            budget.charge(session.created_by or HOST, chat.uri, CHAT, budget.chat_bytes)
        session.chats[chat.uri] = chat
        self.chats[chat.uri] = chat
        summary = {k: state[k] for k in ("resource", "title", "status", "modifiedAt")}
        self.fanout.apply(session.uri, {"type": A.SESSION_CHAT_ADDED, "summary": summary})

    def add_session_channels(self, uri: str, state: dict[str, Any]) -> None:
        """The session's channel and its annotations channel (`<session>/annotations`), bound
        to their kinds here, whatever scheme the client chose for the session."""
        self.store.create(uri, "session", state)
        self.store.create(uri + ANNOTATIONS_SUFFIX, "annotations", {"annotations": []})

    # -- disposing -----------------------------------------------------------------------------

    def dispose_session(self, peer: Peer, params: dict[str, Any]) -> None:
        uri = params["channel"]
        if self.durable and self.dormant.take(uri) is not None:
            self.host.persist("forget", uri)
            self.fanout.notify(ROOT, N.SESSION_REMOVED, {"channel": ROOT, "session": uri})
            return None
        session = self.sessions.pop(uri, None)
        if session is None:
            raise RpcError(E.SESSION_NOT_FOUND, f"Session not found: {uri}")
        session.disposed = True
        if self.durable:
            self.host.persist("forget", uri)
        for chat in list(session.chats.values()):
            self.forget_chat(chat)
        # A chat still opening is left to its opening work: once the open is done it sees the
        # session disposed and lets the conversation go (detached now, it would never close it).
        self.forget_channel(uri)
        self.forget_channel(uri + ANNOTATIONS_SUFFIX)
        self.fanout.notify(ROOT, N.SESSION_REMOVED, {"channel": ROOT, "session": uri})
        self.active_sessions_changed()
        return None

    def forget_chat(self, chat: Chat) -> None:
        """The chat is gone: its conversation is let go, its channels forgotten."""
        session = self.sessions.get(chat.session.uri)
        if session is not None:
            session.chats.pop(chat.uri, None)
        self.chats.pop(chat.uri, None)
        self.host.fanout.effects.append(chat.dispose())
        self.forget_channel(chat.uri)
        for uri in chat.subagent_uris():
            self.subagent_chats.pop(uri, None)
            self.forget_channel(uri)

    def forget_channel(self, uri: str) -> None:
        self.fanout.dispose(uri)
        self.host.budget.release_channel(uri)

    def active_sessions_changed(self) -> None:
        self.fanout.apply(
            ROOT, {"type": A.ROOT_ACTIVE_SESSIONS_CHANGED, "activeSessions": len(self.sessions)}
        )

    # -- chats ---------------------------------------------------------------------------------

    def create_chat(self, peer: Peer, params: dict[str, Any]) -> None:
        session = self.session(params["channel"])
        chat_uri = params["chat"]
        if not chat_uri.startswith("ahp-chat:/") or len(chat_uri) <= len("ahp-chat:/"):
            raise RpcError(
                E.INVALID_PARAMS, f"Invalid params: chat: expected ahp-chat:/<id>, got {chat_uri!r}"
            )
        if self.store.has(chat_uri) or chat_uri in self.chats or chat_uri in self.opening:
            raise RpcError(E.ALREADY_EXISTS, f"Chat already exists: {chat_uri}")
        self._check_chat_limits(session, params)
        if self.store.state(session.uri).get("lifecycle") != "ready":
            raise RpcError(E.INVALID_PARAMS, "Invalid params: channel: the session is not ready")
        if params.get("source") is not None:
            raise RpcError(
                E.INVALID_PARAMS, "Invalid params: source: forked and side chats are not supported"
            )
        size = self.host.budget.chat_bytes + size_of(params)
        self._charge(peer.client_id, chat_uri, {CHAT: size}, "this chat (with its turn history)")
        chat = self.host.new_chat(session, chat_uri)
        self.opening[chat_uri] = chat  # reserve the URI while the conversation opens
        initial = params.get("initialMessage")

        def work() -> Generator[Step, Any, None]:
            try:
                yield from chat.opening("", record=self.durable)
            except Exception as exc:
                self.opening.pop(chat_uri, None)
                self.host.budget.release_channel(chat_uri)
                yield chat.closing(stop=True)
                self.fanout.effects.append(
                    Log("warning", "chat creation failed", {"chat": chat_uri, "error": str(exc)})
                )
                return
            if self.opening.pop(chat_uri, None) is not chat or session.disposed:
                self.host.budget.release_channel(chat_uri)
                yield chat.closing(stop=True)
                return
            self.publish_chat(session, chat)
            if initial is not None:
                chat.start_turn_from_message(initial)

        chat.enqueue(work)

    def _check_chat_limits(self, session: Session, params: dict[str, Any]) -> None:
        limits = self.host.limits
        check_sizes(params, limits)
        opening = sum(1 for chat in self.opening.values() if chat.session.uri == session.uri)
        count = len(session.chats) + opening
        if count >= limits.max_chats_per_session:
            raise RpcError(
                E.PERMISSION_DENIED,
                f"Permission denied: this session already has {count} chats, the most the host "
                "keeps for one session (limits.max_chats_per_session): dispose of a chat first",
            )

    def dispose_chat(self, peer: Peer, params: dict[str, Any]) -> None:
        uri = params["channel"]
        chat = self.chats.get(uri)
        if chat is None:
            raise RpcError(E.NOT_FOUND, f"Chat not found: {uri}")
        session_uri = chat.session.uri
        if self.store.has(session_uri) and self.store.state(session_uri).get("defaultChat") == uri:
            raise RpcError(
                E.INVALID_PARAMS, "Invalid params: channel: the default chat cannot be disposed"
            )
        self.forget_chat(chat)
        if self.durable:
            self.host.persist("remove_chat", uri)
        if self.store.has(session_uri):
            self.fanout.apply(session_uri, {"type": A.SESSION_CHAT_REMOVED, "chat": uri})

    def session(self, uri: str) -> Session:
        session = self.sessions.get(uri)
        if session is None:
            raise RpcError(E.SESSION_NOT_FOUND, f"Session not found: {uri}")
        return session

    def default_chat(self, session: Session) -> Chat | None:
        if not self.store.has(session.uri):
            return None
        default = self.store.state(session.uri).get("defaultChat")
        return session.chats.get(default) if isinstance(default, str) else None

    # -- the session list ----------------------------------------------------------------------

    def summary(self, session: Session) -> dict[str, Any]:
        state = self.store.state(session.uri)
        summary: dict[str, Any] = {
            "resource": session.uri,
            "provider": session.provider,
            "title": state.get("title", ""),
            "status": state.get("status", st.IDLE),
            "createdAt": session.created_at,
            "modifiedAt": session.created_at,
        }
        if session.working_directories:
            summary["workingDirectories"] = session.working_directories
        agg = aggregate(state, state.get("chats") or [])
        summary["status"] = agg["status"]
        if agg.get("modifiedAt"):
            summary["modifiedAt"] = max(agg["modifiedAt"], session.created_at)
        if "activity" in agg:
            summary["activity"] = agg["activity"]
        summary["chats"] = session_chats(state.get("chats") or [])
        if isinstance(state.get("defaultChat"), str):
            summary["defaultChat"] = state["defaultChat"]
        return summary

    def dormant_summaries(self) -> list[dict[str, Any]]:
        """Session summaries of the dormant sessions (what listSessions shows for them)."""
        out = []
        for record in self.dormant.records.values():
            if record.uri in self.sessions:
                continue
            failed = record.status != READY
            newest = max([record.modified_at, *(c.modified_at for c in record.chats)])
            summary: dict[str, Any] = {
                "resource": record.uri,
                "provider": record.provider,
                "title": record.title,
                "status": st.ERROR if failed else st.IDLE,
                "createdAt": record.created_at,
                "modifiedAt": newest,
            }
            if record.working_directories:
                summary["workingDirectories"] = list(record.working_directories)
            summary["chats"] = [
                {"resource": c.uri, "title": c.title, "status": summary["status"]}
                for c in record.chats
            ]
            if record.default_chat:
                summary["defaultChat"] = record.default_chat
            out.append(summary)
        return out

    def list_sessions(self, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        ordered = sorted(
            [*(self.summary(s) for s in self.sessions.values()), *self.dormant_summaries()],
            key=lambda s: (s["modifiedAt"], s["resource"]),
            reverse=True,
        )
        cursor = params.get("cursor")
        if cursor is not None:
            after = _decode_cursor(cursor)
            ordered = [s for s in ordered if (s["modifiedAt"], s["resource"]) < after]
        page_size = page_size_of(params.get("limit"))
        page = ordered[:page_size]
        result: dict[str, Any] = {"items": [peer.wire.summary(item) for item in page]}
        if len(ordered) > page_size:
            last = page[-1]
            result["nextCursor"] = _encode_cursor(last["modifiedAt"], last["resource"])
        return result

    # -- observers -----------------------------------------------------------------------------

    def _chat_entry_sync(self, envelope: Envelope) -> Iterable[Reaction]:
        """A chat changed: its entry in the session follows (`session/chatUpdated`)."""
        channel = envelope.channel
        chat = self.chats.get(channel) or self.subagent_chats.get(channel)
        if chat is None:
            return ()
        session_uri = chat.session.uri
        if not self.store.has(session_uri) or not self.store.has(channel):
            return ()
        for entry in self.store.state(session_uri).get("chats") or ():
            if entry.get("resource") == channel:
                break
        else:
            return ()
        changes = chat_summary_changes(
            entry, self.store.state(channel), active_at=self.fanout.active_at(channel)
        )
        # No 0.7.0 action changes ChatState.title, so the entry's title is the translator's
        # (session/chatUpdated{title}); mirroring the chat's would flip it back.
        changes.pop("title", None)
        if not changes:
            return ()
        update = {"type": A.SESSION_CHAT_UPDATED, "chat": channel, "changes": changes}
        return (HostAction(session_uri, update),)

    def _session_news(self, envelope: Envelope) -> Iterable[Reaction]:
        """A session changed: its chats' client tools, and the session list's summary of it."""
        session = self.sessions.get(envelope.channel)
        if session is None:
            return ()
        reactions: list[Reaction] = []
        if envelope.action.get("type") in ACTIVE_CLIENT_ACTIONS:
            active = self.store.state(session.uri).get("activeClients") or []
            ids = {str(c.get("clientId")) for c in active if isinstance(c, dict)}
            for chat in list(session.chats.values()):
                reactions.append(Later(partial(chat.clients_changed, ids)))
        current = self.summary(session)
        changes = {
            k: current[k]
            for k in SUMMARY_FIELDS
            if k in current and current.get(k) != session.announced.get(k)
        }
        if changes:
            session.announced = current
            params = {"channel": ROOT, "session": session.uri, "changes": changes}
            reactions.append(
                Later(lambda: self.fanout.notify(ROOT, N.SESSION_SUMMARY_CHANGED, params))
            )
        return reactions

    # -- sessions of an earlier run ------------------------------------------------------------

    def restore_problem(self, record: SessionRecord) -> dict[str, Any] | None:
        """Why a dormant session cannot be restored at all (its creationError), or None."""
        if record.provider not in self.providers:
            return {
                "errorType": "providerNotFound",
                "message": f"provider {record.provider!r} is not served by this bridge",
            }
        if record.status == FAILED:
            return {"errorType": "creationFailed", "message": record.error or "creation failed"}
        if not record.chats or not record.default_chat:
            return {
                "errorType": "interrupted",
                "message": "the bridge stopped before this session's conversation was opened",
            }
        return None

    def restoring(self, record: SessionRecord) -> Session:
        """The live session a dormant one becomes (not in the store until `restored`)."""
        session = Session(
            record.uri,
            record.provider,
            record.created_at,
            list(record.working_directories),
            record.workdir,
        )
        session.import_conversation = record.import_conversation
        return session

    def restored(
        self,
        record: SessionRecord,
        session: Session,
        *,
        config: dict[str, Any] | None,
        dropped: dict[str, Any],
        chats: list[ReopenedChat],
        error: dict[str, Any] | None,
    ) -> None:
        """Put a restored session and its reopened chats in the store (in creationFailed with
        `error` when it could not be restored), and stop listing it as dormant."""
        state: dict[str, Any] = {
            "provider": record.provider,
            "title": record.title,
            "status": st.ERROR if error is not None else st.IDLE,
            "lifecycle": "ready" if error is None else "failed",
            "activeClients": [],
            "chats": [],
        }
        if error is not None:
            state["creationError"] = error
        if config is not None:
            state["config"] = config
        if record.working_directories:
            state["workingDirectories"] = list(record.working_directories)
        self.add_session_channels(record.uri, state)
        self.sessions[record.uri] = session
        session.announced = next(
            (s for s in self.dormant_summaries() if s["resource"] == record.uri),
            self.summary(session),
        )
        for reopened in chats:
            chat, chat_record = reopened.chat, reopened.record
            self.publish_chat(
                session,
                chat,
                turns=reopened.turns,
                title=chat_record.title,
                modified_at=chat_record.modified_at,
            )
            if chat_record.uri == record.default_chat:
                self.fanout.apply(
                    record.uri, {"type": A.SESSION_DEFAULT_CHAT_CHANGED, "defaultChat": chat.uri}
                )
                if not reopened.replaced:  # a new conversation was opened with the settings
                    self._fall_back(chat, session, dropped)
            if chat_record.active_turn:
                self.host.persist("update_chat", chat.uri, active_turn="")
            if reopened.replaced:
                chat.announce_replaced(chat_record.conversation_id)
        self.active_sessions_changed()
        self.dormant.take(record.uri)
        self.fanout.effects.append(
            Log(
                "info",
                "session restored",
                {"session": record.uri, "chats": len(chats), "failed": bool(error)},
            )
        )

    def _fall_back(self, chat: Chat, session: Session, dropped: dict[str, Any]) -> None:
        """A reopened conversation keeps its own model (OpenRequest.model does not switch it):
        when the recorded one is no longer offered, switch it to the default the state shows."""
        chosen = session.settings
        if not chosen.model or not dropped.keys() & {"model", "effort", "contextSize"}:
            return

        def failed(exc: BaseException) -> None:
            self.fanout.effects.append(
                Log(
                    "warning",
                    "default model not applied",
                    {"chat": chat.uri, "error": type(exc).__name__},
                )
            )

        calls: list[Any] = [SetModel(chosen.model, chosen.effort, chosen.context_size)]
        if not chat.enqueue_calls(calls, failed):
            self.fanout.effects.append(
                Log(
                    "warning",
                    "default model not applied",
                    {"chat": chat.uri, "error": "queue full"},
                )
            )

    def restore_broke(self, record: SessionRecord, exc: BaseException) -> None:
        """A restore that broke unexpectedly: the session stays listed, with the error."""
        self.dormant.take(record.uri)
        if record.uri in self.sessions or self.store.has(record.uri):
            return
        state: dict[str, Any] = {
            "provider": record.provider,
            "title": record.title,
            "status": st.ERROR,
            "lifecycle": "failed",
            "creationError": {
                "errorType": type(exc).__name__,
                "message": f"the session could not be restored: {exc or type(exc).__name__}",
            },
            "activeClients": [],
            "chats": [],
        }
        self.add_session_channels(record.uri, state)
        session = self.restoring(record)
        session.import_conversation = ""
        self.sessions[record.uri] = session
        session.announced = self.summary(session)
        self.active_sessions_changed()

    # -- turns in history ----------------------------------------------------------------------

    def fetch_turns(self, peer: Peer, params: dict[str, Any], request_id: RequestId) -> Any:
        """Load the page of turns older than the chat's window (`chat/turnsLoaded`, to every
        subscriber) and then answer; a page with evicted turns is read from the archive first
        (the answer waits: DEFERRED), and a fetch while one is read waits for that page."""
        uri = params["channel"]
        if uri not in self.chats or not self.store.has(uri):
            raise RpcError(E.NOT_FOUND, f"Chat not found: {uri}")
        try:
            page = self.store.older_page(uri, params.get("cursor"))
        except ValueError as exc:
            raise RpcError(E.INVALID_PARAMS, f"Invalid params: cursor: {exc}") from None
        waiting = self.fetching.get(uri)
        if waiting is not None:
            waiting.append((peer, request_id))
            return DEFERRED
        if not page.archived:
            action = self.store.page_action(page, [])
            if action is not None:
                self.fanout.apply(uri, action)
            return {}
        self._read_page(page, [(peer, request_id)])
        return DEFERRED

    def _read_page(self, page: TurnsPage, waiting: list[tuple[Peer, RequestId]]) -> None:
        self.fetching[page.chat] = waiting
        job = ReadTurns(page.chat, page.start, page.split)
        self.host.run(job, partial(self._page_read, page))

    def _page_read(self, page: TurnsPage, turns: Any, error: BaseException | None) -> None:
        """The archive answered: apply the page (or cut it again if the window moved) and
        answer every fetch that waited for it."""
        uri = page.chat
        waiting = self.fetching.pop(uri, [])
        failure: RpcError | None = None
        if uri not in self.chats or not self.store.has(uri):
            failure = RpcError(E.NOT_FOUND, f"Chat not found: {uri}")
        elif error is not None:
            failure = RpcError(
                E.INTERNAL_ERROR, f"Internal error: the older turns could not be read: {error}"
            )
        else:
            try:
                action = self.store.page_action(page, list(turns or ()))
            except ValueError as exc:
                failure = RpcError(E.INTERNAL_ERROR, f"Internal error: {exc}")
            else:
                if action is None:  # the window moved while the page was read: the next one
                    again = self.store.older_page(uri, None)
                    if again.archived:
                        self._read_page(again, waiting)
                        return
                    action = self.store.page_action(again, [])
                if action is not None:
                    self.fanout.apply(uri, action)
        for peer, request_id in waiting:
            self.host.answered(peer, request_id, None if failure else {}, failure)

    # -- clients that leave --------------------------------------------------------------------

    def client_expired(self, client_id: str) -> None:
        """A client's grace period to reconnect ended: unless it is back, it stops being an
        active client of every session (`session/activeClientRemoved`, as the spec says a host
        SHOULD)."""
        if self.host.is_connected(client_id):
            return
        for session in list(self.sessions.values()):
            if not self.store.has(session.uri):
                continue
            active = self.store.state(session.uri).get("activeClients") or []
            if any(c.get("clientId") == client_id for c in active):
                self.fanout.apply(
                    session.uri, {"type": A.SESSION_ACTIVE_CLIENT_REMOVED, "clientId": client_id}
                )


@dataclass
class ReopenedChat:
    """A chat of a session being restored, its conversation open again (or replaced)."""

    chat: Chat
    record: ChatRecord
    turns: list[dict[str, Any]]
    #: The provider no longer had the conversation: a new one was opened (and recorded).
    replaced: bool = False


def page_size_of(limit: Any) -> int:
    """listSessions' page: `limit` items (at most 500), at least one; 100 when not given."""
    if isinstance(limit, int | float) and not isinstance(limit, bool) and limit > 0:
        return max(1, min(int(limit), 500))
    return 100


def check_sizes(params: dict[str, Any], limits: Limits) -> None:
    """The texts a creation request makes the host keep: the same bound as a client action."""
    for key in ("initialMessage", "activeClient", "config", "workingDirectories"):
        value = params.get(key)
        if value is None:
            continue
        size = size_of(value)
        if size > limits.max_action_bytes:
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: {key}: {size:,} bytes; the host keeps at most "
                f"{limits.max_action_bytes:,} (limits.max_action_bytes): send less",
            )
    dirs = params.get("workingDirectories")
    if isinstance(dirs, list) and len(dirs) > limits.max_working_directories:
        raise RpcError(
            E.INVALID_PARAMS,
            f"Invalid params: workingDirectories: {len(dirs)} directories; a session has at most "
            f"{limits.max_working_directories} (limits.max_working_directories)",
        )


def _encode_cursor(modified_at: str, resource: str) -> str:
    raw = orjson.dumps([modified_at, resource])
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[str, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = orjson.loads(base64.urlsafe_b64decode(padded.encode()))
        if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
            return value[0], value[1]
    except (ValueError, orjson.JSONDecodeError):
        pass
    raise RpcError(E.INVALID_PARAMS, "Invalid params: cursor: not a cursor this host issued")


__all__ += ["ChatRecord", "check_sizes", "page_size_of"]
