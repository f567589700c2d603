"""Running ACP agents in tests: the SDK test agent, and the real agents from npm.

``sdk_agent_options`` runs ``tests/support/acp_agent.py`` (the official SDK's agent side) as
the agent subprocess. ``claude_options`` runs ``claude-agent-acp`` (npm
``@zed-industries/claude-agent-acp``, pinned in scripts/install-acp-agents.sh) against a
scripted Anthropic server on 127.0.0.1; ``codex_options`` does the same for ``codex-acp`` (npm
``@zed-industries/codex-acp``) against a scripted OpenAI Responses API server, with
``CODEX_HOME`` and its ``config.toml`` in a scratch directory; and ``gemini_options`` runs
``gemini --acp`` (npm ``@google/gemini-cli``, pinned there too) against a scripted Gemini API
server; each with its home and config in a scratch directory so nothing of the machine's own
setup is read or written.
"""

from __future__ import annotations

import json
import platform
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
    / "claude-agent-acp"
    / "dist"
    / "index.js"
)

_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}
#: The native binary npm installs for this platform (the package's bin/codex-acp.js only finds
#: and spawns it, so the tests run it directly).
CODEX_ACP = (
    REPO_ROOT
    / ".tools"
    / "acp"
    / "node_modules"
    / "@zed-industries"
    / f"codex-acp-{sys.platform}-{_ARCH.get(platform.machine().lower(), platform.machine())}"
    / "bin"
    / "codex-acp"
)
MISSING_CODEX = f"codex-acp is not installed at {CODEX_ACP} (run scripts/install-acp-agents.sh)"
#: Skips without codex-acp, fails under CI=true (tests/conftest.py).
requires_codex = pytest.mark.requires_codex
#: The model Codex is told to use: one it knows, so it neither warns inside the answer (it
#: does for a model without metadata) nor leaves out its own apply_patch tool.
CODEX_MODEL = "gpt-5.3-codex"

MISSING_CLAUDE = (
    f"claude-agent-acp is not installed at {CLAUDE_ACP} (run scripts/install-acp-agents.sh)"
)
#: Skips without claude-agent-acp, fails under CI=true (tests/conftest.py).
requires_claude = pytest.mark.requires_claude


def sdk_agent_options(store: Path, **extra: object) -> dict[str, object]:
    """Provider options that run the SDK test agent, its sessions kept under ``store``."""
    return {
        "command": [sys.executable, str(TEST_AGENT)],
        "env": {"ACP_TEST_STORE": str(store), "PYTHONPATH": str(REPO_ROOT)},
        "data_dir": str(store / "data"),
        **extra,
    }


def claude_options(base_url: str, home: Path, **extra: object) -> dict[str, object]:
    """Provider options that run claude-agent-acp offline against ``base_url``."""
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
        # Only PATH, HOME and the like: the machine's own variables stay out (a real
        # ANTHROPIC_API_KEY or CLAUDE_CONFIG_DIR, say, or IS_SANDBOX, which as root adds a
        # bypassPermissions mode).
        "inherit_env": False,
        # claude-agent-acp with a session open does not exit when its stdin closes (the 3 s
        # default grace would pass on every stop); it does at SIGTERM, at once.
        "stop_grace": 0.0,
        **extra,
    }


def codex_config(base_url: str, model: str = CODEX_MODEL) -> str:
    """``$CODEX_HOME/config.toml`` for a Responses API at ``base_url``, nothing else reached.

    ``approval_policy = "untrusted"`` makes Codex ask (``session/request_permission``) before
    any command that is not known to be read-only and before every patch;
    ``sandbox_mode = "danger-full-access"`` because Codex's Linux sandbox needs bubblewrap,
    without which every sandboxed command and patch fails. No retries: a failure is final.
    """
    return f"""model = "{model}"
model_provider = "local"
approval_policy = "untrusted"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
web_search = "disabled"

[analytics]
enabled = false

[model_providers.local]
name = "Local model server"
base_url = "{base_url}"
wire_api = "responses"
env_key = "CODEX_LOCAL_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"""


def codex_options(base_url: str, home: Path, **extra: object) -> dict[str, object]:
    """Provider options that run codex-acp offline against the Responses API at ``base_url``."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(codex_config(base_url))
    return {
        "command": [str(CODEX_ACP)],
        "env": {
            "HOME": str(home),
            "CODEX_HOME": str(codex_home),
            "CODEX_LOCAL_API_KEY": "sk-offline-test",
            # Anything that still tried the network would meet a closed port on 127.0.0.1.
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "HTTP_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost",
        },
        "data_dir": str(home / "data"),
        "inherit_env": False,
        # codex-acp does not exit when its stdin closes; it does at SIGTERM, at once.
        "stop_grace": 0.0,
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
