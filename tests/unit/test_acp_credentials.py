"""doctor's credential verdicts for ACP agents: from the agent's environment and files."""

from __future__ import annotations

from pathlib import Path

from acp import schema as S
from ahp_bridge_acp.credentials import check

CLAUDE = "@zed-industries/claude-agent-acp"
CODEX_METHODS = [
    S.AuthMethodAgent(id="chatgpt", name="Login with ChatGPT"),
    S.EnvVarAuthMethod(
        id="openai-api-key",
        name="Use OPENAI_API_KEY",
        type="env_var",
        vars=[S.AuthEnvVar(name="OPENAI_API_KEY")],
    ),
]


def test_claude_without_a_key_or_login_is_warned_of_with_what_to_set(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    verdict = check(CLAUDE, [], env)
    assert verdict is not None
    found, what, fix = verdict
    assert not found
    assert what == "Claude has no credentials it can use (every prompt will fail)"
    assert fix.startswith("set ANTHROPIC_API_KEY in the provider's env")
    assert str(tmp_path / "cfg" / ".credentials.json") in fix


def test_claude_with_a_key_a_login_or_a_key_helper_is_fine(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert check(CLAUDE, [], {**env, "ANTHROPIC_API_KEY": "sk"}) == (
        True,
        "credentials for Claude: ANTHROPIC_API_KEY is set",
        "",
    )
    assert check(CLAUDE, [], {**env, "ANTHROPIC_API_KEY": " "})[0] is False  # type: ignore[index]
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"apiKeyHelper": "pass show key"}')
    assert check(CLAUDE, [], env)[0] is True  # type: ignore[index]
    (tmp_path / ".claude" / ".credentials.json").write_text("{}")
    verdict = check(CLAUDE, [], env)
    assert verdict is not None and verdict[1].endswith(".claude/.credentials.json")


def codex_home(tmp_path: Path, config: str) -> dict[str, str]:
    home = tmp_path / "codex"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config)
    return {"HOME": str(tmp_path), "CODEX_HOME": str(home)}


LOCAL = """model_provider = "local"
[model_providers.local]
base_url = "http://127.0.0.1:1/v1"
env_key = "LOCAL_KEY"
"""


def test_codex_needs_the_key_its_own_model_provider_names(tmp_path: Path) -> None:
    env = codex_home(tmp_path, LOCAL)
    verdict = check("codex-acp", CODEX_METHODS, {**env, "OPENAI_API_KEY": "sk"})
    assert verdict is not None
    assert verdict[:2] == (
        False,
        "Codex's model provider 'local' has no key: LOCAL_KEY is not set (every prompt will fail)",
    )
    assert verdict[2].startswith("set LOCAL_KEY in the provider's env")
    assert check("codex-acp", CODEX_METHODS, {**env, "LOCAL_KEY": "k"})[0] is True  # type: ignore[index]
    keyless = codex_home(tmp_path, LOCAL.replace('env_key = "LOCAL_KEY"\n', ""))
    assert check("codex-acp", CODEX_METHODS, keyless)[0] is True  # type: ignore[index]


def test_codex_on_openai_needs_a_key_or_a_login(tmp_path: Path) -> None:
    env = codex_home(tmp_path, 'model = "gpt-5.3-codex"\n')
    verdict = check("codex-acp", CODEX_METHODS, env)
    assert verdict is not None and verdict[0] is False
    assert verdict[2].startswith("set OPENAI_API_KEY (or CODEX_API_KEY) in the provider's env")
    assert check("codex-acp", CODEX_METHODS, {**env, "CODEX_API_KEY": "k"})[0] is True  # type: ignore[index]
    (tmp_path / "codex" / "auth.json").write_text("{}")
    assert check("codex-acp", CODEX_METHODS, env)[0] is True  # type: ignore[index]


def test_another_agent_is_judged_by_its_env_var_methods_alone() -> None:
    env_only = CODEX_METHODS[1:]
    verdict = check("some-agent", env_only, {})
    assert verdict == (
        False,
        "the agent has none of the credentials its sign-in methods ask for",
        "set OPENAI_API_KEY in the provider's env",
    )
    assert check("some-agent", env_only, {"OPENAI_API_KEY": "k"})[0] is True  # type: ignore[index]
    # A login of the agent's own may hold credentials the bridge cannot see: no verdict.
    assert check("some-agent", CODEX_METHODS, {}) is None
    assert check("some-agent", [], {}) is None
