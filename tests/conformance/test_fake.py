"""The fake provider against every conformance check, one pytest item per check."""

from __future__ import annotations

import pytest

from ahp_bridge.conformance import CHECKS, Check, Outcome, fake_target, run_check


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
async def test_fake_keeps_the_contract(check: Check) -> None:
    result = await run_check(fake_target(), check)
    assert result.outcome is Outcome.PASS, result.line()
