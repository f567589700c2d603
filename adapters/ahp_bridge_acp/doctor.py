"""``ahp-bridge doctor --provider NAME`` for an ACP agent.

Says whether the command is found, whether it starts and answers ``initialize`` (and how
fast), what it supports, which sign-in it offers, whether it has credentials it can use (a
warning when not: a session opens, but every prompt fails) and whether a session opens. A
failure shows the newest lines of the agent's stderr (kept bounded by ``stderr_bytes``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import trio

from ahp_bridge.agentapi import AgentAPIError, SignedOut

from . import credentials
from .options import AcpOptions, OptionsError
from .provider import AcpProvider, auth_hint

Line = tuple[bool | None, str, str]
"""(ok, what, how to fix); ok None is a warning (shown, not failed)."""

STDERR_LINES = 8


def _stderr_hint(provider: AcpProvider) -> str:
    lines = [line for line in provider.stderr_tail().splitlines() if line.strip()]
    if not lines:
        return "the agent wrote nothing to stderr"
    shown = "\n      | ".join(line[:200] for line in lines[-STDERR_LINES:])
    return f"its stderr ends with:\n      | {shown}"


def report(options: Mapping[str, Any]) -> list[Line]:
    try:
        opts = AcpOptions.parse(options)
    except OptionsError as exc:
        return [(False, "the provider's options are not valid", str(exc))]
    exe = opts.executable()
    if exe is None:
        return [
            (
                False,
                f"the agent command {opts.command[0]!r} is not found",
                "install the agent, or set `command` to its full path",
            )
        ]
    lines: list[Line] = [(True, f"the agent command is {exe}", "")]

    async def probe() -> list[Line]:
        provider = AcpProvider(opts)
        async with provider:
            started = time.monotonic()
            try:
                with trio.fail_after(opts.start_timeout + 5):
                    await provider.check()
            except (AgentAPIError, trio.TooSlowError) as exc:
                return [
                    (
                        False,
                        "the agent does not answer initialize",
                        f"{exc}; {_stderr_hint(provider)}",
                    )
                ]
            took = provider.start_seconds or time.monotonic() - started
            init = provider.initialize_result
            assert init is not None
            info = init.agent_info
            who = f"{info.title or info.name} {info.version}" if info else "an unnamed agent"
            out: list[Line] = [
                (
                    True,
                    f"it answers initialize: {who}, ACP {init.protocol_version}, in {took:.2f}s",
                    "",
                )
            ]
            caps = init.agent_capabilities
            prompt = caps.prompt_capabilities if caps else None
            out.append(
                (
                    True,
                    "it can "
                    + ("" if caps and caps.load_session else "not ")
                    + "reopen sessions (session/load); images in prompts: "
                    + ("yes" if prompt and prompt.image else "no"),
                    "",
                )
            )
            methods = list(init.auth_methods or [])
            ids = [getattr(getattr(m, "root", m), "id", "") for m in methods]
            if methods:
                out.append((True, f"sign-in methods it offers: {', '.join(ids)}", ""))
            else:
                out.append((True, "it offers no sign-in methods", ""))
            verdict = credentials.check(info.name if info else "", methods, opts.environment())
            if verdict is not None:
                found, what, fix = verdict
                out.append((True if found else None, what, fix))
            try:
                with trio.fail_after(opts.request_timeout + 5):
                    models = await provider.models()
                out.append((True, f"a session opens; {len(models)} models offered", ""))
            except SignedOut:
                out.append((False, "it needs a sign-in before a session opens", auth_hint(methods)))
            except (AgentAPIError, trio.TooSlowError) as exc:
                out.append((False, "opening a session failed", f"{exc}; {_stderr_hint(provider)}"))
            return out

    return lines + trio.run(probe)
