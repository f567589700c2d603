"""Running ACP agents in tests: the SDK test agent, and the real Claude Code and Codex agents.

``sdk_agent_options`` runs ``tests/support/acp_agent.py`` (the official SDK's agent side) as
the agent subprocess. ``claude_options`` runs ``claude-agent-acp`` (npm
``@zed-industries/claude-agent-acp``, pinned in scripts/install-acp-agents.sh) against a
scripted Anthropic server on 127.0.0.1, with its home and config in a scratch directory so
nothing of the machine's own Claude setup is read or written. ``codex_options`` does the same
for ``codex-acp`` (npm ``@zed-industries/codex-acp``) against a scripted OpenAI Responses API
server, with ``CODEX_HOME`` and its ``config.toml`` in a scratch directory.
"""

from __future__ import annotations

import platform
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
