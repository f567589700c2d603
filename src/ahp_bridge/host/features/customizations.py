"""Session customizations: what the provider discovers and runs, typed (see translate/).

When a session's default chat is added, the provider is asked (each bounded by `TIMEOUT`):
`ConfigurationDiscoverer` for its skills, custom agents, hooks and instructions in the working
directory, the conversation's `commands()` for its prompt commands, and `MCPController.
mcp_status()` for its MCP servers; the list goes out as `session/customizationsChanged`, and
again whenever a toggle may have changed it. The conversation's `mcp_status` events move each
server's state (`session/mcpServerStateChanged`). Nothing of this is put in `_meta`.

Client actions on them, and what each reaches:

* `session/customizationToggled` on a skill: `SkillGlobalSetter.set_skill_globally_disabled`
  (the provider's setting is global: it applies in every project, whatever the decision's
  scope), then `CustomizationsReloader.reload_customizations` when the conversation has it;
  on an MCP server: `MCPController.set_mcp_server_enabled` for this conversation. Anything
  else (agents, hooks, instructions, commands, the directories) is refused with the reason;
* `session/mcpServerStartRequested`: `MCPController.restart_mcp_server`, or
  `set_mcp_server_enabled(True)` for a stopped one; `session/mcpServerStopRequested`:
  `set_mcp_server_enabled(False)`; `session/mcpServerBackgroundRequested`: refused (no server
  here holds messages).

An accepted action is applied at once (the reducer's optimistic state) and its calls run on the
default chat's call queue; when one fails, the state it claimed is put back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.host.timeouts import gave_up
from ahp_bridge.host.workspace_paths import directory_uri
from ahp_bridge.protocol.action_types import ActionType
from ahp_bridge.state.store import Envelope
from ahp_bridge.translate.customizations import (
    customizations,
    mcp_customization,
    mcp_state,
    parse_id,
)

if TYPE_CHECKING:
    from ahp_bridge.host.chat import ChatRuntime
    from ahp_bridge.host.connection import Connection
    from ahp_bridge.host.sessions import Session, SessionManager

__all__ = ["ACTIONS", "Customizations"]

log = structlog.get_logger(__name__)

#: The client actions this module plans.
ACTIONS = frozenset(
    {
        ActionType.SESSION_CUSTOMIZATION_TOGGLED,
        ActionType.SESSION_MCP_SERVER_START_REQUESTED,
        ActionType.SESSION_MCP_SERVER_STOP_REQUESTED,
        ActionType.SESSION_MCP_SERVER_BACKGROUND_REQUESTED,
    }
)
_KIND_NAMES = {
    "agent": "custom agents",
    "hook": "hooks",
    "rule": "instructions",
    "prompt": "commands",
    "dir": "whole directories of customizations",
}

Call = Callable[[agentapi.Conversation], Awaitable[None]]


class Customizations:
    def __init__(self, sessions: SessionManager) -> None:
        self.sessions = sessions
        self.hub = sessions.hub
        #: Per session, the MCP servers as last reported: name -> (status, error, source).
        self._mcp: dict[str, dict[str, tuple[str, str, str]]] = {}
        self.actions = ACTIONS
        #: Called with a session once a client's change reached the provider (its commands
        #: may have changed with it: host/slash.py reads them again).
        self.changed: list[Callable[[Session], None]] = []
        self.hub.observers.append(self._observe)

    # -- reading -------------------------------------------------------------------------------

    def _observe(self, envelope: Envelope) -> None:
        kind = envelope.action.get("type")
        if kind == ActionType.SESSION_DEFAULT_CHAT_CHANGED:
            session = self.sessions.sessions.get(envelope.channel)
            chat = self._default_chat(session) if session is not None else None
            if session is not None and chat is not None:
                self.sessions.nursery.start_soon(self.refresh, session)
        elif kind == ActionType.ROOT_ACTIVE_SESSIONS_CHANGED:
            for uri in [u for u in self._mcp if u not in self.sessions.sessions]:
                del self._mcp[uri]

    def _default_chat(self, session: Session) -> ChatRuntime | None:
        store = self.hub.store
        if not store.has(session.uri):
            return None
        default = store.state(session.uri).get("defaultChat")
        return session.chats.get(default) if isinstance(default, str) else None

    async def _read(self, what: str, call: Callable[[], Awaitable[Any]]) -> Any:
        try:
            with trio.fail_after(self.sessions.timeouts.provider_read):
                return await call()
        except agentapi.Unsupported:
            return None
        except Exception as exc:
            error = gave_up(exc, self.sessions.timeouts, "provider_read")
            log.info("customizations not read", what=what, error=error)
            return None

    async def refresh(self, session: Session) -> None:
        """Read everything again and publish the whole list."""
        chat = self._default_chat(session)
        if chat is None:
            return
        provider = chat.entry.provider
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
        conversation = chat.conversation
        commands: list[agentapi.Command] = []
        if conversation is not None:
            commands = list(await self._read("commands", conversation.commands) or [])
            if isinstance(conversation, agentapi.MCPController):
                statuses = await self._read("MCP status", conversation.mcp_status)
                if statuses is not None:
                    self._mcp[session.uri] = {
                        s.name: (s.status, s.error, s.source) for s in statuses
                    }
        if not self.hub.store.has(session.uri) or session.disposed:
            return
        items = customizations(
            catalogs,
            commands,
            self._mcp_items(session),
            workdir=workdir,
            file_uri=directory_uri,
        )
        current = self.hub.store.state(session.uri).get("customizations")
        if current != items and (items or current):
            self.hub.apply(
                session.uri,
                {"type": ActionType.SESSION_CUSTOMIZATIONS_CHANGED, "customizations": items},
            )

    def _mcp_items(self, session: Session) -> list[dict[str, Any]]:
        uri = directory_uri(session.workdir)
        return [
            mcp_customization(name, status, error, source, uri)
            for name, (status, error, source) in self._mcp.get(session.uri, {}).items()
        ]

    def mcp_event(self, chat: ChatRuntime, snapshot: agentapi.MCPStatusSnapshot) -> None:
        """The default chat's conversation reported its servers: move their states."""
        session = chat.session
        if self._default_chat(session) is not chat or not self.hub.store.has(session.uri):
            return
        servers = {s.name: (s.status, s.error, s.source) for s in snapshot.servers}
        known = self._mcp.get(session.uri, {})
        self._mcp[session.uri] = servers
        if set(servers) != set(known):
            self.sessions.nursery.start_soon(self.refresh, session)
            return
        for name, (status, error, _) in servers.items():
            if known.get(name, ("",))[0] != status or known[name][1] != error:
                self.hub.apply(
                    session.uri,
                    {
                        "type": ActionType.SESSION_MCP_SERVER_STATE_CHANGED,
                        "id": f"mcp:{name}",
                        "state": mcp_state(status, error),
                    },
                )

    # -- client actions ------------------------------------------------------------------------

    def client_action(
        self,
        conn: Connection,
        session: Session,
        action: dict[str, Any],
        origin: dict[str, Any],
        sent: dict[str, Any],
    ) -> None:
        chat = self._default_chat(session)
        if chat is None:
            self.hub.reject(conn, session.uri, sent, origin, "the session is not ready")
            return
        kind = action.get("type")
        ident = str(action.get("id", ""))
        plan = self._plan(chat, kind, ident, action)
        if isinstance(plan, str):
            self.hub.reject(conn, session.uri, sent, origin, plan)
            return
        calls, undo = plan
        state = self.hub.store.state(session.uri)
        before = state.get("customizations")

        def failed(exc: Exception) -> None:
            log.info("customization not changed", session=session.uri, error=type(exc).__name__)
            if self.hub.store.has(session.uri):
                undo_action = undo(before)
                if undo_action is not None:
                    self.hub.apply(session.uri, undo_action)

        def after() -> Call:
            async def reread(c: agentapi.Conversation) -> None:
                if (
                    isinstance(c, agentapi.MCPController)
                    and kind != ActionType.SESSION_CUSTOMIZATION_TOGGLED
                ):
                    await self._mcp_now(chat, c)
                await self.refresh(session)
                for callback in self.changed:
                    callback(session)

            return reread

        if not chat.enqueue_calls([*calls, after()], failed):
            self.hub.reject(conn, session.uri, sent, origin, chat.queue_full())
            return
        self.hub.apply(session.uri, action, origin)

    async def _mcp_now(self, chat: ChatRuntime, c: agentapi.MCPController) -> None:
        statuses = await self._read("MCP status", c.mcp_status)
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
            self.mcp_event(chat, snapshot)

    def _plan(
        self, chat: ChatRuntime, kind: Any, ident: str, action: dict[str, Any]
    ) -> str | tuple[list[Call], Callable[[Any], dict[str, Any] | None]]:
        """(calls, how to put the state back) for a client action, or why it is refused."""
        parsed = parse_id(ident)
        if parsed is None:
            return f"no customization {ident!r} in this session"
        what, name = parsed
        conversation = chat.conversation
        if kind == ActionType.SESSION_MCP_SERVER_BACKGROUND_REQUESTED:
            return "MCP servers of this provider never hold messages back"
        if what == "mcp":
            return self._plan_mcp(chat, conversation, kind, name, action)
        if kind != ActionType.SESSION_CUSTOMIZATION_TOGGLED:
            return f"{ident!r} is not an MCP server"
        if what != "skill":
            return f"this provider cannot turn {_KIND_NAMES.get(what, what)} on or off"
        provider = chat.entry.provider
        if not isinstance(provider, agentapi.SkillGlobalSetter):
            return "this provider cannot turn skills on or off"
        enabled = _decision(action)

        async def toggle(c: agentapi.Conversation) -> None:
            await provider.set_skill_globally_disabled(name, not enabled)
            if isinstance(c, agentapi.CustomizationsReloader):
                await c.reload_customizations()

        def undo(before: Any) -> dict[str, Any] | None:
            old = _find(before, ident)
            was = old.get("enabled", True) if old is not None else True
            return {
                "type": ActionType.SESSION_CUSTOMIZATION_TOGGLED,
                "id": ident,
                "enablement": [{"kind": "global", "enabled": was}],
            }

        return [toggle], undo

    def _plan_mcp(
        self,
        chat: ChatRuntime,
        conversation: agentapi.Conversation | None,
        kind: Any,
        name: str,
        action: dict[str, Any],
    ) -> str | tuple[list[Call], Callable[[Any], dict[str, Any] | None]]:
        if conversation is None or not isinstance(conversation, agentapi.MCPController):
            return "this provider's MCP servers cannot be controlled through agentapi"
        status = self._mcp.get(chat.session.uri, {}).get(name)
        if status is None:
            return f"no MCP server {name!r} in this conversation"
        ident = f"mcp:{name}"
        stopped = status[0] in ("disabled", "stopped", "not_configured")
        if kind == ActionType.SESSION_CUSTOMIZATION_TOGGLED:
            enabled = _decision(action)

            async def switch(c: agentapi.Conversation) -> None:
                assert isinstance(c, agentapi.MCPController)
                await c.set_mcp_server_enabled(name, enabled)

            def undo(before: Any) -> dict[str, Any] | None:
                old = _find(before, ident)
                enablement = old.get("enablement") if old is not None else None
                return {
                    "type": ActionType.SESSION_CUSTOMIZATION_TOGGLED,
                    "id": ident,
                    "enablement": enablement or [],
                }

            return [switch], undo

        def restore(before: Any) -> dict[str, Any] | None:
            old = _find(before, ident)
            if old is None:
                return None
            return {
                "type": ActionType.SESSION_MCP_SERVER_STATE_CHANGED,
                "id": ident,
                "state": old["state"],
            }

        if kind == ActionType.SESSION_MCP_SERVER_START_REQUESTED:

            async def start(c: agentapi.Conversation) -> None:
                assert isinstance(c, agentapi.MCPController)
                if stopped:
                    await c.set_mcp_server_enabled(name, True)
                else:
                    await c.restart_mcp_server(name)

            return [start], restore
        if kind == ActionType.SESSION_MCP_SERVER_STOP_REQUESTED:

            async def stop(c: agentapi.Conversation) -> None:
                assert isinstance(c, agentapi.MCPController)
                await c.set_mcp_server_enabled(name, False)

            return [stop], restore
        return f"{kind} is not an action on MCP servers"


def _decision(action: dict[str, Any]) -> bool:
    """Whether a toggle turns on: its first enablement decision (on when it has none)."""
    enablement = action.get("enablement") or []
    first = enablement[0] if enablement and isinstance(enablement[0], dict) else {}
    enabled = first.get("enabled")
    return enabled if isinstance(enabled, bool) else True


def _find(items: Any, ident: str) -> dict[str, Any] | None:
    for item in items or []:
        if item.get("id") == ident:
            return item
        for child in item.get("children") or []:
            if child.get("id") == ident:
                return child
    return None
