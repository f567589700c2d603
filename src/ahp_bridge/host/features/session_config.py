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

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.engine.peers import Peer
from ahp_bridge.engine.providers import ProviderInfo
from ahp_bridge.host.runtime.providers import Providers
from ahp_bridge.host.runtime.timeouts import gave_up
from ahp_bridge.host.workspace.paths import directory_path, directory_uri
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.translate.session_config import (
    ConfigError,
    Settings,
    complete_setting,
    resolve,
    settings_of,
)

__all__ = ["SessionConfig"]

log = structlog.get_logger(__name__)

#: Adds the importable conversations of the durable catalog to a resolved schema.
OfferImports = Callable[[dict[str, Any], dict[str, Any]], Awaitable[dict[str, Any]]]


class SessionConfig:
    def __init__(self, providers: Providers, *, workdir: str) -> None:
        self.providers = providers
        self.workdir = workdir
        #: The durable room's offer of importable conversations (None: no catalog).
        self.offer_imports: OfferImports | None = None

    # -- the schema ----------------------------------------------------------------------------

    def _entry(self, params: dict[str, Any]) -> ProviderInfo:
        name = params.get("provider") or next(iter(self.providers.infos), "")
        entry = self.providers.infos.get(name)
        if entry is None:
            raise RpcError(E.PROVIDER_NOT_FOUND, f"Provider not found: {name!r}")
        return entry

    async def _agents(self, entry: ProviderInfo, workdir: str) -> list[Any]:
        provider = self.providers.providers[entry.name]
        timeouts = self.providers.timeouts
        if not entry.capabilities.custom_agents or not isinstance(
            provider, agentapi.ConfigurationDiscoverer
        ):
            return []
        try:
            with trio.fail_after(timeouts.provider_read):
                catalog = await provider.discover_agents([workdir] if workdir else [])
        except Exception as exc:
            error = gave_up(exc, timeouts, "provider_read")
            log.info("custom agents not listed", provider=entry.name, error=error)
            return []
        return list(catalog.definitions)

    async def schema(
        self, params: dict[str, Any], *, strict: bool = False
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        entry = self._entry(params)
        directory = params.get("workingDirectory")
        if not isinstance(directory, str) or not directory:
            directory = directory_uri(self.workdir)
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

    async def resolve_session_config(self, peer: Peer, params: dict[str, Any]) -> Any:
        schema, values = await self.schema(params)
        result: dict[str, Any] = {"schema": schema, "values": values}
        offer = self.offer_imports  # importable conversations of the durable catalog
        return await offer(params, result) if offer is not None else result

    async def session_config_completions(self, peer: Peer, params: dict[str, Any]) -> Any:
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
