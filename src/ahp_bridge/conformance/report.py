"""Check outcomes and the readable report the runner and the CLI print."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass


class Outcome(enum.StrEnum):
    """How one check ended for one target."""

    PASS = "pass"
    FAIL = "fail"
    NOT_APPLICABLE = "n/a"


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome; ``reason`` says why it failed or did not apply."""

    check: str
    outcome: Outcome
    reason: str = ""
    seconds: float = 0.0

    def line(self, *, seconds: bool = False) -> str:
        """One report line: outcome, check name, the reason when there is one, time if asked."""
        text = f"{self.outcome.value.upper():<4} {self.check}"
        if seconds:
            text += f" ({self.seconds:.2f}s)"
        return f"{text}: {self.reason}" if self.reason else text


@dataclass(frozen=True)
class Report:
    """All check results for one target, in the order the checks ran."""

    target: str
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """True when no check failed (not-applicable checks do not fail a target)."""
        return all(r.outcome is not Outcome.FAIL for r in self.results)

    def count(self, outcome: Outcome) -> int:
        """How many checks ended with ``outcome``."""
        return sum(1 for r in self.results if r.outcome is outcome)

    def failures(self) -> Sequence[CheckResult]:
        """The failed checks, in run order."""
        return [r for r in self.results if r.outcome is Outcome.FAIL]

    def format(self, *, seconds: bool = False) -> str:
        """The report as text: one line per check (with durations if asked), then a summary."""
        lines = [f"conformance: {self.target}"]
        lines.extend(r.line(seconds=seconds) for r in self.results)
        lines.append(
            f"{self.count(Outcome.PASS)} passed, {self.count(Outcome.FAIL)} failed, "
            f"{self.count(Outcome.NOT_APPLICABLE)} not applicable"
        )
        return "\n".join(lines)
