"""Title a Task's first message with a throwaway Copilot session (agentapi Titler).

The session has a replaced system message, no tools and no discovered configuration; it is
deleted whatever the outcome. Runs entirely on the SDK's asyncio thread.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from typing import Any

from ahp_bridge.agentapi import AgentAPIError, TitleRequest, TokenUsage, UtilityUsage

from .mapping import clip, parse_time
from .options import CopilotOptions
from .sdk_errors import plain_error

TITLE_SYSTEM = (
    "You write short titles for conversations between a user and a coding agent. "
    "Answer with the title only: at most eight words, no quotes, no trailing punctuation."
)
TITLE_TIMEOUT = 120.0
MAX_TEXT_BYTES = 8 << 10


def title_prompt(req: TitleRequest) -> str:
    parts = ["Write a title for a conversation that starts with this message:", ""]
    parts.append(clip(req.text, MAX_TEXT_BYTES) if req.text else "(the message has no text)")
    if req.reply:
        parts += ["", "The agent replied:", "", clip(req.reply, MAX_TEXT_BYTES)]
    return "\n".join(parts)


async def run_title(
    client: Any, opts: CopilotOptions, req: TitleRequest
) -> tuple[str, UtilityUsage | None]:
    """Create the throwaway session, ask for the title, delete the session.

    Returns the reply as it came and the summed usage (None when no call reported any).
    """
    from copilot.session import PermissionNoResult

    done = asyncio.Event()
    replies: list[str] = []
    errors: list[str] = []
    usage = UtilityUsage()

    def on_event(ev: Any) -> None:
        d = ev.to_dict()
        etype, data = d.get("type"), d.get("data") or {}
        if d.get("agentId"):
            return
        if etype == "assistant.message" and data.get("content"):
            replies.append(str(data["content"]))
        elif etype == "assistant.usage":
            call = TokenUsage(
                model=str(data.get("model") or ""),
                time=parse_time(d.get("timestamp")),
                input=int(data.get("inputTokens") or 0),
                output=int(data.get("outputTokens") or 0),
                cache_read=int(data.get("cacheReadTokens") or 0),
                cache_write=int(data.get("cacheWriteTokens") or 0),
                duration_ms=int(data.get("duration") or 0),
                cost=float(data.get("cost") or 0.0),
            )
            usage.tokens.append(call)
            usage.input_tokens += call.input
            usage.output_tokens += call.output
        elif etype == "session.error":
            errors.append(str(data.get("message") or "the model call failed"))
        elif etype == "session.idle":
            done.set()

    create: dict[str, Any] = {
        "on_permission_request": lambda r, i: PermissionNoResult(),
        "on_event": on_event,
        "system_message": {"mode": "replace", "content": TITLE_SYSTEM},
        "available_tools": [],
        "working_directory": req.workdir or opts.workdir or None,
        "enable_config_discovery": False,
        "skip_custom_instructions": True,
        "client_name": "ahp-bridge title",
        "streaming": True,
    }
    model = req.model or (opts.byok.model if opts.byok else "")
    if model:
        create["model"] = model
    provider_cfg = opts.provider_config()
    if provider_cfg is not None:
        create["provider"] = provider_cfg
    attachments = [
        {
            "type": "blob",
            "data": base64.b64encode(img.data).decode(),
            "mimeType": img.mime,
            "displayName": img.name,
        }
        for img in req.images
        if img.data
    ]
    session = None
    try:
        session = await client.create_session(**create)
        kwargs: dict[str, Any] = {"attachments": attachments} if attachments else {}
        await session.send(title_prompt(req), **kwargs)
        await asyncio.wait_for(done.wait(), TITLE_TIMEOUT)
    except TimeoutError:
        raise AgentAPIError("the title model did not answer in time") from None
    except AgentAPIError:
        raise
    except Exception as exc:
        raise AgentAPIError(plain_error("ask for a title", exc)) from None
    finally:
        if session is not None:
            with contextlib.suppress(Exception):
                await session.disconnect()
            with contextlib.suppress(Exception):
                await client.delete_session(session.session_id)
    if errors and not replies:
        raise AgentAPIError(f"could not get a title: {errors[-1]}")
    if not replies:
        raise AgentAPIError("the title model gave no answer")
    return replies[-1], (usage if usage.tokens else None)
