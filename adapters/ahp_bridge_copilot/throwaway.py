"""One throwaway Copilot session: a replaced system message, no discovered configuration, only
the tools asked for; deleted whatever the outcome. Titles (titler.py) and utility calls
(agentapi UtilityRunner) run here. Runs entirely on the SDK's asyncio thread.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from dataclasses import dataclass, field
from typing import Any

from ahp_bridge.agentapi import AgentAPIError, Blob, UtilityUsage

from .mapping import parse_time, token_usage
from .options import CopilotOptions
from .sdk_errors import plain_error


@dataclass
class Throwaway:
    """What one throwaway session is asked."""

    purpose: str
    system: str
    prompt: str
    model: str = ""
    workdir: str = ""
    images: list[Blob] = field(default_factory=list)
    timeout: float = 120.0
    tools: list[Any] = field(default_factory=list)
    """SDK ``Tool``s: the session's only tools (none: no tools at all)."""
    response_schema: dict[str, Any] | None = None


def _reject_permission(request: Any, invocation: Any) -> Any:
    """Every permission a throwaway session asks for is rejected (the contract's rule)."""
    from copilot.generated.rpc import PermissionDecisionReject

    return PermissionDecisionReject(feedback="permissions are not available to this call")


async def run_throwaway(
    client: Any, opts: CopilotOptions, job: Throwaway
) -> tuple[str, UtilityUsage | None]:
    """Create the session, send the prompt, wait for idle, delete the session.

    Returns the model's last reply as it came and the summed usage (None when no call reported
    any). A failed model call with no reply, no reply at all, or no idle in time is an
    AgentAPIError.
    """
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
            call = token_usage(data, parse_time(d.get("timestamp")))
            usage.tokens.append(call)
            usage.input_tokens += call.input
            usage.output_tokens += call.output
        elif etype == "session.error":
            errors.append(str(data.get("message") or "the model call failed"))
        elif etype == "session.idle":
            done.set()

    create: dict[str, Any] = {
        "on_permission_request": _reject_permission,
        "on_event": on_event,
        "system_message": {"mode": "replace", "content": job.system},
        "available_tools": [tool.name for tool in job.tools],
        "working_directory": job.workdir or opts.workdir or None,
        "enable_config_discovery": False,
        "skip_custom_instructions": True,
        "client_name": f"ahp-bridge {job.purpose}",
        "streaming": True,
    }
    if job.tools:
        create["tools"] = list(job.tools)
    model = job.model or (opts.byok.model if opts.byok else "")
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
        for img in job.images
        if img.data
    ]
    session = None
    try:
        session = await client.create_session(**create)
        kwargs: dict[str, Any] = {"attachments": attachments} if attachments else {}
        if job.response_schema is not None:
            kwargs["response_schema"] = job.response_schema
        await session.send(job.prompt, **kwargs)
        await asyncio.wait_for(done.wait(), job.timeout)
    except TimeoutError:
        raise AgentAPIError(f"the {job.purpose} model did not answer in time") from None
    except AgentAPIError:
        raise
    except Exception as exc:
        raise AgentAPIError(plain_error(f"run the {job.purpose} call", exc)) from None
    finally:
        if session is not None:
            with contextlib.suppress(Exception):
                await session.disconnect()
            with contextlib.suppress(Exception):
                await client.delete_session(session.session_id)
    if errors and not replies:
        raise AgentAPIError(f"the {job.purpose} call failed: {errors[-1]}")
    if not replies:
        raise AgentAPIError(f"the {job.purpose} model gave no answer")
    return replies[-1], (usage if usage.tokens else None)
