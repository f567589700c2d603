"""Session customizations, the engine's half: what the provider discovered and runs, typed.

The shell reads the provider (`ConfigurationDiscoverer` for skills, agents, hooks and
instructions, the conversation's `commands()`, `MCPController.mcp_status()`) when a session's
default chat is set and whenever a change may have moved something (`ShellJob
"customizations.refresh"`), and hands the readings to `read`; the list goes out as
`session/customizationsChanged` when it differs. The conversation's `mcp_status` events move
each server's state (`session/mcpServerStateChanged`).

Client actions on them are decided here: `session/customizationToggled` on a skill reaches
`SkillGlobalSetter.set_skill_globally_disabled` (the provider's setting is global), then a
reload when the conversation has one; on an MCP server `set_mcp_server_enabled`;
`session/mcpServerStartRequested` enables a stopped server and restarts a running one,
`...StopRequested` disables it. Anything else is refused with the reason. An accepted action is
applied at once (the reducer's optimistic state) and its calls run on the default chat's queue;
when one fails, the state it claimed is put back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ahp_bridge import agentapi
from ahp_bridge.engine.chats import Chat
from ahp_bridge.engine.decision import Accepted, Refused
from ahp_bridge.engine.effects import Log, Run
from ahp_bridge.engine.fanout import Fanout, Reaction
from ahp_bridge.engine.jobs import (
    FeatureCall,
    ReloadCustomizations,
    RestartMcpServer,
    SetMcpServerEnabled,
    SetSkillDisabled,
    ShellJob,
)
from ahp_bridge.engine.sessions import Session, Sessions
from ahp_bridge.protocol.action_types import ActionType as A
from ahp_bridge.state.envelope import Envelope
from ahp_bridge.translate.customizations import (
    customizations,
    mcp_customization,
    mcp_state,
    parse_id,
)

__all__ = ["ACTIONS", "REFRESH", "Customizations"]

#: The client actions decided here.
ACTIONS = frozenset(
    {
        A.SESSION_CUSTOMIZATION_TOGGLED,
        A.SESSION_MCP_SERVER_START_REQUESTED,
        A.SESSION_MCP_SERVER_STOP_REQUESTED,
        A.SESSION_MCP_SERVER_BACKGROUND_REQUESTED,
    }
)
#: The shell job that reads a session's customizations again.
REFRESH = "customizations.refresh"
_KIND_NAMES = {
    "agent": "custom agents",
    "hook": "hooks",
    "rule": "instructions",
    "prompt": "commands",
    "dir": "whole directories of customizations",
}

Undo = Callable[[Any], dict[str, Any] | None]
Plan = tuple[list[FeatureCall], Undo]


class Customizations:
    def __init__(self, fanout: Fanout, sessions: Sessions, *, directory_uri: Callable[[str], str]):
        self.fanout = fanout
        self.sessions = sessions
        self.actions = ACTIONS
        self._uri = directory_uri
        #: Per session, the MCP servers as last reported: name -> (status, error, source).
        self.mcp: dict[str, dict[str, tuple[str, str, str]]] = {}
        #: Per session, client changes accepted (applied at once) whose reading-again has not
        #: come back: a reading made meanwhile predates one of them and would put it back.
        self._unsettled: dict[str, int] = {}
        fanout.observe(self._default_chat_set, [A.SESSION_DEFAULT_CHAT_CHANGED])
        fanout.observe(self._sessions_changed, [A.ROOT_ACTIVE_SESSIONS_CHANGED])

    # -- reading -------------------------------------------------------------------------------

    def _default_chat_set(self, envelope: Envelope) -> Iterable[Reaction]:
        session = self.sessions.sessions.get(envelope.channel)
        if session is None or self.sessions.default_chat(session) is None:
            return ()
        return (Run(ShellJob(REFRESH, session.uri)),)

    def _sessions_changed(self, envelope: Envelope) -> Iterable[Reaction]:
        for uri in [u for u in self.mcp if u not in self.sessions.sessions]:
            del self.mcp[uri]
        for uri in [u for u in self._unsettled if u not in self.sessions.sessions]:
            del self._unsettled[uri]
        return ()

    def _settle(self, uri: str) -> None:
        left = self._unsettled.get(uri, 0) - 1
        if left > 0:
            self._unsettled[uri] = left
        else:
            self._unsettled.pop(uri, None)

    def read(
        self,
        session: Session,
        catalogs: dict[str, agentapi.ConfigurationCatalog],
        commands: list[agentapi.Command],
        statuses: list[agentapi.MCPServerStatus] | None,
        *,
        settling: bool = False,
    ) -> None:
        """The shell read the session's customizations: publish the whole list if it moved.

        `settling`: this is the reading-again at the end of a client's change. While another
        accepted change still waits for its own, the list is not published: it was read
        before that change reached the provider, and would put back what the change applied
        (its own reading publishes the list once the provider has it)."""
        store = self.fanout.store
        if settling:
            self._settle(session.uri)
        if statuses is not None:
            self.mcp[session.uri] = {s.name: (s.status, s.error, s.source) for s in statuses}
        if not store.has(session.uri) or session.disposed or self._unsettled.get(session.uri):
            return
        items = customizations(
            catalogs,
            commands,
            self._mcp_items(session),
            workdir=session.workdir,
            file_uri=self._uri,
        )
        current = store.state(session.uri).get("customizations")
        if current != items and (items or current):
            self.fanout.apply(
                session.uri, {"type": A.SESSION_CUSTOMIZATIONS_CHANGED, "customizations": items}
            )

    def _mcp_items(self, session: Session) -> list[dict[str, Any]]:
        uri = self._uri(session.workdir)
        return [
            mcp_customization(name, status, error, source, uri)
            for name, (status, error, source) in self.mcp.get(session.uri, {}).items()
        ]

    def mcp_event(self, chat: Chat, snapshot: agentapi.MCPStatusSnapshot) -> None:
        """The default chat's conversation reported its servers: move their states."""
        session = self.sessions.sessions.get(chat.session.uri)
        store = self.fanout.store
        if session is None or self.sessions.default_chat(session) is not chat:
            return
        if not store.has(session.uri):
            return
        servers = {s.name: (s.status, s.error, s.source) for s in snapshot.servers}
        known = self.mcp.get(session.uri, {})
        self.mcp[session.uri] = servers
        if set(servers) != set(known):
            self.fanout.effects.append(Run(ShellJob(REFRESH, session.uri)))
            return
        for name, (status, error, _) in servers.items():
            if known.get(name, ("",))[0] != status or known[name][1] != error:
                self.fanout.apply(
                    session.uri,
                    {
                        "type": A.SESSION_MCP_SERVER_STATE_CHANGED,
                        "id": f"mcp:{name}",
                        "state": mcp_state(status, error),
                    },
                )

    # -- client actions ------------------------------------------------------------------------

    def decide(self, session: Session, action: dict[str, Any]) -> Accepted | Refused:
        chat = self.sessions.default_chat(session)
        if chat is None:
            return Refused("the session is not ready")
        kind = action.get("type")
        ident = str(action.get("id", ""))
        plan = self._plan(chat, kind, ident, action)
        if isinstance(plan, str):
            return Refused(plan)
        if not chat.has_room():
            return Refused(chat.queue_full())
        calls, undo = plan
        store = self.fanout.store
        before = store.state(session.uri).get("customizations")
        fanout = self.fanout

        def failed(exc: BaseException) -> None:
            self._settle(session.uri)  # its reading-again will not run
            fanout.effects.append(
                Log(
                    "info",
                    "customization not changed",
                    {"session": session.uri, "error": type(exc).__name__},
                )
            )
            if store.has(session.uri):
                undo_action = undo(before)
                if undo_action is not None:
                    fanout.apply(session.uri, undo_action)

        reread = ReloadCustomizations(session.uri, mcp=kind != A.SESSION_CUSTOMIZATION_TOGGLED)

        def then() -> None:
            # Counted before its calls can run (or fail), uncounted when they were not queued.
            self._unsettled[session.uri] = self._unsettled.get(session.uri, 0) + 1
            if not chat.enqueue_calls([*calls, reread], failed):
                self._settle(session.uri)

        return Accepted(session.uri, action, then=[then])

    def _plan(self, chat: Chat, kind: Any, ident: str, action: dict[str, Any]) -> str | Plan:
        """(calls, how to put the state back) for a client action, or why it is refused."""
        parsed = parse_id(ident)
        if parsed is None:
            return f"no customization {ident!r} in this session"
        what, name = parsed
        if kind == A.SESSION_MCP_SERVER_BACKGROUND_REQUESTED:
            return "MCP servers of this provider never hold messages back"
        if what == "mcp":
            return self._plan_mcp(chat, kind, name, action)
        if kind != A.SESSION_CUSTOMIZATION_TOGGLED:
            return f"{ident!r} is not an MCP server"
        if what != "skill":
            return f"this provider cannot turn {_KIND_NAMES.get(what, what)} on or off"
        if not chat.provider.skill_setter:
            return "this provider cannot turn skills on or off"
        enabled = _decision(action)

        def undo(before: Any) -> dict[str, Any] | None:
            old = _find(before, ident)
            was = old.get("enabled", True) if old is not None else True
            return {
                "type": A.SESSION_CUSTOMIZATION_TOGGLED,
                "id": ident,
                "enablement": [{"kind": "global", "enabled": was}],
            }

        return [SetSkillDisabled(name, not enabled)], undo

    def _plan_mcp(self, chat: Chat, kind: Any, name: str, action: dict[str, Any]) -> str | Plan:
        if not chat.open or not chat.facts.mcp:
            return "this provider's MCP servers cannot be controlled through agentapi"
        status = self.mcp.get(chat.session.uri, {}).get(name)
        if status is None:
            return f"no MCP server {name!r} in this conversation"
        ident = f"mcp:{name}"
        stopped = status[0] in ("disabled", "stopped", "not_configured")
        if kind == A.SESSION_CUSTOMIZATION_TOGGLED:

            def undo_toggle(before: Any) -> dict[str, Any] | None:
                old = _find(before, ident)
                enablement = old.get("enablement") if old is not None else None
                return {
                    "type": A.SESSION_CUSTOMIZATION_TOGGLED,
                    "id": ident,
                    "enablement": enablement or [],
                }

            return [SetMcpServerEnabled(name, _decision(action))], undo_toggle

        def restore(before: Any) -> dict[str, Any] | None:
            old = _find(before, ident)
            if old is None:
                return None
            return {"type": A.SESSION_MCP_SERVER_STATE_CHANGED, "id": ident, "state": old["state"]}

        if kind == A.SESSION_MCP_SERVER_START_REQUESTED:
            start: FeatureCall = (
                SetMcpServerEnabled(name, True) if stopped else RestartMcpServer(name)
            )
            return [start], restore
        if kind == A.SESSION_MCP_SERVER_STOP_REQUESTED:
            return [SetMcpServerEnabled(name, False)], restore
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
