"""AHP part fragments built the same way by the live translator and the history rebuild."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

from ahp_bridge.agentapi import Item, Subagent, ToolCall, ToolStatus

from ._wire import META_PREFIX, drop_none

MAX_RESULT_IMAGE_BYTES = 1 << 20
"""Image bytes one tool result may embed; the actions are replayed to every client."""


def default_subagent_uri(agent_id: str) -> str:
    """The chat URI of a subagent's read-only chat, unless the host chooses another scheme."""
    return f"ahp-chat:/subagent/{quote(agent_id, safe='')}"


def subagent_ref(subagent: Subagent, chat_uri: Callable[[str], str]) -> dict[str, Any]:
    """The ``subagent`` tool result content pointing at the subagent's chat."""
    return drop_none(
        {
            "type": "subagent",
            "resource": chat_uri(subagent.id),
            "title": subagent.name or subagent.description or "Subagent",
            "agentName": subagent.name or None,
            "description": subagent.description or None,
        }
    )


def tool_result(
    item: Item, call: ToolCall, display: str, content: list[dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A finished call's ``ToolCallResult`` and the ``_meta`` facts it has no field for.

    ``content`` (e.g. subagent references) comes first, then the output as text, then images
    embedded within MAX_RESULT_IMAGE_BYTES (the others are counted in ``_meta``).
    """
    success = call.status == ToolStatus.COMPLETED
    result: dict[str, Any] = {
        "success": success,
        "pastTenseMessage": f"{display}: {'done' if success else 'failed'}",
    }
    content = list(content)
    if call.output:
        content.append({"type": "text", "text": call.output})
    images, omitted = _images(item)
    content += images
    if content:
        result["content"] = content
    if not success:
        code = str(call.exit_code) if call.exit_code is not None else None
        result["error"] = drop_none(
            {"message": call.output or "The tool call failed.", "code": code}
        )
    meta = drop_none(
        {
            f"{META_PREFIX}exitCode": call.exit_code,
            f"{META_PREFIX}fileEdits": [e.to_json() for e in call.file_edits] or None,
            f"{META_PREFIX}imagesOmitted": omitted or None,
        }
    )
    return result, meta


def _images(item: Item) -> tuple[list[dict[str, Any]], int]:
    out: list[dict[str, Any]] = []
    budget = MAX_RESULT_IMAGE_BYTES
    omitted = 0
    for image in item.images:
        if not image.data or not image.mime or len(image.data) > budget:
            omitted += 1
            continue
        budget -= len(image.data)
        data = base64.b64encode(image.data).decode("ascii")
        out.append({"type": "embeddedResource", "data": data, "contentType": image.mime})
    return out, omitted
