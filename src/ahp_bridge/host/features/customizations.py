"""Session customizations, the reading half (the decisions: `engine.customizations`).

When the engine asks (`customizations.refresh`: a session's default chat is set, its MCP
servers changed) or a client's change reached the provider (`ReloadCustomizations` at the end
of that change's calls), the provider is asked, each read bounded by `timeouts.provider_read`:
`ConfigurationDiscoverer` for its skills, custom agents, hooks and instructions in the working
directory, the conversation's `commands()` for its prompt commands, and `MCPController.
mcp_status()` for its MCP servers. The readings go to the engine, which publishes the list.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.engine.customizations import REFRESH
from ahp_bridge.engine.jobs import ShellJob
from ahp_bridge.engine.sessions import Session
from ahp_bridge.host.runtime.providers import Providers
from ahp_bridge.host.runtime.timeouts import gave_up
from ahp_bridge.host.runtime.workers import Workers
from ahp_bridge.host.shell import Shell

__all__ = ["CustomizationReads"]

log = structlog.get_logger(__name__)


class CustomizationReads:
    def __init__(self, shell: Shell, providers: Providers, workers: Workers) -> None:
        self.shell = shell
        self.engine = shell.engine
        self.providers = providers
        self.workers = workers
        #: Called with a session once a client's change reached the provider (its commands
        #: may have changed with it: host/features/slash.py reads them again).
        self.changed: list[Callable[[Session], None]] = []
        shell.jobs[REFRESH] = self._refresh_job
        workers.reload = self.reload

    async def _refresh_job(self, job: ShellJob) -> None:
        session = self.engine.sessions.sessions.get(job.channel)
        if session is not None:
            await self.refresh(session)

    async def _read(self, what: str, call: Callable[[], Awaitable[Any]]) -> Any:
        timeouts = self.providers.timeouts
        try:
            with trio.fail_after(timeouts.provider_read):
                return await call()
        except agentapi.Unsupported:
            return None
        except Exception as exc:
            error = gave_up(exc, timeouts, "provider_read")
            log.info("customizations not read", what=what, error=error)
            return None

    async def reload(self, session_uri: str, mcp: bool) -> None:
        """A client's change reached the provider: read the MCP states (`mcp`) and the list
        again, and tell whoever follows the session's commands."""
        session = self.engine.sessions.sessions.get(session_uri)
        if session is None:
            return
        chat = self.engine.sessions.default_chat(session)
        conversation = self.workers.conversation(chat.uri) if chat is not None else None
        if mcp and chat is not None and isinstance(conversation, agentapi.MCPController):
            statuses = await self._read("MCP status", conversation.mcp_status)
            if statuses is not None:
                snapshot = agentapi.MCPStatusSnapshot(
                    supported=True,
                    ready=True,
                    servers=[
                        agentapi.MCPServerStatus(
                            name=s.name, status=s.status, error=s.error, source=s.source
                        )
                        for s in statuses
                    ],
                )
                self.shell.settle_with(lambda e: e.customizations.mcp_event(chat, snapshot))
        await self.refresh(session, settling=True)
        for callback in self.changed:
            callback(session)

    async def refresh(self, session: Session, *, settling: bool = False) -> None:
        """Read everything again and hand it to the engine (which publishes the whole list);
        `settling`: the reading-again that ends a client's change."""
        chat = self.engine.sessions.default_chat(session)
        if chat is None:
            return
        provider = self.providers.providers[chat.provider.name]
        workdir = session.workdir
        catalogs: dict[str, agentapi.ConfigurationCatalog] = {}
        if isinstance(provider, agentapi.ConfigurationDiscoverer):
            paths = [workdir] if workdir else []
            reads = {
                "skill": lambda: provider.discover_skills(paths, []),
                "agent": lambda: provider.discover_agents(paths),
                "hook": lambda: provider.discover_hooks(paths),
                "rule": lambda: provider.discover_instructions(paths),
            }
            for kind, read in reads.items():
                catalog = await self._read(f"discover {kind}s", read)
                if catalog is not None:
                    catalogs[kind] = catalog
        conversation = self.workers.conversation(chat.uri)
        commands: list[agentapi.Command] = []
        statuses: list[agentapi.MCPServerStatus] | None = None
        if conversation is not None:
            commands = list(await self._read("commands", conversation.commands) or [])
            if isinstance(conversation, agentapi.MCPController):
                statuses = await self._read("MCP status", conversation.mcp_status)
        self.shell.settle_with(
            lambda e: e.customizations.read(
                session, catalogs, commands, statuses, settling=settling
            )
        )
