"""What the Copilot CLI discovers and runs, as agentapi sees it: skills, custom agents, MCP.

| agentapi | the CLI (github-copilot-sdk) |
|---|---|
| `ConfigurationDiscoverer.discover_skills` | `skills.discover` (project paths, skill directories) |
| `ConfigurationDiscoverer.discover_agents` | `agents.discover` (project paths) |
| `discover_hooks`, `discover_instructions` | no server API: `Unsupported` |
| `SkillGlobalSetter.set_skill_globally_disabled` | `skills.config.setSkillDisabled` |
| `AgentSelector.select_agent` | `session.agent.select` / `session.agent.deselect` ("") |
| `MCPController.mcp_status` | `session.mcp.list` (the states are agentapi's own names) |
| `MCPController.set_mcp_server_enabled` | `session.mcp.enable` / `session.mcp.disable` |
| `MCPController.restart_mcp_server` | `session.mcp.reload` (the CLI reconnects every server) |
| `CustomizationsReloader.reload_customizations` | `session.customizations.reload` |

An agent's id is its name: that is what `session.agent.select` and `create_session(agent=)`
take. These calls are pure conversions around the SDK; the adapter runs them on its asyncio
thread.
"""

from __future__ import annotations

from typing import Any

from ahp_bridge.agentapi import ConfigurationCatalog, ConfigurationDefinition, MCPStatus

__all__ = ["agent_catalog", "mcp_statuses", "skill_catalog"]


def _value(v: Any) -> str:
    return str(getattr(v, "value", v) or "")


def skill_catalog(listing: Any) -> ConfigurationCatalog:
    """`skills.discover`'s result as agentapi skill definitions."""
    definitions = [
        ConfigurationDefinition(
            id=s.name,
            name=s.name,
            description=s.description or "",
            source=_value(s.source),
            path=s.path or "",
            enabled=bool(s.enabled),
            user_invocable=bool(s.user_invocable),
        )
        for s in listing.skills
    ]
    return ConfigurationCatalog(definitions=definitions, warnings=list(listing.errors or []))


def agent_catalog(listing: Any) -> ConfigurationCatalog:
    """`agents.discover`'s result as agentapi agent definitions (id = the agent's name)."""
    definitions = [
        ConfigurationDefinition(
            id=a.name,
            name=a.name,
            display_name=a.display_name or "",
            description=a.description or "",
            source=_value(getattr(a, "source", "")),
            path=a.path or "",
            user_invocable=None,
        )
        for a in listing.agents
    ]
    return ConfigurationCatalog(definitions=definitions)


def mcp_statuses(listing: Any) -> list[MCPStatus]:
    """`session.mcp.list`'s servers as agentapi MCP statuses."""
    return [
        MCPStatus(
            name=s.name,
            status=_value(s.status),
            error=s.error or "",
            source=_value(s.source),
        )
        for s in listing.servers
    ]
