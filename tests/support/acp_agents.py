"""Running ACP agents in tests: the SDK test agent, and the real agents from npm.

``sdk_agent_options`` runs ``tests/support/acp_agent.py`` (the official SDK's agent side) as
the agent subprocess. ``claude_options`` runs ``claude-code-acp`` (npm
``@zed-industries/claude-code-acp``, pinned in scripts/install-acp-agents.sh) against a
scripted Anthropic server on 127.0.0.1, and ``gemini_options`` runs ``gemini --acp`` (npm
``@google/gemini-cli``, pinned there too) against a scripted Gemini API server; each with its
home and config in a scratch directory so nothing of the machine's own setup is read or written.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.support.copilot_cli import under_ci

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


# --- Gemini CLI -----------------------------------------------------------------------------------

GEMINI_PACKAGE = REPO_ROOT / ".tools" / "acp" / "node_modules" / "@google" / "gemini-cli"
GEMINI_CLI = GEMINI_PACKAGE / "bundle" / "gemini.js"
GEMINI_MISSING = f"Gemini CLI is not installed at {GEMINI_CLI}: run scripts/install-acp-agents.sh"

#: Skips where Gemini CLI is not installed; under CI (CI=true) the test runs and fails instead
#: (``gemini_options`` says why), so a CI run cannot pass without having driven the agent.
requires_gemini = pytest.mark.skipif(
    not GEMINI_CLI.is_file() and not under_ci(), reason=GEMINI_MISSING
)

#: The model Gemini CLI is told to use: a concrete one, so no turn starts with a routing request
#: (with ``auto`` it asks ``generateContent`` which model to use before every turn).
GEMINI_MODEL = "gemini-2.5-flash"

#: Gemini CLI's user settings (``$GEMINI_CLI_HOME/.gemini/settings.json``): the gateway auth type
#: (the base URL comes from the environment), no telemetry, usage statistics, self-update or IDE
#: discovery, the working directory trusted without the interactive trust dialog, and no session
#: cleanup at start (it deletes every record that shares its id with a record it finds empty, and
#: each session/load leaves such an empty record: a reopened session would be gone after the
#: agent's next start).
GEMINI_SETTINGS: dict[str, object] = {
    "security": {"auth": {"selectedType": "gateway"}, "folderTrust": {"enabled": False}},
    "general": {
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
        "sessionRetention": {"enabled": False},
    },
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "ide": {"enabled": False},
    "model": {"name": GEMINI_MODEL},
}


def gemini_version() -> str:
    """The installed Gemini CLI's version (from its package.json)."""
    return str(json.loads((GEMINI_PACKAGE / "package.json").read_text())["version"])


def gemini_options(
    base_url: str, home: Path, settings: dict[str, object] | None = None, **extra: object
) -> dict[str, object]:
    """Provider options that run ``gemini --acp`` offline against ``base_url``.

    ``home`` becomes HOME and GEMINI_CLI_HOME, with ``settings`` (default GEMINI_SETTINGS) as its
    ``.gemini/settings.json``. Under CI a missing install fails here, with the reason.
    """
    if not GEMINI_CLI.is_file():
        pytest.fail(f"{GEMINI_MISSING}; CI=true requires it", pytrace=False)
    config = home / ".gemini"
    config.mkdir(parents=True, exist_ok=True)
    (config / "settings.json").write_text(json.dumps(settings or GEMINI_SETTINGS, indent=2))
    return {
        "command": ["node", str(GEMINI_CLI), "--acp"],
        "env": {
            "HOME": str(home),
            "GEMINI_CLI_HOME": str(home),
            "GOOGLE_GEMINI_BASE_URL": base_url,
            "GEMINI_API_KEY": "offline-test-key",
            # One process, not a launcher that re-runs itself as a child with more heap.
            "GEMINI_CLI_NO_RELAUNCH": "true",
        },
        "data_dir": str(home / "data"),
        # The machine's variables stay out (GOOGLE_* or a CI's own GEMINI_* would change its
        # auth, and it loads no .env from outside the scratch home).
        "inherit_env": False,
        **extra,
    }
