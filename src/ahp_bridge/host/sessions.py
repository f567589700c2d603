"""The session manager: AHP sessions and chats backed by provider conversations.

Each session has chats; each chat is one provider Conversation (opened at `createSession` for
the default chat, at `createChat` for the others). The manager owns the lifecycle (creating,
ready, creationFailed, disposed), the session list and its notifications, and each chat's
`ChatRuntime`, which turns provider events into actions and client actions into calls.
Everything here runs on the trio thread; provider calls run in the manager's nursery so no
client request ever waits on a provider.
"""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
import structlog
import trio

from ahp_bridge import agentapi, providers
from ahp_bridge.host import auth
from ahp_bridge.host.catalog import AsyncCatalog
from ahp_bridge.host.chat import ChatRuntime, HostClock
from ahp_bridge.host.client_tools import ClientToolLimits
from ahp_bridge.host.durable_sessions import IMPORT_CONFIG_KEY, SessionCatalog
from ahp_bridge.host.hub import Hub
from ahp_bridge.host.limits import Limits, check_new_chat, check_new_session
from ahp_bridge.host.summaries import aggregate, chat_summary_changes, session_chats
from ahp_bridge.host.timeouts import Timeouts, gave_up
from ahp_bridge.host.workspace_paths import directory_path, within_any
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.jsonrpc import notification_frame
from ahp_bridge.protocol.uris import ANNOTATIONS_SUFFIX, ROOT, session_uri_problem
from ahp_bridge.state import status as st
from ahp_bridge.state.store import Envelope
from ahp_bridge.translate.models import model_info
from ahp_bridge.translate.session_config import Settings

if TYPE_CHECKING:
    from ahp_bridge.host.changesets import Changesets
    from ahp_bridge.host.connection import Connection
    from ahp_bridge.host.customizations import Customizations
    from ahp_bridge.host.session_config import SessionConfig

log = structlog.get_logger(__name__)

#: Summary fields announced through root/sessionSummaryChanged (never resource/provider/createdAt).
_SUMMARY_FIELDS = (
    "title",
    "status",
    "activity",
    "modifiedAt",
    "workingDirectories",
    "chats",
    "defaultChat",
)
#: Session actions that change the active clients, and so the chats' client tools.
_ACTIVE_CLIENT_ACTIONS = frozenset(
    {ActionType.SESSION_ACTIVE_CLIENT_SET, ActionType.SESSION_ACTIVE_CLIENT_REMOVED}
)
#: Session actions the default chat's runtime plans (a provider call, or a reasoned refusal).
_PLANNED_SESSION_ACTIONS = frozenset(
    {
        ActionType.SESSION_TITLE_CHANGED,
        ActionType.SESSION_WORKING_DIRECTORY_SET,
        ActionType.SESSION_WORKING_DIRECTORY_REMOVED,
        ActionType.SESSION_WORKING_DIRECTORY_REPLACED,
        ActionType.SESSION_CUSTOMIZATION_TOGGLED,
        ActionType.SESSION_MCP_SERVER_START_REQUESTED,
        ActionType.SESSION_MCP_SERVER_STOP_REQUESTED,
        ActionType.SESSION_MCP_SERVER_BACKGROUND_REQUESTED,
        ActionType.SESSION_CONFIG_CHANGED,
    }
)


@dataclass
class ProviderEntry:
    name: str
    provider: agentapi.Provider
    models: list[agentapi.Model] = field(default_factory=list)
    #: Read once at start: the planner consults it on every client action (hot path).
    capabilities: agentapi.Capabilities = field(default_factory=agentapi.Capabilities)
    #: Why the runtime needs a sign-in (its SignedOut message); "" when it needs none.
    signed_out: str = ""


@dataclass
class Session:
    uri: str
    provider: str
    created_at: str
    working_directories: list[str]
    workdir: str
    chats: dict[str, ChatRuntime] = field(default_factory=dict)
    announced: dict[str, Any] = field(default_factory=dict)
    disposed: bool = False
    #: A provider conversation to open instead of a new one (`ahpBridge.importConversation`).
    import_conversation: str = ""
    #: Model, effort, context size and agent chosen for it (host/session_config.py).
    settings: Settings = field(default_factory=Settings)
    #: The client id that created it in this run (limits.max_sessions_per_client).
    created_by: str | None = None


