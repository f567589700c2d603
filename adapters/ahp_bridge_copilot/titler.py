"""Title a Task's first message with a throwaway Copilot session (agentapi Titler).

The session has a replaced system message, no tools and no discovered configuration; it is
deleted whatever the outcome (``throwaway.run_throwaway``). Runs entirely on the SDK's asyncio
thread.
"""

from __future__ import annotations

from typing import Any

from ahp_bridge.agentapi import TitleRequest, UtilityUsage

from .mapping import clip
from .options import CopilotOptions
from .throwaway import Throwaway, run_throwaway

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
    job = Throwaway(
        purpose="title",
        system=TITLE_SYSTEM,
        prompt=title_prompt(req),
        model=req.model,
        workdir=req.workdir,
        images=list(req.images),
        timeout=TITLE_TIMEOUT,
    )
    return await run_throwaway(client, opts, job)
