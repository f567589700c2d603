"""Tests that need the real Copilot CLI (``requires_cli``) skip where it is not installed, so a
checkout without npm still runs everything else. Under CI (``CI=true``) they fail instead: a CI
run that silently skipped the Copilot tests would pass without testing the Copilot provider."""

from __future__ import annotations

import pytest

from tests.support.copilot_cli import MISSING_CLI, cli_missing, under_ci


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires_copilot_cli: needs the Copilot CLI (skips without it, fails under CI=true)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("requires_copilot_cli") is None or not cli_missing():
        return
    if under_ci():
        pytest.fail(f"{MISSING_CLI}; CI=true requires it", pytrace=False)
    pytest.skip(MISSING_CLI)
