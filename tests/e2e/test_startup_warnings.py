"""What will not work is said at start, before a client's first turn finds out: a model server
that does not answer, a key that is not set, an agent that is signed out. Each is one warning
on stderr naming the provider, what is wrong and the fix, logged while the bridge serves (the
checks hold up nothing). Through the real command line; the Copilot CLI is not needed (your
own model's checks run without it).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import trio
from ahp_bridge_copilot import create_provider as copilot_provider
from ahp_bridge_fake import create_provider as fake_provider

from ahp_bridge import providers


async def warnings_at_start(
    tmp_path: Path,
    config: str,
    provider: str,
    *,
    expect: int,
    until: Callable[[list[dict[str, Any]]], bool] | None = None,
) -> list[dict[str, Any]]:
    """Start the bridge (JSON logs) and read stderr until `expect` warnings were logged (or,
    given `until`, until it holds of the warnings logged)."""
    path = tmp_path / "bridge.toml"
    path.write_text(config)
    args = ["--provider", provider, "--listen", "127.0.0.1:0", "--config", str(path)]
    args += ["--data-dir", str(tmp_path / "data"), "--log-format", "json"]
    env = {k: v for k, v in os.environ.items() if k != "UNSET_MODEL_KEY"}
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "ahp_bridge.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert process.stderr is not None
    found: list[dict[str, Any]] = []
    buffer = b""
    try:
        with trio.fail_after(30):
            while not (until(found) if until is not None else len(found) >= expect):
                chunk = await process.stderr.receive_some(65536)
                assert chunk, buffer.decode()
                buffer += chunk
                *lines, rest = buffer.split(b"\n")
                buffer = rest
                records = [json.loads(line) for line in lines if line.strip()]
                found += [r for r in records if r["level"] == "warning"]
        assert process.returncode is None  # said while it serves, not as a failure to start
    finally:
        process.kill()
        await process.wait()
    return found


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_an_unreachable_model_server_and_an_unset_key_are_said_at_start(
    tmp_path: Path,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    config = (
        "[providers.copilot.byok]\n"
        f'base_url = "{url}"\nmodel = "llama3.1"\napi_key_env = "UNSET_MODEL_KEY"\n'
    )
    found = await warnings_at_start(tmp_path, config, "copilot", expect=2)
    assert [(w["event"], w["provider"], w["fix"]) for w in found] == [
        (
            "byok.api_key_env names $UNSET_MODEL_KEY, which is not set",
            "copilot",
            "export UNSET_MODEL_KEY=<the model server's API key> before starting the bridge, "
            "or fix byok.api_key_env in [providers.copilot]",
        ),
        (
            f"the model server at {url} does not answer ([Errno 111] Connection refused); "
            "every turn will fail once the Copilot CLI has given up retrying",
            "copilot",
            "start it (one to run on this machine, offline: "
            "docs/copilot.md#a-model-server-on-this-machine), or fix byok.base_url in "
            "[providers.copilot]",
        ),
    ]


async def test_an_agent_without_credentials_is_said_at_start(tmp_path: Path) -> None:
    """A runtime that starts signed out (the fake with `sign_in_token`)."""
    config = '[providers.fake]\nsign_in_token = "secret-token-1"\n'
    [warning] = await warnings_at_start(tmp_path, config, "fake", expect=1)
    assert (warning["event"], warning["provider"]) == ("provider is signed out", "fake")
    assert warning["fix"] == (
        "the fake runtime is signed out: sign in from your client with the token configured "
        "as sign_in_token"
    )
    assert "secret-token-1" not in json.dumps(warning)


async def test_the_check_is_the_providers_own() -> None:
    """Copilot with your own model is a StartupChecker and says nothing of a server that
    answers; the fake is not one (its sign-in is said by the models read)."""
    copilot = copilot_provider({"byok": {"base_url": "http://127.0.0.1:1/v1", "model": "m"}})
    assert isinstance(copilot, providers.StartupChecker)
    assert not isinstance(fake_provider({}), providers.StartupChecker)
    signed_in = copilot_provider({})
    assert await signed_in.startup_problems() == []  # GitHub sign-in: the models read says it


async def test_an_acp_agent_that_is_not_installed_is_said_at_start(tmp_path: Path) -> None:
    """The documented `claude-code-acp` command when setup put the agent under .tools/acp."""
    config = (
        '[bridge]\nproviders = ["claude"]\n'
        '[providers.claude]\nkind = "acp"\ncommand = ["claude-code-acp-not-installed"]\n'
    )

    def said(ws: list[dict[str, Any]]) -> bool:
        return any(w["event"].endswith("is not found") for w in ws)

    found = await warnings_at_start(tmp_path, config, "claude", expect=0, until=said)
    [warning] = [w for w in found if w["event"].endswith("is not found")]
    assert (warning["event"], warning["provider"]) == (
        "the agent command 'claude-code-acp-not-installed' is not found",
        "claude",
    )
    assert warning["fix"] == (
        "install the agent (`bash scripts/install-acp-agents.sh` puts the pinned Claude Agent, "
        "Codex and Gemini CLI under .tools/acp; docs/acp.md has their configs), or set "
        "`command` to its full path"
    )
