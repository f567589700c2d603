"""``ahp-bridge doctor --provider copilot``: check the Copilot setup and say how to fix it.

Each line is ``(ok, what, how_to_fix)``; ``how_to_fix`` is empty when ok. Secrets (the GitHub
token, a BYOK API key) are only checked for presence; their values never appear in a line.
The probe starts the CLI briefly on its own asyncio loop in a worker thread, so ``report`` can be
called from synchronous code or from a thread of an async program.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .client import close_pipes, make_client
from .options import (
    PROTOCOL_VERSION,
    TESTED_CLI_VERSION,
    CopilotOptions,
    OptionsError,
    find_cli,
    install_hint,
    not_found,
    sign_in_step,
)

Line = tuple[bool, str, str]

__all__ = ["TESTED_CLI_VERSION", "report"]


def report(options: Mapping[str, Any]) -> list[Line]:
    """Check options, the CLI binary, its protocol version, credentials and sign-in."""
    try:
        opts = CopilotOptions.parse(options)
    except OptionsError as exc:
        return [(False, "provider options", str(exc))]
    lines: list[Line] = [(True, "provider options are valid", "")]
    lines.extend(_secrets(opts))
    if opts.data_dir:
        lines.append(_data_dir(Path(opts.data_dir).expanduser()))

    cli: Path | None = None
    if opts.cli_url:
        lines.append((True, f"connecting to a running Copilot CLI at {opts.cli_url}", ""))
    else:
        cli = find_cli(opts)
        if cli is None:
            lines.append((False, *not_found(opts)))
            return lines
        lines.append((True, f"Copilot CLI found at {cli}", ""))
        lines.append(_version(cli, opts))

    probe = _run_probe(opts, cli)
    if isinstance(probe, str):
        if "protocol version mismatch" in probe:
            lines.append(
                (
                    False,
                    f"the Copilot CLI speaks an incompatible protocol ({probe})",
                    install_hint(),
                )
            )
        else:
            lines.append((False, f"the Copilot CLI did not start: {probe}", _start_fix(probe)))
        return lines
    version, protocol, signed_in, login = probe
    if protocol != PROTOCOL_VERSION:
        lines.append(
            (
                False,
                f"Copilot CLI {version} speaks protocol {protocol}, this bridge needs "
                f"{PROTOCOL_VERSION}",
                install_hint(),
            )
        )
        return lines
    lines.append((True, f"Copilot CLI {version} speaks protocol {protocol}", ""))
    if opts.byok is not None:
        lines.append(
            (True, f"using your own model provider at {opts.byok.base_url}; no sign-in needed", "")
        )
        lines.append(_byok_reachable(opts))  # its key is among the secrets above
    elif signed_in:
        lines.append((True, f"signed in to GitHub Copilot{f' as {login}' if login else ''}", ""))
    else:
        where = sign_in_step(opts, cli)
        lines.append(
            (
                False,
                "GitHub Copilot is signed out",
                f"{where}; or sign in from an AHP client (the agent asks for a GitHub token); or "
                "set token_env in [providers.copilot] to an environment variable holding a GitHub "
                "token; or use your own model, without a GitHub account, with "
                "[providers.copilot.byok] (base_url, model; docs/copilot.md)",
            )
        )
    return lines


def _start_fix(problem: str) -> str:
    """A CLI that exits at start is rarely a broken install: say what its message means."""
    if "Offline mode requires" in problem:
        return "offline = true needs [providers.copilot.byok] with base_url and model"
    if "BYOK" in problem or "provider" in problem.lower():
        return "check [providers.copilot.byok] (base_url, model, api_key_env)"
    return f"check the message above; if the CLI itself is broken, {install_hint()}"


def _secrets(opts: CopilotOptions) -> list[Line]:
    out: list[Line] = []
    if opts.token_env:
        if os.environ.get(opts.token_env):
            out.append((True, f"a GitHub token is set in ${opts.token_env}", ""))
        else:
            out.append(
                (
                    False,
                    f"token_env names ${opts.token_env}, which is not set",
                    f"export {opts.token_env}=<a GitHub token with Copilot access>",
                )
            )
    if opts.byok is not None and opts.byok.api_key_env:
        out.append(_byok_key(opts))
    return out


def _byok_key(opts: CopilotOptions) -> Line:
    assert opts.byok is not None
    name = opts.byok.api_key_env
    if os.environ.get(name):
        return (True, f"the model provider's API key is set in ${name}", "")
    return (
        False,
        f"byok.api_key_env names ${name}, which is not set",
        f"export {name}=<the model server's API key> before starting the bridge, or fix "
        "byok.api_key_env in [providers.copilot]",
    )


def byok_lines(opts: CopilotOptions, *, timeout: float = 10) -> list[Line]:
    """What doctor and the bridge's start both say of your own model: its API key (when one is
    named) and whether the server answers. Blocking (urllib): call it from a thread."""
    if opts.byok is None:
        return []
    lines = [_byok_key(opts)] if opts.byok.api_key_env else []
    return [*lines, _byok_reachable(opts, timeout)]


#: Where docs/copilot.md says how to run a model server on this machine.
LOCAL_SERVER_DOC = "docs/copilot.md#a-model-server-on-this-machine"


def _byok_reachable(opts: CopilotOptions, timeout: float = 10) -> Line:
    """GET <base_url>/models: the endpoint answers (any HTTP status counts as reachable)."""
    assert opts.byok is not None
    url = opts.byok.base_url + "/models"
    headers = {}
    key = opts.byok_api_key()
    if opts.byok.api_key_env and key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            status = resp.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return (
            False,
            f"the model server at {opts.byok.base_url} does not answer ({reason}); every turn "
            "will fail once the Copilot CLI has given up retrying",
            f"start it (one to run on this machine, offline: {LOCAL_SERVER_DOC}), or fix "
            "byok.base_url in [providers.copilot]",
        )
    if status >= 400:
        return (
            False,
            f"the model server at {opts.byok.base_url} answered GET /models with HTTP {status}",
            "check byok.base_url in [providers.copilot] and the API key in byok.api_key_env",
        )
    return (True, f"the model server at {opts.byok.base_url} answers", "")


def _data_dir(path: Path) -> Line:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".ahp-bridge-doctor"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        return (False, f"data_dir {path} is not writable ({exc.strerror})", "fix its permissions")
    return (True, f"data_dir {path} is writable", "")


def _version(cli: Path, opts: CopilotOptions) -> Line:
    args = ["node", str(cli)] if cli.suffix == ".js" else [str(cli)]
    try:
        out = subprocess.run(
            [*args, "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            env=opts.runtime_env(),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return (False, f"`{cli} --version` failed: {exc}", install_hint())
    text = (out.stdout or out.stderr).strip().splitlines()
    first = text[0] if text else ""
    if out.returncode != 0 or not first:
        return (False, f"`{cli} --version` exited with {out.returncode}", install_hint())
    if TESTED_CLI_VERSION in first:
        return (True, f"{first.rstrip('.')} (the tested release)", "")
    return (
        True,
        f"{first.rstrip('.')}; tested with {TESTED_CLI_VERSION}",
        "",
    )


def _run_probe(opts: CopilotOptions, cli: Path | None) -> tuple[str, int, bool, str] | str:
    result: list[tuple[str, int, bool, str] | str] = []

    def work() -> None:
        try:
            result.append(asyncio.run(_probe(opts, cli)))
        except Exception as exc:
            from .sdk_errors import rpc_message

            result.append(rpc_message(exc))

    thread = threading.Thread(target=work, name="copilot-doctor", daemon=True)
    thread.start()
    thread.join(90)
    return result[0] if result else "no answer within 90 seconds"


async def _probe(opts: CopilotOptions, cli: Path | None) -> tuple[str, int, bool, str]:
    client = make_client(opts, cli)
    try:
        await client.start()
        status = await client.get_status()
        auth = await client.get_auth_status()
        return status.version, status.protocol_version, bool(auth.isAuthenticated), auth.login or ""
    finally:
        try:
            await client.stop()
        except Exception:
            await client.force_stop()
        close_pipes(client)
