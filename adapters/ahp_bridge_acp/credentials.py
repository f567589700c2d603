"""Whether an ACP agent has credentials it can use, for ``doctor``: without any, a session opens
but every prompt fails, so doctor says what to set before the first turn does.

Known agents (by ``agentInfo.name``) are judged by what they read: their environment (the one
the bridge gives them) and their own credential files. Any other agent is judged by the
``env_var`` methods of its ``authMethods``, when those are all it offers. Pure: the caller
passes the agent's environment; files are only looked at, never written.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

CLAUDE_AGENTS = frozenset({"@zed-industries/claude-agent-acp", "@zed-industries/claude-code-acp"})
CODEX_AGENTS = frozenset({"codex-acp"})
CLAUDE_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
)
OPENAI_ENV = ("OPENAI_API_KEY", "CODEX_API_KEY")

Verdict = tuple[bool, str, str]
"""(credentials found, what was found or missed, what to set when missed)."""


def check(agent: str, methods: list[Any], env: Mapping[str, str]) -> Verdict | None:
    """The verdict for agent ``agent`` (its ``agentInfo.name``) run with ``env``; None when
    nothing sound can be said (an agent that signs in its own way)."""
    if agent in CLAUDE_AGENTS:
        return _claude(env)
    if agent in CODEX_AGENTS:
        return _codex(env)
    return _env_methods(methods, env)


def _set(env: Mapping[str, str], name: str) -> bool:
    return bool(env.get(name, "").strip())


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def _claude(env: Mapping[str, str]) -> Verdict:
    found = [name for name in CLAUDE_ENV if _set(env, name)]
    if found:
        return True, f"credentials for Claude: {found[0]} is set", ""
    config = Path(env.get("CLAUDE_CONFIG_DIR") or _home(env) / ".claude")
    if (config / ".credentials.json").is_file():
        return True, f"credentials for Claude: a login in {config / '.credentials.json'}", ""
    if _read_json(config / "settings.json").get("apiKeyHelper"):
        return True, f"credentials for Claude: apiKeyHelper in {config / 'settings.json'}", ""
    return (
        False,
        "Claude has no credentials it can use (every prompt will fail)",
        "set ANTHROPIC_API_KEY in the provider's env (or ANTHROPIC_AUTH_TOKEN, "
        "CLAUDE_CODE_OAUTH_TOKEN), or sign in with `claude /login` as the user the agent runs as "
        f"(a login is kept in {config / '.credentials.json'})",
    )


def _codex(env: Mapping[str, str]) -> Verdict:
    home = Path(env.get("CODEX_HOME") or _home(env) / ".codex")
    config = _read_toml(home / "config.toml")
    provider = config.get("model_provider") or "openai"
    table = (config.get("model_providers") or {}).get(provider)
    if provider != "openai" and isinstance(table, dict) and not table.get("requires_openai_auth"):
        key = table.get("env_key")
        if not key:
            return True, f"Codex's model provider {provider!r} needs no key (no env_key)", ""
        if _set(env, str(key)):
            return True, f"credentials for Codex's model provider {provider!r}: {key} is set", ""
        return (
            False,
            f"Codex's model provider {provider!r} has no key: {key} is not set "
            "(every prompt will fail)",
            f"set {key} in the provider's env (its env_key in {home / 'config.toml'})",
        )
    found = [name for name in OPENAI_ENV if _set(env, name)]
    if found:
        return True, f"credentials for Codex: {found[0]} is set", ""
    if (home / "auth.json").is_file():
        return True, f"credentials for Codex: a login in {home / 'auth.json'}", ""
    return (
        False,
        "Codex has no credentials for OpenAI (every prompt will fail)",
        "set OPENAI_API_KEY (or CODEX_API_KEY) in the provider's env, or sign in with "
        f"`codex login` with CODEX_HOME={home}; or point model_provider at a provider of "
        "your own in config.toml",
    )


def _env_methods(methods: list[Any], env: Mapping[str, str]) -> Verdict | None:
    """Agents that sign in only through environment variables (``authMethods`` of type
    ``env_var``): one method whose required variables are all set is enough."""
    needs: list[list[str]] = []
    for method in methods:
        inner = getattr(method, "root", method)
        names = [v.name for v in getattr(inner, "vars", None) or [] if not v.optional]
        if not names:
            return None  # a sign-in of the agent's own (a login, a terminal): not judged here
        needs.append(names)
    if not needs:
        return None
    for names in needs:
        if all(_set(env, n) for n in names):
            return True, f"credentials for the agent: {', '.join(names)} set", ""
    wanted = " or ".join(" and ".join(names) for names in needs)
    return (
        False,
        "the agent has none of the credentials its sign-in methods ask for",
        f"set {wanted} in the provider's env",
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
