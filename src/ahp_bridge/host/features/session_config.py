"""Session settings over the wire: `resolveSessionConfig`, `sessionConfigCompletions`, the
values of `createSession.config` and `session/configChanged` (see translate/session_config.py
for the schema and what each property reaches).

`resolveSessionConfig` builds the schema from the provider: its models (with their efforts and
context sizes), its custom agents (`ConfigurationDiscoverer.discover_agents` for the working
directory), its execution modes and the working directory; the importable conversations of the
durable catalog are added to it. `createSession` checks the values strictly (a value that does
not fit is an error naming it) and puts schema and values in `SessionState.config`; the values
reach `OpenRequest` (model, effort, context size, agent, working directory). The catalog keeps
the values (host/durable_sessions.py); a session restored after a restart gets its schema built
again the same way, its recorded values checked loosely (one the provider no longer offers
becomes the default). A client's
`session/configChanged` is checked against that schema and the session's state; accepted, its
calls (`SetModel`, `SelectAgent`) run on the default chat's call queue, and a call that fails
puts the previous values back (`session/configChanged{replace}`) so the state never claims a
setting the provider did not take.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.host.timeouts import gave_up
from ahp_bridge.host.workspace_paths import directory_path, directory_uri
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.translate.session_config import (
    ConfigError,
    Settings,
    change_settings,
    complete_setting,
    resolve,
    settings_of,
)

if TYPE_CHECKING:
    from ahp_bridge.host.connection import Connection
    from ahp_bridge.host.sessions import ProviderEntry, Session, SessionManager

__all__ = ["SessionConfig"]

log = structlog.get_logger(__name__)


class SessionConfig:
    def __init__(self, sessions: SessionManager) -> None:
        self.sessions = sessions

    # -- the schema ----------------------------------------------------------------------------

    def _entry(self, params: dict[str, Any]) -> ProviderEntry:
        name = params.get("provider") or next(iter(self.sessions.providers), "")
        entry = self.sessions.providers.get(name)
        if entry is None:
            raise RpcError(E.PROVIDER_NOT_FOUND, f"Provider not found: {name!r}")
        return entry

    async def _agents(self, entry: ProviderEntry, workdir: str) -> list[Any]:
        provider = entry.provider
        if not entry.capabilities.custom_agents or not isinstance(
            provider, agentapi.ConfigurationDiscoverer
        ):
            return []
        try:
            with trio.fail_after(self.sessions.timeouts.provider_read):
                catalog = await provider.discover_agents([workdir] if workdir else [])
        except Exception as exc:
            error = gave_up(exc, self.sessions.timeouts, "provider_read")
            log.info("custom agents not listed", provider=entry.name, error=error)
            return []
        return list(catalog.definitions)

    async def schema(
        self, params: dict[str, Any], *, strict: bool = False
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        entry = self._entry(params)
        directory = params.get("workingDirectory")
        if not isinstance(directory, str) or not directory:
            directory = directory_uri(self.sessions.workdir)
        workdir = directory_path(directory)
        agents = await self._agents(entry, workdir)
        try:
            return resolve(
                params.get("config") or {},
                models=entry.models,
                capabilities=entry.capabilities,
                agents=agents,
                working_directory=directory,
                strict=strict,
            )
        except ConfigError as exc:
            raise RpcError(E.INVALID_PARAMS, f"Invalid params: {exc}") from None

    async def resolve_session_config(self, conn: Connection, params: dict[str, Any]) -> Any:
        schema, values = await self.schema(params)
        result: dict[str, Any] = {"schema": schema, "values": values}
        durable = self.sessions.durable  # offers importable conversations
        return await durable.offer_imports(params, result) if durable is not None else result

    async def session_config_completions(self, conn: Connection, params: dict[str, Any]) -> Any:
        schema, _ = await self.schema(params)
        items = complete_setting(schema, params["property"], params.get("query") or "")
        if items is None:
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: property: {params['property']!r} is not a setting of "
                f"this provider (settings: {', '.join(schema['properties'])})",
            )
        return {"items": items}

    def handlers(self) -> dict[str, Any]:
        return {
            "resolveSessionConfig": self.resolve_session_config,
            "sessionConfigCompletions": self.session_config_completions,
        }

    # -- createSession -------------------------------------------------------------------------

    async def for_create(
        self, params: dict[str, Any], workdir: str
    ) -> tuple[dict[str, Any], Settings]:
        """The session's `config` state and its settings; RpcError for a value that does not fit."""
        directory = (params.get("config") or {}).get("workingDirectory")
        lookup = {**params, "workingDirectory": directory or directory_uri(workdir)}
        schema, values = await self.schema(lookup, strict=True)
        return {"schema": schema, "values": values}, settings_of(values)

    # -- a restored session -------------------------------------------------------------------

    async def for_restore(
        self, provider: str, recorded: dict[str, Any] | None, workdir: str
    ) -> tuple[dict[str, Any], Settings, dict[str, Any]]:
        """A restored session's `config` state and settings from its recorded values, checked
        (not strictly) against what the provider offers now; the third item holds the recorded
        values that did not survive (a model gone: the default instead)."""
        given = dict(recorded or {})
        directory = given.get("workingDirectory")
        if not isinstance(directory, str) or not directory:
            directory = directory_uri(workdir)
        lookup = {"provider": provider, "config": given, "workingDirectory": directory}
        schema, values = await self.schema(lookup)
        dropped = {k: v for k, v in given.items() if values.get(k) != v}
        return {"schema": schema, "values": values}, settings_of(values), dropped

    # -- session/configChanged -----------------------------------------------------------------

    def client_changed(
        self,
        conn: Connection,
        session: Session,
        action: dict[str, Any],
        origin: dict[str, Any],
        sent: dict[str, Any],
    ) -> None:
        hub = self.sessions.hub
        state = hub.store.state(session.uri).get("config")
        chat = self._default_chat(session)
        if not isinstance(state, dict) or chat is None:
            hub.reject(conn, session.uri, sent, origin, "this session has no settings yet")
            return
        busy = chat.translator.active_turn_id is not None
        try:
            change = change_settings(
                state,
                action.get("config") or {},
                replace=bool(action.get("replace")),
                models=chat.entry.models,
                busy=busy,
            )
        except ConfigError as exc:
            hub.reject(conn, session.uri, sent, origin, str(exc))
            return
        previous = dict(state.get("values") or {})
        calls = []
        if change.set_model is not None:
            model, effort, size = change.set_model
            calls.append(lambda c: c.set_model(model, effort, size))
        if change.select_agent is not None:
            agent = change.select_agent

            async def select(c: agentapi.Conversation) -> None:
                if not isinstance(c, agentapi.AgentSelector):
                    raise agentapi.Unsupported("this provider cannot select custom agents")
                await c.select_agent(agent)

            calls.append(select)

        def failed(exc: Exception) -> None:
            log.info("setting not applied", session=session.uri, error=type(exc).__name__)
            session.settings = settings_of(previous)  # the next reopen asks for what holds
            if hub.store.has(session.uri):
                back = {
                    "type": ActionType.SESSION_CONFIG_CHANGED,
                    "config": previous,
                    "replace": True,
                }
                hub.apply(session.uri, back)

        if calls and not chat.enqueue_calls(calls, failed):
            hub.reject(conn, session.uri, sent, origin, chat.queue_full())
            return
        hub.apply(session.uri, action, origin)
        after = hub.store.state(session.uri).get("config", {}).get("values")
        if after != change.values:  # what the change implies besides (a new model's defaults)
            fixed = {
                "type": ActionType.SESSION_CONFIG_CHANGED,
                "config": change.values,
                "replace": True,
            }
            hub.apply(session.uri, fixed)
        session.settings = settings_of(change.values)

    def _default_chat(self, session: Session) -> Any:
        default = self.sessions.hub.store.state(session.uri).get("defaultChat")
        return session.chats.get(default) if isinstance(default, str) else None
