"""Provider options (``[providers.copilot]`` in the bridge's TOML config, plus env) and where the
Copilot CLI binary is found.

The SDK would download a runtime from GitHub when it is not given a path; the adapter always
passes one explicitly, so it never touches the network on its own.
"""

from __future__ import annotations

import difflib
import os
import platform
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

PROTOCOL_VERSION = 3
"""The SDK/CLI protocol version this adapter was built and tested against."""

TESTED_CLI_VERSION = "1.0.102"
"""The npm @github/copilot release this adapter is tested with (scripts/install-copilot-cli.sh)."""

#: Environment variables whose GitHub token the CLI prefers to any stored sign-in.
ENV_TOKENS = ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN")

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
    """No network at all (COPILOT_OFFLINE): no GitHub sign-in, telemetry or web tools. Needs
    ``byok``; the CLI then gets its model provider from the environment at start."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for the CLI process (e.g. HOME for an isolated test run)."""

    @model_validator(mode="after")
    def _offline_needs_byok(self) -> CopilotOptions:
        if self.offline and self.byok is None and not self.cli_url:
            raise ValueError(
                "offline = true needs your own model: add [providers.copilot.byok] with "
                "base_url and model (docs/copilot.md)"
            )
        return self

    @classmethod
    def parse(cls, options: Mapping[str, Any] | None) -> CopilotOptions:
        try:
            return cls.model_validate(dict(options or {}))
        except ValidationError as exc:
            problems = "; ".join(_problem(err) for err in exc.errors())
            raise OptionsError(f"invalid [providers.copilot] options: {problems}") from None

    def token(self) -> str | None:
        """The GitHub token from ``token_env``, or None when unset."""
        if not self.token_env:
            return None
        return os.environ.get(self.token_env) or None

    def env_token_var(self) -> str:
        """The variable whose token the CLI uses before any stored sign-in ("" when none)."""
        if self.token():
            return self.token_env
        env = {**os.environ, **self.env}
        return next((name for name in ENV_TOKENS if env.get(name)), "")

    def github_host(self) -> str:
        env = {**os.environ, **self.env}
        host = env.get("COPILOT_GH_HOST") or env.get("GH_HOST") or "github.com"
        return host if host.startswith("https://") else f"https://{host}"

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
        """Environment for the CLI process.

        Offline, the CLI checks for a local model provider at start (COPILOT_PROVIDER_*), before
        any session names one, so the ``byok`` provider and its model go in the environment too.
        """
        env = dict(os.environ)
        env.update(self.env)
        if self.offline:
            env["COPILOT_OFFLINE"] = "true"
            if self.byok is not None:
                env["COPILOT_PROVIDER_BASE_URL"] = self.byok.base_url
                env["COPILOT_PROVIDER_TYPE"] = self.byok.type
                env["COPILOT_PROVIDER_WIRE_API"] = self.byok.wire_api
                env["COPILOT_MODEL"] = self.byok.model
                if self.byok.api_key_env:
                    env["COPILOT_PROVIDER_API_KEY"] = self.byok_api_key()
        return env


def _problem(err: Any) -> str:
    """One validation problem: the key path, what is wrong, and the closest key for a typo."""
    loc = [str(p) for p in err["loc"]]
    key = ".".join(loc) or "options"
    if err["type"] == "extra_forbidden":
        model: Any = CopilotOptions
        for part in loc[:-1]:
            field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
            ann = field.annotation if field is not None else None
            model = next(
                (a for a in getattr(ann, "__args__", (ann,)) if hasattr(a, "model_fields")), None
            )
        valid = list(getattr(model, "model_fields", {}))
        close = difflib.get_close_matches(loc[-1], valid, n=1, cutoff=0.5)
        return f"{key}: unknown option" + (f"; did you mean `{close[0]}`?" if close else "")
    msg = str(err["msg"]).removeprefix("Value error, ")
    return f"{key}: {msg[:1].lower()}{msg[1:]}" if loc else msg


def npm_binary_relpath() -> Path:
    """The native binary's path inside an npm prefix for this platform."""
    plat = _NPM_PLATFORM.get(platform.system(), platform.system().lower())
    arch = _NPM_ARCH.get(platform.machine().lower(), platform.machine().lower())
    return Path("node_modules/@github") / f"copilot-{plat}-{arch}" / "copilot"


