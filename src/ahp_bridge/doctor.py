"""`ahp-bridge doctor --provider NAME`: what is present, what is missing, and how to fix it.

An adapter may ship its own checks as `<adapter package>.doctor.report(options)` returning
`(ok, what, how_to_fix)` lines (the copilot adapter does); any other provider gets the contract's
own check: start it, `check()`, and list its models.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

import trio

from ahp_bridge import agentapi, providers

Line = tuple[bool | None, str, str]
"""(ok, what, how to fix); ok None is a warning: shown with its fix, the exit code stays 0."""


def _adapter_report(name: str) -> Callable[[Mapping[str, Any]], list[Line]] | None:
    for ep in entry_points(group=providers.GROUP):
        if ep.name == name:
            package = ep.value.split(":", 1)[0]
            try:
                module = importlib.import_module(f"{package}.doctor")
            except ModuleNotFoundError:
                return None
            report: Callable[[Mapping[str, Any]], list[Line]] | None = getattr(
                module, "report", None
            )
            return report
    return None


def generic_report(name: str, options: Mapping[str, Any]) -> list[Line]:
    """Start the provider, run its Check and list its models."""

    async def probe() -> list[Line]:
        lines: list[Line] = []
        try:
            provider = providers.create(name, options)
        except Exception as exc:  # a bad option is the operator's to fix
            return [(False, f"provider {name!r} could not be created", str(exc))]
        lines.append((True, f"provider {name!r} is installed ({provider.display_name()})", ""))
        async with provider:
            try:
                with trio.fail_after(60):
                    await provider.check()
                lines.append((True, "the runtime is present and compatible", ""))
            except agentapi.SignedOut as exc:
                lines.append((False, "the runtime is signed out", str(exc)))
            except Exception as exc:
                lines.append((False, "the runtime check failed", str(exc)))
            try:
                with trio.fail_after(60):
                    models = await provider.models()
                lines.append((True, f"{len(models)} models offered", ""))
            except agentapi.Unsupported:
                lines.append((True, "the provider offers only its default model", ""))
            except Exception as exc:
                lines.append((False, "listing models failed", str(exc)))
        return lines

    return trio.run(probe)


def run_doctor(name: str, options: Mapping[str, Any]) -> int:
    """Print the report; exit code 0 only when no line failed (warnings do not).

    `name` is a configured provider; its `kind` option (if any) names the adapter.
    """
    kind = providers.kind_of(name, options)
    if kind not in providers.available():
        print(f"ahp-bridge: {providers.UnknownProvider(kind, instance=name)}", file=sys.stderr)
        return 1
    report = _adapter_report(kind)
    opts = {k: v for k, v in options.items() if k != "kind"}
    lines = report(opts) if report is not None else generic_report(kind, opts)
    for ok, what, fix in lines:
        print(f"{'ok  ' if ok else 'WARN' if ok is None else 'FAIL'}  {what}")
        if not ok and fix:
            print(f"      fix: {fix}")
    return 0 if all(ok is not False for ok, _, _ in lines) else 1
