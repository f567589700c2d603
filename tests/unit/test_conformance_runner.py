"""The runner's verdicts: time bounds, provider errors, not-applicable, and the report."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from ahp_bridge.agentapi import Busy, OpenRequest, Provider
from ahp_bridge.conformance import Check, CheckResult, Outcome, Prompts, Report, Target, run
from ahp_bridge.conformance.driver import CheckFailed, Context, NotApplicable
from ahp_bridge.conformance.runner import run_check
from tests.conformance.targets import toy_target
from tests.conformance.toy import Options, ToyProvider


async def test_a_hung_check_fails_with_what_it_waited_for() -> None:
    async def hang(ctx: Context) -> str | None:
        ctx.step = "waiting for the moon"
        await trio.sleep_forever()
        return None

    target = toy_target()
    target = Target(target.name, target.factory, target.open_request, target.prompts, 0.05)
    result = await run_check(target, Check("hang", "never returns", hang))
    assert result.outcome is Outcome.FAIL
    assert result.reason == "timed out after 0.05s waiting for the moon"


async def test_provider_errors_become_failures_with_their_reason() -> None:
    async def busy(ctx: Context) -> str | None:
        raise Busy("still going")

    async def oops(ctx: Context) -> str | None:
        raise RuntimeError("boom")

    async def grouped(ctx: Context) -> str | None:
        raise ExceptionGroup("g", [ValueError("x"), CheckFailed("the real verdict")])

    target = toy_target()
    results = [await run_check(target, Check(fn.__name__, "", fn)) for fn in (busy, oops, grouped)]
    assert [(r.outcome, r.reason) for r in results] == [
        (Outcome.FAIL, "unexpected Busy (busy: still going)"),
        (Outcome.FAIL, "unexpected RuntimeError: boom"),
        (Outcome.FAIL, "the real verdict"),
    ]


async def test_a_provider_that_fails_to_start_fails_the_check() -> None:
    @asynccontextmanager
    async def broken() -> AsyncIterator[Provider]:
        raise OSError("runtime binary missing")
        yield ToyProvider()  # pragma: no cover - unreachable

    async def never(ctx: Context) -> str | None:  # pragma: no cover - not reached
        raise AssertionError("the check ran without a provider")

    target = Target("broken", broken, OpenRequest(), Prompts(), 1.0)
    result = await run_check(target, Check("start", "", never))
    assert (result.outcome, result.reason) == (
        Outcome.FAIL,
        "unexpected OSError: runtime binary missing",
    )


async def test_not_applicable_and_notes_are_reported() -> None:
    async def skip(ctx: Context) -> str | None:
        raise NotApplicable("Capabilities.plan is false")

    async def noted(ctx: Context) -> str | None:
        return "3 models"

    report = await run(toy_target(), [Check("skip", "", skip), Check("noted", "", noted)])
    assert report.passed
    assert report.format().splitlines() == [
        "conformance: toy",
        "N/A  skip: Capabilities.plan is false",
        "PASS noted: 3 models",
        "1 passed, 0 failed, 1 not applicable",
    ]


async def test_open_conversations_are_closed_after_a_check() -> None:
    open_at_exit: list[int] = []

    @asynccontextmanager
    async def tracked() -> AsyncIterator[Provider]:
        async with ToyProvider(Options()) as provider:
            try:
                yield provider
            finally:
                open_at_exit.append(len(provider._open))

    async def leave_open(ctx: Context) -> str | None:
        conv = await ctx.open()
        await conv.send("long")
        await conv.wait_working(0)
        raise CheckFailed("stopped midway")

    target = Target("toy", tracked, OpenRequest(), Prompts(), 2.0)
    result = await run_check(target, Check("leave", "", leave_open))
    assert result.reason == "stopped midway"
    assert open_at_exit == [0]


def test_report_lines_and_verdict() -> None:
    report = Report(
        "x",
        (
            CheckResult("a", Outcome.PASS),
            CheckResult("b", Outcome.FAIL, "it broke"),
        ),
    )
    assert not report.passed
    assert [r.line() for r in report.results] == ["PASS a", "FAIL b: it broke"]
    assert report.format().endswith("1 passed, 1 failed, 0 not applicable")


async def test_a_provider_that_hangs_in_shutdown_fails_the_check() -> None:
    @asynccontextmanager
    async def hangs_on_exit() -> AsyncIterator[Provider]:
        async with ToyProvider(Options()) as provider:
            yield provider
            await trio.sleep_forever()

    async def fine(ctx: Context) -> str | None:
        return None

    target = Target("toy", hangs_on_exit, OpenRequest(), Prompts(), 0.05)
    result = await run_check(target, Check("fine", "", fine))
    assert (result.outcome, result.reason) == (
        Outcome.FAIL,
        "timed out after 0.05s waiting for the provider to shut down",
    )