def user_prefix() -> Path:
    """The per-user npm prefix `install_hint` names ($XDG_DATA_HOME/ahp-bridge/copilot)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(base) / "ahp-bridge" / "copilot"


def _checkout() -> Path | None:
    """The source checkout this adapter runs from, if it is one (not an installed wheel)."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "pyproject.toml").is_file() and (parent / "scripts").is_dir():
            return parent
    return None


def not_found(opts: CopilotOptions) -> tuple[str, str]:
    """What is wrong when no CLI was found, and the fix: a ``cli_path`` that names no
    executable is the operator's typo (say which path, and that leaving it out searches the
    usual places); otherwise the install command."""
    if opts.cli_path:
        path = Path(opts.cli_path).expanduser()
        what = "is not executable" if path.is_file() else "does not exist"
        return (
            f"cli_path {opts.cli_path} {what}",
            f"fix cli_path in [providers.copilot] (the path of the `copilot` binary), or remove "
            f"it and let the bridge find the CLI where it is installed: "
            f"{install_hint(with_path=False)}",
        )
    return "Copilot CLI not found", install_hint()


def install_hint(*, with_path: bool = True) -> str:
    """The exact command that installs the tested CLI where the adapter looks for it."""
    prefix = str(user_prefix()).replace(str(Path.home()), "~", 1)
    hint = (
        f"install the tested release with `npm install --prefix {prefix} "
        f"@github/copilot@{TESTED_CLI_VERSION}` (found there without further setup)"
    )
    checkout = _checkout()
    if checkout is not None and (checkout / "scripts/install-copilot-cli.sh").is_file():
        hint += ", or run `bash scripts/install-copilot-cli.sh` in the checkout"
    if not with_path:
        return hint
    return hint + ", or set cli_path in [providers.copilot] (or COPILOT_CLI_PATH) to the binary"


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
    checkout = _checkout()
    if checkout is not None:
        out.append(checkout / rel)
    out.append(user_prefix() / npm_binary_relpath())
    found = shutil.which("copilot")
    if found:
        out.append(Path(found))
    return out


def login_command(opts: CopilotOptions, cli: Path | None = None) -> str:
    """The shell command that signs this provider's CLI in (its binary, its COPILOT_HOME);
    ``cli`` is the binary already found (looked up when None)."""
    if cli is None:
        cli = find_cli(opts)
    program = str(cli) if cli is not None else "copilot"
    if cli is not None and cli.suffix == ".js":
        program = f"node {cli}"
    env = []
    if opts.data_dir:
        env.append(f"COPILOT_HOME={opts.data_dir}")
    elif "HOME" in opts.env:
        env.append(f"HOME={opts.env['HOME']}")
    return " ".join([*env, program, "login"])


def sign_in_step(opts: CopilotOptions, cli: Path | None = None, *, machine: str = "") -> str:
    """The bridge-side way to sign the CLI in, as one clause: sign in the CLI running at
    cli_url, or run the login command (``cli`` as in login_command; ``machine`` follows the
    command, e.g. " on the bridge's machine")."""
    if opts.cli_url:
        return f"sign in the Copilot CLI running at {opts.cli_url}"
    return f"run `{login_command(opts, cli)}`{machine}"


def sign_in_hint(opts: CopilotOptions, cli: Path | None = None) -> str:
    """What to do about a signed-out CLI, in one sentence (``cli`` as in login_command)."""
    where = sign_in_step(opts, cli, machine=" on the bridge's machine")
    return (
        "GitHub Copilot is signed out: sign in from your client (the agent asks for a GitHub "
        f"token), {where}, or use your own model with [providers.copilot.byok] "
        "(docs/copilot.md)"
    )


def find_cli(opts: CopilotOptions) -> Path | None:
    """The first candidate that is an executable file (or an npm ``.js`` loader)."""
    for cand in cli_candidates(opts):
        if cand.is_file() and (cand.suffix == ".js" or os.access(cand, os.X_OK)):
            return cand
    return None
