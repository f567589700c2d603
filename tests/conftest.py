"""Tests that need the real Copilot CLI (``requires_cli``), Codex's ACP agent
(``requires_codex``) or Claude's (``requires_claude``) skip where it is not installed, so a
checkout without npm still runs everything else. Under CI (``CI=true``) they fail instead: a
CI run that silently skipped them would pass without testing what they test.

With AHP_CORPUS_DIR set, each test's client connections are recorded (tests/support/corpus.py),
and hypothesis draws the same examples on every run (derandomize), so that two recordings of the
same code have the same inputs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import corpus
from tests.support.acp_agents import CLAUDE_ACP, CODEX_ACP, MISSING_CLAUDE, MISSING_CODEX
from tests.support.copilot_cli import MISSING_CLI, cli_missing, under_ci


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "requires_copilot_cli: needs the Copilot CLI (skips without it, fails under CI=true)",
    )
    config.addinivalue_line(
        "markers", "requires_codex: needs codex-acp (skips without it, fails under CI=true)"
    )
    config.addinivalue_line(
        "markers",
        "requires_claude: needs claude-agent-acp (skips without it, fails under CI=true)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    missing = None
    if item.get_closest_marker("requires_copilot_cli") is not None and cli_missing():
        missing = MISSING_CLI
    elif item.get_closest_marker("requires_codex") is not None and not CODEX_ACP.is_file():
        missing = MISSING_CODEX
    elif item.get_closest_marker("requires_claude") is not None and not CLAUDE_ACP.is_file():
        missing = MISSING_CLAUDE
    if missing is None:
        return
    if under_ci():
        pytest.fail(f"{missing}; CI=true requires it", pytrace=False)
    pytest.skip(missing)


if corpus.CORPUS_DIR is not None:
    import hypothesis

    hypothesis.settings.register_profile("ahp-corpus", derandomize=True)
    hypothesis.settings.load_profile("ahp-corpus")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
        """Setup, call and teardown of one test: its connections, written when it is over."""
        corpus.begin(item.nodeid)
        yield
        corpus.end()
