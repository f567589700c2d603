"""Running ACP agents in tests: the SDK test agent, and the real Claude Code agent from npm.

``sdk_agent_options`` runs ``tests/support/acp_agent.py`` (the official SDK's agent side) as
the agent subprocess. ``claude_options`` runs ``claude-code-acp`` (npm
``@zed-industries/claude-code-acp``, pinned in scripts/install-acp-agents.sh) against a
scripted Anthropic server on 127.0.0.1, with its home and config in a scratch directory so
nothing of the machine's own Claude setup is read or written.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TEST_AGENT = REPO_ROOT / "tests" / "support" / "acp_agent.py"
CLAUDE_ACP = (
    REPO_ROOT
    / ".tools"
    / "acp"
    / "node_modules"
    / "@zed-industries"
    / "claude-code-acp"
    / "dist"
    / "index.js"
)

requires_claude = pytest.mark.skipif(
    not CLAUDE_ACP.is_file(),
    reason="claude-code-acp is not installed: run scripts/install-acp-agents.sh",
)


def sdk_agent_options(store: Path, **extra: object) -> dict[str, object]:
    """Provider options that run the SDK test agent, its sessions kept under ``store``."""
    return {
        "command": [sys.executable, str(TEST_AGENT)],
        "env": {"ACP_TEST_STORE": str(store), "PYTHONPATH": str(REPO_ROOT)},
        "data_dir": str(store / "data"),
        **extra,
    }


def claude_options(base_url: str, home: Path, **extra: object) -> dict[str, object]:
    """Provider options that run claude-code-acp offline against ``base_url``."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        "command": ["node", str(CLAUDE_ACP)],
        "env": {
            "HOME": str(home),
            "CLAUDE_CONFIG_DIR": str(home / ".claude"),
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": "sk-ant-offline-test",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        },
        "data_dir": str(home / "data"),
        # Only PATH, HOME and the like: the machine's own variables stay out (IS_SANDBOX, for
        # one, makes claude-code-acp ask Claude Code for a mode that root may not use).
        "inherit_env": False,
        **extra,
    }
