"""A provider's configuration as AHP session customizations (pure).

AHP has two levels: containers (plugins, directories) holding children (skills, agents,
prompts, rules, hooks, MCP servers), and MCP servers on their own. What agentapi discovers maps
so:

==============================  =========================================================
agentapi                        AHP customization
==============================  =========================================================
``DiscoverSkills``              directory ``Skills`` (contents ``skill``): ``skill`` children
``DiscoverAgents``              directory ``Custom agents`` (``agent``): ``agent`` children
``DiscoverHooks``               directory ``Hooks`` (``hook``): ``hook`` children
``DiscoverInstructions``        directory ``Instructions`` (``rule``): ``rule`` children
``Commands`` of kind command    directory ``Commands`` (``prompt``): ``prompt`` children
                                (skills are already listed as skills)
``MCPStatus`` of a conversation ``mcpServer``, top level, with its state and ``enablement``
==============================  =========================================================

A directory's URI is the common folder of its children's files (else the working directory);
it is never writable here. A child's ``enabled`` is the provider's own flag (left out when it
reports none); a skill or agent that users cannot invoke has ``disableUserInvocation``. Ids are
``<kind>:<provider id>`` (``skill:tests``, ``mcp:github``), so a toggle names what to change.

MCP states: connected -> ``ready``; pending -> ``starting``; failed -> ``error`` (its reason);
needs-auth -> ``error`` (``needsAuth``: AHP's ``authRequired`` needs protected-resource metadata
agentapi does not carry); disabled, stopped, not configured -> ``stopped``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from ahp_bridge.agentapi import (
    COMMAND_PROMPT,
    MCP_CONNECTED,
    MCP_FAILED,
    MCP_NEEDS_AUTH,
    MCP_PENDING,
    Command,
    ConfigurationCatalog,
    ConfigurationDefinition,
)

__all__ = [
    "KINDS",
    "customization_id",
    "customizations",
    "mcp_customization",
    "mcp_state",
    "parse_id",
]

KINDS: dict[str, tuple[str, str]] = {
    "skill": ("Skills", "skill"),
    "agent": ("Custom agents", "agent"),
    "hook": ("Hooks", "hook"),
    "rule": ("Instructions", "rule"),
    "prompt": ("Commands", "prompt"),
}
"""Child kind -> (directory name, AHP child type)."""

FileUri = Callable[[str], str]


def customization_id(kind: str, ident: str) -> str:
    return f"{kind}:{ident}"


def parse_id(ident: str) -> tuple[str, str] | None:
    """(kind, provider id) of an id this module made, else None."""
    kind, sep, rest = ident.partition(":")
    if not sep or not rest or (kind not in KINDS and kind not in ("mcp", "dir")):
        return None
    return kind, rest


def mcp_state(status: str, error: str = "") -> dict[str, Any]:
    """An agentapi MCP server status as an AHP ``McpServerState``."""
    if status == MCP_CONNECTED:
        return {"kind": "ready"}
    if status == MCP_PENDING:
        return {"kind": "starting"}
    if status == MCP_FAILED:
        message = error or "The server failed to start."
        return {"kind": "error", "error": {"errorType": "mcpFailed", "message": message}}
    if status == MCP_NEEDS_AUTH:
        message = error or "The server needs a sign-in; sign in through the provider's own tools."
        return {"kind": "error", "error": {"errorType": "needsAuth", "message": message}}
    return {"kind": "stopped"}


def mcp_customization(name: str, status: str, error: str, source: str, uri: str) -> dict[str, Any]:
    """One MCP server as a top-level ``mcpServer`` customization."""
    item: dict[str, Any] = {
        "id": customization_id("mcp", name),
        "uri": uri,
        "name": name,
        "type": "mcpServer",
        "enablement": [{"kind": "session", "enabled": status not in ("disabled", "stopped")}],
        "state": mcp_state(status, error),
    }
    if source:
        item["_meta"] = {"ahpBridge.source": source}
    return item


def _child(
    kind: str, definition: ConfigurationDefinition, uri: str, file_uri: FileUri
) -> dict[str, Any]:
    child: dict[str, Any] = {
        "id": customization_id(kind, definition.id),
        "uri": file_uri(definition.path) if definition.path else uri,
        "name": definition.display_name or definition.name or definition.id,
        "type": KINDS[kind][1],
    }
    if definition.enabled is not None:
        child["enabled"] = definition.enabled
    if definition.description and kind != "hook":
        child["description"] = definition.description
    if definition.user_invocable is False and kind in ("skill", "agent"):
        child["disableUserInvocation"] = True
    if definition.source:
        child["_meta"] = {"ahpBridge.source": definition.source}
    return child


def _folder(paths: Sequence[str], fallback: str) -> str:
    if not paths:
        return fallback
    folders = [os.path.dirname(p) for p in paths]
    try:
        common = os.path.commonpath(folders)
    except ValueError:
        return fallback
    return common or fallback


def _directory(
    kind: str,
    children: list[dict[str, Any]],
    paths: list[str],
    workdir: str,
    file_uri: FileUri,
    warnings: Sequence[str],
) -> dict[str, Any]:
    name, contents = KINDS[kind]
    folder = _folder(paths, workdir)
    directory: dict[str, Any] = {
        "id": customization_id("dir", kind),
        "uri": file_uri(folder) if folder else file_uri(workdir),
        "name": name,
        "type": "directory",
        "enabled": True,
        "contents": contents,
        "writable": False,
        "children": children,
        "load": {"kind": "degraded", "message": "; ".join(warnings)}
        if warnings
        else {"kind": "loaded"},
    }
    return directory


def customizations(
    catalogs: dict[str, ConfigurationCatalog],
    commands: Sequence[Command],
    mcp: Sequence[dict[str, Any]],
    *,
    workdir: str,
    file_uri: FileUri,
) -> list[dict[str, Any]]:
    """The session's customizations: a directory per kind that has entries, then MCP servers.

    ``catalogs`` maps ``skill``/``agent``/``hook``/``rule`` to what discovery returned; ``mcp``
    are ``mcp_customization`` items.
    """
    out: list[dict[str, Any]] = []
    workdir_uri = file_uri(workdir) if workdir else "file:///"
    for kind in ("skill", "agent", "hook", "rule"):
        catalog = catalogs.get(kind)
        if catalog is None or (not catalog.definitions and not catalog.warnings):
            continue
        children = [_child(kind, d, workdir_uri, file_uri) for d in catalog.definitions]
        paths = [d.path for d in catalog.definitions if d.path]
        out.append(_directory(kind, children, paths, workdir, file_uri, catalog.warnings))
    prompts = [c for c in commands if c.kind == COMMAND_PROMPT and not c.disabled_reason]
    if prompts:
        children = []
        for command in prompts:
            child: dict[str, Any] = {
                "id": customization_id("prompt", command.name),
                "uri": workdir_uri,
                "name": f"/{command.name}",
                "type": "prompt",
            }
            if command.description:
                child["description"] = command.description
            children.append(child)
        out.append(_directory("prompt", children, [], workdir, file_uri, ()))
    out.extend(mcp)
    return out
