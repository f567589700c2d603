"""Client tools as the provider's host tools, and their results: the pure half of the mapping.

An AHP active client (``SessionActiveClient``) offers ``ToolDefinition``s that the client itself
runs, such as VS Code's ``usages``, ``rename`` and ``toolSearch``. The bridge registers them in
the provider's conversation as agentapi ``HostTool``s (``OpenRequest.tools``); a call the model
makes comes back through ``OpenRequest.call_tool`` and becomes an AHP tool call contributed by
that client, which completes it with ``chat/toolCallComplete``.

This module decides which offered tools a conversation registers (``plan_tools``: every refusal
carries its reason, shown in session ``_meta["ahpBridge.hostTools"]``) and turns a client's AHP
``ToolCallResult`` into the ``HostToolResult`` the model sees (``host_result``). It does no I/O;
the waiting lives in ``host/client_tools.py``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ahp_bridge.agentapi import HostTool, HostToolResult

from ._wire import META_PREFIX

__all__ = [
    "HOST_TOOLS_META_KEY",
    "OfferedTool",
    "Refusal",
    "ToolPlan",
    "execution_input_id",
    "failed_result",
    "host_result",
    "plan_tools",
]

HOST_TOOLS_META_KEY = f"{META_PREFIX}hostTools"
"""Session ``_meta`` key: the client tools the conversation registered and those it refused."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class OfferedTool:
    """One client tool the conversation registers: its owner, the HostTool and a display name."""

    client_id: str
    tool: HostTool
    display: str


@dataclass(frozen=True)
class Refusal:
    """An offered tool the conversation does not register, and why (one sentence)."""

    client_id: str
    name: str
    reason: str


@dataclass(frozen=True)
class ToolPlan:
    """The host tools of one conversation, and the offered tools it refused."""

    tools: tuple[OfferedTool, ...] = ()
    refused: tuple[Refusal, ...] = ()

    def host_tools(self) -> list[HostTool]:
        return [offered.tool for offered in self.tools]

    def owners(self) -> dict[str, OfferedTool]:
        return {offered.tool.name: offered for offered in self.tools}

    def key(self) -> tuple[tuple[str, str, str, str], ...]:
        """What the provider was told: equal keys need no reopen."""
        return tuple(
            (o.client_id, o.tool.name, o.tool.description, json.dumps(o.tool.parameters))
            for o in self.tools
        )

    def meta(self) -> dict[str, Any]:
        """The session ``_meta`` value: registered tools and refusals with their reasons."""
        return {
            "registered": [{"name": o.tool.name, "clientId": o.client_id} for o in self.tools],
            "refused": [
                {"name": r.name, "clientId": r.client_id, "reason": r.reason} for r in self.refused
            ],
        }


def plan_tools(
    active_clients: Sequence[Any],
    *,
    supported: bool,
    provider: str,
    clashes: Mapping[str, str] | None = None,
    max_tools: int = 128,
) -> ToolPlan:
    """The tools a conversation registers from the session's ``activeClients``, in order.

    ``supported`` is the provider's ``Capabilities.host_tools``. ``clashes`` maps names the
    provider refused (its own tools' names) to its reason. The first client to offer a name
    keeps it; a name must be what model APIs accept (1 to 64 of ``A-Za-z0-9_-``).
    """
    clashes = clashes or {}
    tools: list[OfferedTool] = []
    refused: list[Refusal] = []
    owners: dict[str, str] = {}
    for client in active_clients:
        if not isinstance(client, dict) or not isinstance(client.get("clientId"), str):
            continue
        client_id = client["clientId"]
        for definition in client.get("tools") or []:
            name = definition.get("name") if isinstance(definition, dict) else None
            if not isinstance(name, str):
                continue

            reason = _refusal(name, client_id, owners, clashes, supported, provider)
            if reason is None and len(tools) >= max_tools:
                reason = (
                    f"the session already registers {max_tools} client tools "
                    "(client_tools.max_tools)"
                )
            if reason is not None:
                refused.append(Refusal(client_id, name, reason))
            else:
                owners[name] = client_id
                tools.append(_offered(client_id, name, definition))
    return ToolPlan(tuple(tools), tuple(refused))