class SessionManager:
    def __init__(
        self,
        hub: Hub,
        *,
        provider_names: list[str],
        provider_options: Mapping[str, Mapping[str, Any]] | None = None,
        workdir: Path | None = None,
        clock: HostClock | None = None,
        provider_instances: Mapping[str, agentapi.Provider] | None = None,
        active_client_grace: float = 30.0,
        catalog: AsyncCatalog | None = None,
        client_tools: ClientToolLimits | None = None,
        limits: Limits | None = None,
        timeouts: Timeouts | None = None,
        allowed_directories: Sequence[Path] = (),
    ) -> None:
        self.hub = hub
        #: Bounds of client tool calls (`[client_tools]`), for every chat.
        self.client_tool_limits = client_tools or ClientToolLimits()
        self.limits = limits or Limits()
        #: How long to wait for each kind of provider call (`[timeouts]`).
        self.timeouts = timeouts or Timeouts()
        #: The durable session catalog, when the bridge keeps one (see host/catalog.py).
        self.durable = SessionCatalog(catalog, self) if catalog is not None else None
        #: Sessions being created: their URIs are taken and they count (limits.max_sessions).
        self._creating: set[str] = set()
        self.active_client_grace = active_client_grace
        self.clock = clock or HostClock()
        self._names = list(dict.fromkeys(provider_names))
        self._options = {k: dict(v) for k, v in (provider_options or {}).items()}
        self._instances = dict(provider_instances or {})
        self.workdir = str((workdir or Path.cwd()).resolve())
        #: Where clients' working directories must lie (`bridge.allowed_directories`); empty: any.
        self.allowed_directories = [os.path.realpath(p) for p in allowed_directories]
        self.providers: dict[str, ProviderEntry] = {}
        self.sessions: dict[str, Session] = {}
        self.chats: dict[str, ChatRuntime] = {}
        #: Read-only chats of subagents, by URI, with the chat whose conversation feeds them.
        self.subagent_chats: dict[str, ChatRuntime] = {}
        self._nursery: trio.Nursery | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        #: File changes and changesets (host/changesets.py), when the host serves them.
        self.changes: Changesets | None = None
        #: Session settings (host/session_config.py), when the host serves them.
        self.config: SessionConfig | None = None
        #: Typed session customizations (host/customizations.py), when the host serves them.
        self.customizations: Customizations | None = None
        #: Notices a runtime that loses its sign-in while the bridge runs (host/auth.py).
        self.sign_in_watch = auth.SignInWatch(self)
        hub.observers.append(self._observe)

    # -- lifetime ------------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[SessionManager]:
        """Start every configured provider, publish them as agents, and run until exit."""
        async with AsyncExitStack() as stack:
            for name in self._names:
                provider = self._instances.get(name) or providers.create(
                    name, self._options.get(name, {})
                )
                await stack.enter_async_context(provider)
                self.providers[name] = ProviderEntry(name, provider, [], provider.capabilities())
            self._nursery = await stack.enter_async_context(trio.open_nursery())
            self._token = trio.lowlevel.current_trio_token()
            for entry in self.providers.values():
                entry.models = await self._models(entry)
            self.hub.store.create(ROOT, "root", {"agents": self._agents(), "activeSessions": 0})
            if self.durable is not None:
                await self.durable.load()
            try:
                yield self
            finally:
                for session in list(self.sessions.values()):
                    for chat in session.chats.values():
                        chat.detach()
                self._nursery.cancel_scope.cancel()

    def _check_allowed(self, path: str) -> None:
        """Refuse a client's working directory outside `bridge.allowed_directories`."""
        if not self.allowed_directories:
            return
        if within_any(os.path.realpath(path), self.allowed_directories) is not None:
            return
        raise RpcError(
            E.INVALID_PARAMS,
            f"Invalid params: workingDirectories: {path} is outside the directories this host "
            f"lets sessions work in (bridge.allowed_directories): choose one inside "
            f"{', '.join(self.allowed_directories)}",
        )

    async def _models(self, entry: ProviderEntry) -> list[agentapi.Model]:
        entry.signed_out = ""
        try:
            with trio.fail_after(self.timeouts.models):
                return list(await entry.provider.models())
        except agentapi.SignedOut as exc:
            entry.signed_out = str(exc)
            log.warning("provider is signed out", provider=entry.name, fix=str(exc))
        except agentapi.Unsupported as exc:
            log.info("provider lists no models", provider=entry.name, reason=type(exc).__name__)
        except Exception as exc:
            slow = isinstance(exc, trio.TooSlowError)
            error = gave_up(exc, self.timeouts, "models") if slow else str(exc)
            log.warning("provider models failed", provider=entry.name, error=error)
        return []

    def _agents(self) -> list[dict[str, Any]]:
        agents = []
        for entry in self.providers.values():
            provider = entry.provider
            agents.append(
                {
                    "provider": entry.name,
                    "displayName": provider.display_name(),
                    "description": f"{provider.display_name()} through ahp-bridge",
                    "models": [model_info(entry.name, m) for m in entry.models],
                    # Each chat is its own provider conversation, so any provider can have
                    # several; forks and side chats need provider support the contract lacks.
                    "capabilities": {"multipleChats": {}},
                    **auth.agent_fields(entry),
                }
            )
        return agents

    def capabilities(self) -> dict[str, Any]:
        """Each provider's agentapi capabilities (AgentInfo has no `_meta`: the initialize
        result's `_meta` carries them, for the versions that have one)."""
        return {name: entry.capabilities.to_json() for name, entry in self.providers.items()}

    async def refresh_agent(self, entry: ProviderEntry) -> None:
        """Re-read a provider's models and sign-in state (after a sign-in) and announce them."""
        entry.models = await self._models(entry)
        self.announce_agents()

    def announce_agents(self) -> None:
        """`root/agentsChanged` with every agent as it is now (models, sign-in)."""
        self.hub.apply(ROOT, {"type": ActionType.ROOT_AGENTS_CHANGED, "agents": self._agents()})

    @property
    def nursery(self) -> trio.Nursery:
        assert self._nursery is not None, "SessionManager is not running"
        return self._nursery

    @property
    def token(self) -> trio.lowlevel.TrioToken:
        assert self._token is not None, "SessionManager is not running"
        return self._token

    # -- sessions ------------------------------------------------------------------------------

    async def create_session(self, conn: Connection, params: dict[str, Any]) -> None:
        uri = params["channel"]
        problem = session_uri_problem(uri)
        if problem is not None:
            raise RpcError(E.INVALID_PARAMS, f"Invalid params: channel: {problem} (got {uri!r})")
        if (
            uri in self.sessions
            or self.hub.store.has(uri)
            or self.hub.store.has(uri + ANNOTATIONS_SUFFIX)
            or uri in self._creating
            or (self.durable is not None and self.durable.known(uri))
        ):
            raise RpcError(E.SESSION_ALREADY_EXISTS, f"Session already exists: {uri}")
        check_new_session(self, conn.client_id, params)
        # Counted from here (limits.max_sessions) until it is kept or refused: the settings
        # and the durable record are awaited, and other creations arrive meanwhile.
        self._creating.add(uri)
        try:
            await self._create_counted(conn, params, uri)
        finally:
            self._creating.discard(uri)

    async def _create_counted(self, conn: Connection, params: dict[str, Any], uri: str) -> None:
        provider = params.get("provider") or (self._names[0] if self._names else "")
        if provider not in self.providers:
            raise RpcError(E.PROVIDER_NOT_FOUND, f"Provider not found: {provider!r}")
        auth.require_signed_in(self.providers[provider])
        if params.get("fork") is not None:
            raise RpcError(E.INVALID_PARAMS, "Invalid params: fork: forking is not supported")
        dirs = list(params.get("workingDirectories") or [])
        chosen = (params.get("config") or {}).get("workingDirectory")
        if not dirs and isinstance(chosen, str) and chosen:
            dirs = [chosen]  # the setting names the directory when the list does not
        for directory in dirs:
            self._check_allowed(directory_path(directory))
        workdir = directory_path(dirs[0]) if dirs else self.workdir
        settings_state: dict[str, Any] | None = None
        settings = Settings()
        if self.config is not None:  # a value that does not fit is refused before anything
            settings_state, settings = await self.config.for_create(params, workdir)
        now = self.clock.now_iso()
        session = Session(
            uri, provider, now, dirs, workdir, settings=settings, created_by=conn.client_id
        )
        state: dict[str, Any] = {
            "provider": provider,
            "title": "",
            "status": st.IDLE,
            "lifecycle": "creating",
            "activeClients": [],
            "chats": [],
        }
        if dirs:
            state["workingDirectories"] = dirs
        if settings_state is not None:
            state["config"] = settings_state
        active = params.get("activeClient")
        if active is not None:
            if active.get("clientId") != conn.client_id:
                raise RpcError(
                    E.INVALID_PARAMS,
                    "Invalid params: activeClient.clientId: must be this connection's clientId",
                )
            state["activeClients"] = [active]
        imported = (params.get("config") or {}).get(IMPORT_CONFIG_KEY)
        if imported is not None and (not isinstance(imported, str) or not imported):
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: config.{IMPORT_CONFIG_KEY}: expected a conversation id",
            )
        session.import_conversation = imported or ""
        if self.durable is not None:  # recorded before anyone hears of it
            try:
                await self.durable.session_created(session, (settings_state or {}).get("values"))
            except Exception as exc:
                log.error("session not recorded", session=uri, error=str(exc))
                raise RpcError(
                    E.INTERNAL_ERROR, f"Internal error: the session could not be recorded: {exc}"
                ) from None
        self.add_session_channels(uri, state)
        self.sessions[uri] = session
        session.announced = self.summary(session)
        self.hub.notify(ROOT, "root/sessionAdded", {"channel": ROOT, "summary": session.announced})
        self._active_sessions_changed()
        self.nursery.start_soon(self._open_default_chat, session, conn, params.get("progressToken"))

    async def _open_default_chat(
        self, session: Session, conn: Connection, progress_token: str | None
    ) -> None:
        def progress(step: int, message: str) -> None:
            if progress_token is not None and not conn.closed:
                params = {
                    "channel": ROOT,
                    "progressToken": progress_token,
                    "progress": step,
                    "total": 2,
                    "message": message,
                }
                conn.send(notification_frame("root/progress", params))

        progress(0, "opening the provider conversation")
        chat_uri = f"ahp-chat:/{uuid.uuid4()}"
        chat = self._new_chat(session, chat_uri, title="")
        try:
            await chat.open(conversation_id=session.import_conversation)
            turns = await self._record_chat(session, chat, default=True)
        except Exception as exc:
            await chat.close()
            if session.disposed:
                return
            log.warning("session creation failed", session=session.uri, error=str(exc))
            if self.durable is not None:
                self.durable.creation_failed(session.uri, str(exc) or repr(exc))
            self.hub.apply(
                session.uri,
                {
                    "type": ActionType.SESSION_CREATION_FAILED,
                    "error": {"errorType": type(exc).__name__, "message": str(exc) or repr(exc)},
                },
            )
            progress(2, "failed")
            return
        if session.disposed:
            await chat.close()
            return
        self._publish_chat(session, chat, turns=turns)
        self.hub.apply(
            session.uri, {"type": ActionType.SESSION_DEFAULT_CHAT_CHANGED, "defaultChat": chat_uri}
        )
        self.hub.apply(session.uri, {"type": ActionType.SESSION_READY})
        progress(2, "ready")

    def _new_chat(self, session: Session, chat_uri: str, *, title: str) -> ChatRuntime:
        entry = self.providers[session.provider]
        chat = ChatRuntime(self, session, chat_uri, entry)
        return chat

    async def _record_chat(
        self, session: Session, chat: ChatRuntime, *, default: bool
    ) -> list[dict[str, Any]] | None:
        """Record the chat's conversation in the catalog (turns of an imported one)."""
        if self.durable is None:
            return None
        return await self.durable.chat_opened(session, chat, default=default)

    def _publish_chat(
        self,
        session: Session,
        chat: ChatRuntime,
        *,
        turns: list[dict[str, Any]] | None = None,
        title: str = "",
        modified_at: str | None = None,
    ) -> None:
        now = modified_at or self.clock.now_iso()
        state = {
            "resource": chat.uri,
            "title": title,
            "status": st.IDLE,
            "modifiedAt": now,
            "turns": list(turns or []),
        }
        self.hub.store.create(chat.uri, "chat", state)
        session.chats[chat.uri] = chat
        self.chats[chat.uri] = chat
        summary = {k: state[k] for k in ("resource", "title", "status", "modifiedAt")}
        self.hub.apply(session.uri, {"type": ActionType.SESSION_CHAT_ADDED, "summary": summary})
        chat.start()

    def dispose_session(self, conn: Connection, params: dict[str, Any]) -> None:
        uri = params["channel"]
        if self.durable is not None and self.durable.forget_dormant(uri):
            self.hub.notify(ROOT, "root/sessionRemoved", {"channel": ROOT, "session": uri})
            return None
        session = self.sessions.pop(uri, None)
        if session is None:
            raise RpcError(E.SESSION_NOT_FOUND, f"Session not found: {uri}")
        session.disposed = True
        if self.durable is not None:
            self.durable.session_disposed(uri)
        for chat in list(session.chats.values()):
            self._forget_chat(chat)
        self._forget_channel(uri)
        self._forget_channel(uri + ANNOTATIONS_SUFFIX)
        self.hub.notify(ROOT, "root/sessionRemoved", {"channel": ROOT, "session": uri})
        self._active_sessions_changed()

    def _forget_chat(self, chat: ChatRuntime) -> None:
        chat.session.chats.pop(chat.uri, None)
        self.chats.pop(chat.uri, None)
        self.nursery.start_soon(chat.close)
        self._forget_channel(chat.uri)
        for uri in chat.subagent_uris():
            self.subagent_chats.pop(uri, None)
            self._forget_channel(uri)

    def add_session_channels(self, uri: str, state: dict[str, Any]) -> None:
        """The session's channel and its annotations channel (`<session>/annotations`), bound
        to their kinds here, whatever scheme the client chose for the session."""
        self.hub.store.create(uri, "session", state)
        self.hub.store.create(uri + ANNOTATIONS_SUFFIX, "annotations", {"annotations": []})

    def _forget_channel(self, uri: str) -> None:
        if self.hub.store.has(uri):
            self.hub.store.dispose(uri)
        self.hub.forget_channel(uri)

    def _active_sessions_changed(self) -> None:
        self.hub.apply(
            ROOT,
            {"type": ActionType.ROOT_ACTIVE_SESSIONS_CHANGED, "activeSessions": len(self.sessions)},
        )

    # -- chats ---------------------------------------------------------------------------------

    def create_chat(self, conn: Connection, params: dict[str, Any]) -> None:
        session = self._session(params["channel"])
        chat_uri = params["chat"]
        if not chat_uri.startswith("ahp-chat:/") or len(chat_uri) <= len("ahp-chat:/"):
            raise RpcError(
                E.INVALID_PARAMS, f"Invalid params: chat: expected ahp-chat:/<id>, got {chat_uri!r}"
            )
        if self.hub.store.has(chat_uri) or chat_uri in self.chats:
            raise RpcError(E.ALREADY_EXISTS, f"Chat already exists: {chat_uri}")
        check_new_chat(self, session, params)
        if self.hub.store.state(session.uri).get("lifecycle") != "ready":
            raise RpcError(E.INVALID_PARAMS, "Invalid params: channel: the session is not ready")
        if params.get("source") is not None:
            raise RpcError(
                E.INVALID_PARAMS, "Invalid params: source: forked and side chats are not supported"
            )
        chat = self._new_chat(session, chat_uri, title="")
        self.chats[chat_uri] = chat  # reserve the URI while the conversation opens
        self.nursery.start_soon(self._open_chat, session, chat, params.get("initialMessage"))

    async def _open_chat(
        self, session: Session, chat: ChatRuntime, initial: dict[str, Any] | None
    ) -> None:
        try:
            await chat.open(conversation_id="")
            await self._record_chat(session, chat, default=False)
        except Exception as exc:
            await chat.close()
            self.chats.pop(chat.uri, None)
            log.warning("chat creation failed", chat=chat.uri, error=str(exc))
            return
        if session.disposed or self.chats.get(chat.uri) is not chat:
            await chat.close()
            return
        self._publish_chat(session, chat)
        if initial is not None:
            chat.start_turn_from_message(initial)

    def dispose_chat(self, conn: Connection, params: dict[str, Any]) -> None:
        uri = params["channel"]
        chat = self.chats.get(uri)
        if chat is None:
            raise RpcError(E.NOT_FOUND, f"Chat not found: {uri}")
        session = chat.session
        if (
            self.hub.store.has(session.uri)
            and self.hub.store.state(session.uri).get("defaultChat") == uri
        ):
            raise RpcError(
                E.INVALID_PARAMS, "Invalid params: channel: the default chat cannot be disposed"
            )
        self._forget_chat(chat)
        if self.durable is not None:
            self.durable.chat_disposed(uri)
        if self.hub.store.has(session.uri):
            self.hub.apply(session.uri, {"type": ActionType.SESSION_CHAT_REMOVED, "chat": uri})

    def _session(self, uri: str) -> Session:
        session = self.sessions.get(uri)
        if session is None:
            raise RpcError(E.SESSION_NOT_FOUND, f"Session not found: {uri}")
        return session

    # -- the session list ----------------------------------------------------------------------

    def summary(self, session: Session) -> dict[str, Any]:
        state = self.hub.store.state(session.uri)
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

    def list_sessions(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        dormant = self.durable.summaries() if self.durable is not None else []
        ordered = sorted(
            [*(self.summary(s) for s in self.sessions.values()), *dormant],
            key=lambda s: (s["modifiedAt"], s["resource"]),
            reverse=True,
        )
        cursor = params.get("cursor")
        if cursor is not None:
            after = _decode_cursor(cursor)
            ordered = [s for s in ordered if (s["modifiedAt"], s["resource"]) < after]
        limit = params.get("limit")
        # `limit` is a JSON number: the page is the whole items within it, but at least one (a
        # page of none has no last item to name in a cursor: paging would stop or never move).
        page_size = 100
        if isinstance(limit, int | float) and limit > 0:
            page_size = min(max(int(limit), 1), 500)
        page = ordered[:page_size]
        result: dict[str, Any] = {"items": page}
        if len(ordered) > page_size:
            last = page[-1]
            result["nextCursor"] = _encode_cursor(last["modifiedAt"], last["resource"])
        return result

    def _observe(self, envelope: Envelope) -> None:
        """Keep chat entries and the session list in sync with chat and session state."""
        channel = envelope.channel
        chat = self.chats.get(channel) or self.subagent_chats.get(channel)
        if chat is not None:
            session_uri = chat.session.uri
            if not self.hub.store.has(session_uri) or not self.hub.store.has(channel):
                return
            entries = self.hub.store.state(session_uri).get("chats") or []
            entry = next((c for c in entries if c.get("resource") == channel), None)
            if entry is None:
                return
            changes = chat_summary_changes(
                entry, self.hub.store.state(channel), active_at=self.hub.store.active_at(channel)
            )
            # No 0.7.0 action changes ChatState.title, so the entry's title is the translator's
            # (session/chatUpdated{title}); mirroring the chat's would flip it back.
            changes.pop("title", None)
            if changes:
                self.hub.apply(
                    session_uri,
                    {"type": ActionType.SESSION_CHAT_UPDATED, "chat": channel, "changes": changes},
                )
            return
        session = self.sessions.get(envelope.channel)
        if session is not None and envelope.action.get("type") in _ACTIVE_CLIENT_ACTIONS:
            active = self.hub.store.state(session.uri).get("activeClients") or []
            ids = {str(c.get("clientId")) for c in active if isinstance(c, dict)}
            for chat in list(session.chats.values()):
                chat.client_tools_changed(ids)
        if session is not None:
            current = self.summary(session)
            changes = {
                k: current[k]
                for k in _SUMMARY_FIELDS
                if k in current and current.get(k) != session.announced.get(k)
            }
            if changes:
                session.announced = current
                self.hub.notify(
                    ROOT,
                    "root/sessionSummaryChanged",
                    {"channel": ROOT, "session": session.uri, "changes": changes},
                )

    # -- turns in history ----------------------------------------------------------------------

    def fetch_turns(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        uri = params["channel"]
        if uri not in self.chats or not self.hub.store.has(uri):
            raise RpcError(E.NOT_FOUND, f"Chat not found: {uri}")
        try:
            action = self.hub.store.load_older_turns(uri, params.get("cursor"))
        except ValueError as exc:
            raise RpcError(E.INVALID_PARAMS, f"Invalid params: cursor: {exc}") from None
        self.hub.apply(uri, action)
        return {}

    # -- client actions ------------------------------------------------------------------------

    def apply_client_action(
        self,
        conn: Connection,
        channel: str,
        action: dict[str, Any],
        origin: dict[str, Any],
        *,
        sent: dict[str, Any] | None = None,
    ) -> None:
        """Apply a client action that passed schema and state validation, with its side effect.

        `action` is canonical; `sent` is the action as the client sent it, which a rejection
        echoes back unchanged (they differ only for a 0.7 client's lifted actions).
        """
        sent = action if sent is None else sent
        chat = self.chats.get(channel)
        if chat is not None:
            chat.client_action(conn, action, origin, sent=sent)
            return
        if channel in self.subagent_chats:
            reason = "a subagent's chat is read-only: talk to the agent in its parent chat"
            self.hub.reject(conn, channel, sent, origin, reason)
            return
        session = self.sessions.get(channel)
        if (
            session is not None
            and action.get("type") == ActionType.SESSION_CONFIG_CHANGED
            and self.config
        ):
            self.config.client_changed(conn, session, action, origin, sent)
            return
        planned = self.customizations
        if session is not None and planned is not None and action.get("type") in planned.actions:
            planned.client_action(conn, session, action, origin, sent)
            return
        if session is not None and action.get("type") in _PLANNED_SESSION_ACTIONS:
            default = self.hub.store.state(channel).get("defaultChat")
            target = session.chats.get(default) if isinstance(default, str) else None
            if target is not None:
                target.client_action(conn, action, origin, channel=channel, sent=sent)
                return
        self.hub.apply(channel, action, origin)

    def client_gone(self, client_id: str, still_connected: Callable[[str], bool]) -> None:
        """A client's last connection went away: after a grace period to reconnect, it stops
        being an active client of every session (`session/activeClientRemoved`, as the spec
        says a host SHOULD)."""

        async def expire() -> None:
            await trio.sleep(self.active_client_grace)
            if still_connected(client_id):
                return
            for session in list(self.sessions.values()):
                if not self.hub.store.has(session.uri):
                    continue
                active = self.hub.store.state(session.uri).get("activeClients") or []
                if any(c.get("clientId") == client_id for c in active):
                    self.hub.apply(
                        session.uri,
                        {"type": ActionType.SESSION_ACTIVE_CLIENT_REMOVED, "clientId": client_id},
                    )

        if self._nursery is not None:
            self._nursery.start_soon(expire)


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
