"""Provider options (``[providers.copilot]`` in the bridge's TOML config, plus env) and where the
Copilot CLI binary is found.

The SDK would download a runtime from GitHub when it is not given a path; the adapter always
passes one explicitly, so it never touches the network on its own.
"""

from __future__ import annotations

import os
import platform
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

PROTOCOL_VERSION = 3
"""The SDK/CLI protocol version this adapter was built and tested against."""

_NPM_PLATFORM = {"Linux": "linux", "Darwin": "darwin", "Windows": "win32"}
_NPM_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


class OptionsError(ValueError):
    """The provider options are invalid; the message says which one and why."""


class ByokOptions(BaseModel):
    """A bring-your-own-model provider (an OpenAI-compatible or Azure/Anthropic endpoint).

    With it the CLI needs no GitHub sign-in. The API key is read from the environment variable
    ``api_key_env`` when a session opens; it is never stored here or logged.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["openai", "azure", "anthropic"] = "openai"
    base_url: str
    api_key_env: str = ""
    wire_api: Literal["completions", "responses"] = "completions"
    model: str
    models: tuple[str, ...] = ()

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return v.rstrip("/")

    def all_models(self) -> list[str]:
        out = [self.model]
        out.extend(m for m in self.models if m not in out)
        return out


class CopilotOptions(BaseModel):
    """Validated provider options."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cli_path: str = ""
    cli_url: str = ""
    """host:port of a Copilot CLI already running in server mode (``--headless --port N``).
    The provider connects to it instead of starting one, and never stops it."""
    cli_token_env: str = ""
    """Name of the env var holding that server's connection token (its COPILOT_CONNECTION_TOKEN)."""
    token_env: str = ""
    byok: ByokOptions | None = None
    workdir: str = ""
    data_dir: str = ""
    log_level: Literal["none", "error", "warning", "info", "debug", "all"] = "warning"
    offline: bool = False
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the CLI process (e.g. HOME for an isolated test run)."""

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None) -> CopilotOptions:
        try:
            return cls.model_validate(dict(options or {}))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'options'}: {err['msg']}"
                for err in exc.errors()
            )
            raise OptionsError(f"invalid [providers.copilot] options: {problems}") from None

    def token(self) -> str | None:
        """The GitHub token from ``token_env``, or None when unset."""
        if not self.token_env:
            return None
        return os.environ.get(self.token_env) or None

    def cli_token(self) -> str | None:
        if not self.cli_token_env:
            return None
        return os.environ.get(self.cli_token_env) or None

    def byok_api_key(self) -> str:
        if self.byok is None or not self.byok.api_key_env:
            return "unused"
        return os.environ.get(self.byok.api_key_env, "")

    def provider_config(self) -> dict[str, Any] | None:
        """The SDK ``ProviderConfig`` for ``create_session``/``resume_session``."""
        if self.byok is None:
            return None
        return {
            "type": self.byok.type,
            "base_url": self.byok.base_url,
            "api_key": self.byok_api_key(),
            "wire_api": self.byok.wire_api,
        }

    def runtime_env(self) -> dict[str, str]:
        """Environment for the CLI process."""
        env = dict(os.environ)
        env.update(self.env)
        if self.offline:
            env["COPILOT_OFFLINE"] = "true"
        return env


def npm_binary_relpath() -> Path:
    """The native binary's path inside an npm prefix for this platform."""
    plat = _NPM_PLATFORM.get(platform.system(), platform.system().lower())
    arch = _NPM_ARCH.get(platform.machine().lower(), platform.machine().lower())
    return Path("node_modules/@github") / f"copilot-{plat}-{arch}" / "copilot"


def cli_candidates(opts: CopilotOptions) -> list[Path]:
    """Where the CLI may be, in order of preference."""
    out: list[Path] = []
    if opts.cli_path:
        return [Path(opts.cli_path).expanduser()]
    env = os.environ.get("COPILOT_CLI_PATH")
    if env:
        out.append(Path(env).expanduser())
    rel = Path(".tools/copilot") / npm_binary_relpath()
    out.append(Path.cwd() / rel)
    # A development checkout: the project-local prefix scripts/install-copilot-cli.sh fills.
    for parent in Path(__file__).resolve().parents:
        if (parent / "pyproject.toml").is_file():
            out.append(parent / rel)
            break
    found = shutil.which("copilot")
    if found:
        out.append(Path(found))
    return out


def find_cli(opts: CopilotOptions) -> Path | None:
    """The first candidate that is an executable file (or an npm ``.js`` loader)."""
    for cand in cli_candidates(opts):
        if cand.is_file() and (cand.suffix == ".js" or os.access(cand, os.X_OK)):
            return cand
    return None