def _refusal(
    name: str,
    client_id: str,
    owners: Mapping[str, str],
    clashes: Mapping[str, str],
    supported: bool,
    provider: str,
) -> str | None:
    if not supported:
        return f"the {provider} provider cannot register client tools (no host tools)"
    if not _NAME.fullmatch(name):
        return "a tool name must be 1 to 64 letters, digits, '_' or '-'"
    if name in owners:
        other = owners[name]
        if other == client_id:
            return "this client already offers a tool of that name"
        return f"client {other} already offers a tool of that name"
    return clashes.get(name)


def _offered(client_id: str, name: str, definition: dict[str, Any]) -> OfferedTool:
    schema = definition.get("inputSchema")
    description = definition.get("description")
    title = definition.get("title")
    display = title if isinstance(title, str) and title.strip() else name
    tool = HostTool(
        name=name,
        description=description if isinstance(description, str) else display,
        parameters=dict(schema) if isinstance(schema, dict) else dict(_EMPTY_SCHEMA),
    )
    return OfferedTool(client_id, tool, display)


def execution_input_id(chat_uri: str, tool_call_id: str) -> str:
    """The session input-request id of one client tool call (unique in the session)."""
    return f"{chat_uri}#tool/{tool_call_id}"


def failed_result(message: str, display: str) -> tuple[HostToolResult, dict[str, Any]]:
    """A failed call: what the model sees and the AHP ``ToolCallResult`` the host records."""
    result = {
        "success": False,
        "pastTenseMessage": f"{display}: failed",
        "error": {"message": message},
    }
    return HostToolResult(text=message, failed=True, payload=_json(result)), result


def host_result(result: Mapping[str, Any], *, max_bytes: int) -> HostToolResult:
    """What the model sees of a client's ``ToolCallResult``; the whole result is the payload.

    The text is the result's text content, in order (other content is named, not inlined),
    else its ``structuredContent`` as JSON, else its past-tense message; a failure leads with
    its error message. Text beyond ``max_bytes`` (UTF-8) is cut, and the cut is said.
    """
    parts = [_content_text(c) for c in result.get("content") or [] if isinstance(c, dict)]
    text = "\n".join(p for p in parts if p)
    structured = result.get("structuredContent")
    if not text and isinstance(structured, dict) and structured:
        text = json.dumps(structured, ensure_ascii=False)
    if not text:
        text = _plain(result.get("pastTenseMessage"))
    failed = result.get("success") is not True
    if failed:
        error = result.get("error")
        message = error.get("message") if isinstance(error, dict) else None
        reason = message if isinstance(message, str) and message else "The client tool failed."
        text = reason if not text or text == reason else f"{reason}\n{text}"
    data = text.encode("utf-8")
    if len(data) > max_bytes:
        kept = data[:max_bytes].decode("utf-8", errors="ignore")
        text = (
            f"{kept}\n[The client's result was cut at {max_bytes} of its {len(data)} bytes "
            "(client_tools.max_result_bytes).]"
        )
    return HostToolResult(text=text, failed=failed, payload=_json(dict(result)))


def _content_text(content: dict[str, Any]) -> str:
    kind = content.get("type")
    if kind == "text":
        text = content.get("text")
        return text if isinstance(text, str) else ""
    if kind == "resource" and isinstance(content.get("uri"), str):
        return f"[resource {content['uri']}]"
    return f"[{kind} content]" if isinstance(kind, str) else ""


def _plain(value: Any) -> str:
    """A ``StringOrMarkdown`` as text."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("markdown"), str):
        return str(value["markdown"])
    return ""


def _json(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
