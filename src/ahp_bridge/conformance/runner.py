"""Runs checks against a target: a fresh provider per check, bounded in time."""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Iterable

import trio

from ahp_bridge.conformance.checks import CHECKS, Check
from ahp_bridge.conformance.driver import CheckFailed, Context, NotApplicable, error_name
from ahp_bridge.conformance.report import CheckResult, Outcome, Report
from ahp_bridge.conformance.target import Target


def _flatten(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _flatten(sub)]
    return [exc]


def _outcome_of(exc: BaseException) -> tuple[Outcome, str]:
    """Map what a check raised to its outcome; an exception group counts its first verdict."""
    leaves = _flatten(exc)
    for leaf in leaves:
        if isinstance(leaf, CheckFailed):
            return Outcome.FAIL, str(leaf)
    for leaf in leaves:
        if isinstance(leaf, NotApplicable):
            return Outcome.NOT_APPLICABLE, str(leaf)
    return Outcome.FAIL, f"unexpected {error_name(leaves[0])}"


async def run_check(target: Target, check: Check) -> CheckResult:
    """Run one check against a freshly started provider and return its result.

    Every exception the provider raises becomes a failure with its reason; the check is
    bounded by ``target.timeout`` and a check that runs out reports what it waited for. A
    target whose ``open_request`` names no workdir gets a scratch directory for the check,
    removed afterwards (the edit scenario writes there), so nothing is left behind.
    """
    if not target.open_request.workdir:
        with tempfile.TemporaryDirectory(prefix="ahp-conformance-") as scratch:
            request = target.open_request.model_copy(update={"workdir": scratch})
            return await run_check(dataclasses.replace(target, open_request=request), check)
    ctx = Context(target)
    started = time.monotonic()
    outcome, reason = Outcome.PASS, ""
    try:
        with trio.move_on_after(target.timeout) as scope:
            async with target.factory() as provider:
                ctx.provider = provider
                try:
                    note = await check.run(ctx)
                finally:
                    await ctx.close_all()
                ctx.step = "waiting for the provider to shut down"
            ctx.step = "judging what happened before shutdown"
            for judge in ctx.after_shutdown:
                judge()
            reason = note or ""
        if scope.cancelled_caught:
            outcome = Outcome.FAIL
            reason = f"timed out after {target.timeout:g}s {ctx.step}"
    except Exception as exc:  # a provider error is a verdict
        outcome, reason = _outcome_of(exc)
    return CheckResult(check.name, outcome, reason, time.monotonic() - started)


async def run(target: Target, checks: Iterable[Check] = CHECKS) -> Report:
    """Run ``checks`` (all by default) one after another and report every result."""
    results = [await run_check(target, check) for check in checks]
    return Report(target.name, tuple(results))
