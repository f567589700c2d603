"""The adapter conformance suite: checks that any Provider keeps the agentapi contract.

Describe a provider with a :class:`Target` (a factory for a started provider, an
OpenRequest template, and prompts for the scenarios), then ``await run(target)`` for a
:class:`Report`, or run single checks from pytest with :func:`run_check` over
:data:`CHECKS`. ``ahp_bridge.conformance.cli.main`` is the ``ahp-bridge conformance``
command.
"""

from ahp_bridge.conformance.checks import CHECKS, CHECKS_BY_NAME, Check
from ahp_bridge.conformance.fake import FAKE_PROMPTS, fake_target
from ahp_bridge.conformance.report import CheckResult, Outcome, Report
from ahp_bridge.conformance.runner import run, run_check
from ahp_bridge.conformance.sink import RecordingSink
from ahp_bridge.conformance.target import Prompts, ProviderFactory, Target

__all__ = [
    "CHECKS",
    "CHECKS_BY_NAME",
    "FAKE_PROMPTS",
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
