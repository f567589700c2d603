"""What a fake script declares besides turns: commands, customizations and MCP servers.

Script keys (each an array of tables; every key optional unless *required*)::

    [[commands]]                 # Conversation.commands(); run_command starts a turn
    name = "review"              # required, without the slash
    description = "Review the changes"
    kind = "command"             # "command" (a prompt command) or "skill"
    input_hint = "<files>"
    prompt = "Review {input}"    # the prompt the turn plays ({input}: the arguments);
                                 # default "/<name> {input}". Rules match this text.

    [[skills]]                   # ConfigurationDiscoverer.discover_skills; each enabled,
    name = "tests"               # required; user-invocable skill is also a /command
    description = "Write tests"
    path = "skills/tests/SKILL.md"   # relative to the working directory, or absolute
    enabled = true               # false: on the global disabled list (toggle it back)
    user_invocable = true
    prompt = "Use the tests skill: {input}"

    [[agents]]                   # discover_agents; selectable (AgentSelector, OpenRequest.agent)
    id = "reviewer"              # required
    name = "Reviewer"
    description = "Reviews diffs"
    path = "agents/reviewer.md"

    [[hooks]]                    # discover_hooks: id required, name, description, path
    [[instructions]]             # discover_instructions: id required, name, description, path

    [[mcp_servers]]              # MCPConfigurer (user-wide) and MCPController (per conversation)
    name = "github"              # required
    status = "connected"         # the state a conversation starts it in: connected, failed,
                                 # needs-auth, pending, disabled (off until enabled)
    error = ""                   # with status "failed"
    source = "user"              # "user" servers can be edited; others are read-only
    tools = ["search"]           # the tools it offers while connected
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .locate import Path
    from .script import ScriptParser

__all__ = ["CATALOG_KEYS", "Catalog", "CommandSpec", "DefinitionSpec", "McpSpec", "parse_catalog"]

CATALOG_KEYS = ("commands", "skills", "agents", "hooks", "instructions", "mcp_servers")
_MCP_STATES = ("connected", "failed", "needs-auth", "pending", "disabled")


@dataclass(frozen=True)
class CommandSpec:
    name: str
    description: str = ""
    kind: str = "command"
    input_hint: str = ""
    prompt: str = ""

    def expand(self, arguments: str) -> str:
        template = self.prompt or f"/{self.name} {{input}}"
        return template.replace("{input}", arguments).strip()


@dataclass(frozen=True)
class DefinitionSpec:
    id: str
    name: str
    description: str = ""
    path: str = ""
    enabled: bool = True
    user_invocable: bool = True
    prompt: str = ""


@dataclass(frozen=True)
class McpSpec:
    name: str
    status: str = "connected"
    error: str = ""
    source: str = "user"
    tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Catalog:
    commands: tuple[CommandSpec, ...] = ()
    skills: tuple[DefinitionSpec, ...] = ()
    agents: tuple[DefinitionSpec, ...] = ()
    hooks: tuple[DefinitionSpec, ...] = ()
    instructions: tuple[DefinitionSpec, ...] = ()
    mcp_servers: tuple[McpSpec, ...] = ()


def parse_catalog(p: ScriptParser, doc: Mapping[str, Any]) -> Catalog:
    """The catalog keys of a script document, validated with the script's parser."""
    commands: list[CommandSpec] = []
    for i, table in enumerate(p.tables(doc, "commands", ())):
        path: Path = ("commands", i)
        p.check_keys(table, path, ("name", "description", "kind", "input_hint", "prompt"))
        name = p.text(table, "name", path, required=True)
        if name.startswith("/") or any(ch.isspace() for ch in name):
            raise p.fail((*path, "name"), "a command name has no slash and no spaces")
        if any(c.name == name for c in commands):
            raise p.fail((*path, "name"), f'duplicate command "{name}"')
        commands.append(
            CommandSpec(
                name=name,
                description=p.text(table, "description", path),
                kind=p.choice(table, "kind", path, ("command", "skill"), "command"),
                input_hint=p.text(table, "input_hint", path),
                prompt=p.text(table, "prompt", path),
            )
        )
    skills = _definitions(p, doc, "skills", "name", ("enabled", "user_invocable", "prompt"))
    return Catalog(
        commands=tuple(commands),
        skills=skills,
        agents=_definitions(p, doc, "agents", "id"),
        hooks=_definitions(p, doc, "hooks", "id"),
        instructions=_definitions(p, doc, "instructions", "id"),
        mcp_servers=_mcp(p, doc),
    )


def _definitions(
    p: ScriptParser, doc: Mapping[str, Any], key: str, ident: str, extra: tuple[str, ...] = ()
) -> tuple[DefinitionSpec, ...]:
    out: list[DefinitionSpec] = []
    for i, table in enumerate(p.tables(doc, key, ())):
        path: Path = (key, i)
        p.check_keys(table, path, ("id", "name", "description", "path", *extra))
        value = p.text(table, ident, path, required=True)
        if any(d.id == value for d in out):
            raise p.fail((*path, ident), f'duplicate {ident} "{value}"')
        out.append(
            DefinitionSpec(
                id=value,
                name=p.text(table, "name", path) or value,
                description=p.text(table, "description", path),
                path=p.text(table, "path", path),
                enabled=p.boolean(table, "enabled", path, True),
                user_invocable=p.boolean(table, "user_invocable", path, True),
                prompt=p.text(table, "prompt", path),
            )
        )
    return tuple(out)


def _mcp(p: ScriptParser, doc: Mapping[str, Any]) -> tuple[McpSpec, ...]:
    out: list[McpSpec] = []
    for i, table in enumerate(p.tables(doc, "mcp_servers", ())):
        path: Path = ("mcp_servers", i)
        p.check_keys(table, path, ("name", "status", "error", "source", "tools"))
        name = p.text(table, "name", path, required=True)
        if any(m.name == name for m in out):
            raise p.fail((*path, "name"), f'duplicate MCP server "{name}"')
        out.append(
            McpSpec(
                name=name,
                status=p.choice(table, "status", path, _MCP_STATES, "connected"),
                error=p.text(table, "error", path),
                source=p.text(table, "source", path) or "user",
                tools=p.strings(table, "tools", path),
            )
        )
    return tuple(out)
