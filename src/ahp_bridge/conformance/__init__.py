"""The adapter conformance suite: checks that any Provider keeps the agentapi contract.

Describe a provider with a :class:`Target`: a factory that returns an async context
manager yielding a started provider (called once per check, so checks never share
state), an OpenRequest template, and the provider-specific :class:`Prompts` for the
scenarios (a plain answer, a turn that runs until cancelled, a permission request, a
question, optionally a runtime exit). Then::

    report = await run(target)          # every check, one after another
    print(report.format())              # one PASS/FAIL/N/A line per check, with reasons

or, from pytest, one item per check::

    @pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
    async def test_my_provider(check: Check) -> None:
        result = await run_check(my_target(), check)
        assert result.outcome is Outcome.PASS, result.line()

``fake_target()`` is the fake provider's Target; ``ahp_bridge.conformance.cli.main`` is
the ``ahp-bridge conformance`` command. The checks judge the contract only (events,
their order and shape, and the errors calls raise), never a provider's wording.
"""

from ahp_bridge.conformance.checks import CHECKS, CHECKS_BY_NAME, Check
from ahp_bridge.conformance.fake import FAKE_PROMPTS, fake_target
from ahp_bridge.conformance.report import CheckResult, Outcome, Report
from ahp_bridge.conformance.runner import run, run_check
from ahp_bridge.conformance.sink import RecordingSink
from ahp_bridge.conformance.target import HOST_TOOL, Prompts, ProviderFactory, Target

__all__ = [
    "CHECKS",
    "CHECKS_BY_NAME",
    "FAKE_PROMPTS",
    "HOST_TOOL",
    "Check",
    "CheckResult",
    "Outcome",
    "Prompts",
    "ProviderFactory",
    "RecordingSink",
    "Report",
    "Target",
    "fake_target",
    "run",
    "run_check",
]
