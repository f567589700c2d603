"""Settings: a TOML file, overridden by environment variables, overridden by command-line flags.

Environment overrides use the prefix `AHP_BRIDGE__` and `__` between levels, for example
`AHP_BRIDGE__SERVER__PORT=9000` or `AHP_BRIDGE__PROVIDERS__FAKE__SCRIPT=/path/demo.toml`.
`config.example.toml` documents every setting.

A mistake is a `ConfigError` in one line that names where the value came from (the file or
the environment variable), the key path, what is wrong and, for an unknown key, the closest
valid one; never a validation dump.
"""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)
from pydantic_settings.exceptions import SettingsError

from ahp_bridge.engine.timeouts import Timeouts
from ahp_bridge.state.limits import Limits

ENV_PREFIX = "AHP_BRIDGE__"


class ConfigError(ValueError):
    """The settings are wrong; the message is one line per problem, for the operator."""


def default_state_dir() -> Path:
    """The user's state directory (XDG), where the bridge keeps its catalog and provider data."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "ahp-bridge"


class ServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    #: An empty or whitespace-only token is no token.
    token: str | None = None
    #: Clients need a connection token on every bind: without `token`, one is generated and
    #: kept in the data directory. False lets a loopback bind take none (any local user's
    #: process may then connect; the bridge warns); any other bind always needs one.
    require_token: bool = True
    allowed_origins: list[str] = Field(default_factory=list)
    max_frame_bytes: int = Field(4 * 1024 * 1024, ge=1024)
    outbound_queue: int = Field(4096, ge=16)
    max_subscriptions: int = Field(1024, ge=1)
    replay_log: int = Field(10_000, ge=100)
    #: Seconds a client that fell behind gets to take the frame in flight before its socket
    #: is dropped without a close frame.
    slow_client_grace: float = Field(10.0, gt=0)
    shutdown_grace: float = Field(2.0, gt=0)
    #: Request ids remembered per connection to refuse a repeated one.
    remembered_request_ids: int = Field(4096, ge=16)
    #: Nesting depth of one frame's JSON (an object or array in another counts one level).
    max_json_depth: int = Field(64, ge=8, le=1000)
    #: A JSONL file that records every frame in and out (tokens redacted); None: off.
    wire_log: Path | None = None
    #: When the wire log passes this size it is moved to `<file>.1` and a new one begun.
    wire_log_max_bytes: int = Field(64 * 1024 * 1024, ge=4096)

    @field_validator("token")
    @classmethod
    def _no_blank_token(cls, v: str | None) -> str | None:
        if v is None or not v.strip():
            return None
        return v.strip()

    @field_validator("allowed_origins")
    @classmethod
    def _origins(cls, v: list[str]) -> list[str]:
        from ahp_bridge.origins import parse_origin_pattern

        for pattern in v:
            parse_origin_pattern(pattern)
        return v

    #: Bytes of canonical frames the replay log keeps, whatever their count (docs/limits.md).
    replay_log_bytes: int = Field(8 * 1024 * 1024, ge=64 * 1024)


class LogSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["console", "json"] = "console"
    level: Literal["debug", "info", "warning", "error"] = "info"


class BridgeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    #: Providers served as AHP agents, by entry-point name.
    providers: list[str] = Field(default_factory=lambda: ["fake"])
    #: Where the bridge keeps its session catalog; providers get a subfolder each.
    data_dir: Path | None = None
    #: The working directory new sessions get when a client names none.
    workdir: Path | None = None
    #: A session's working directories must lie inside one of these (symlinks resolved).
    #: Empty: the bridge's working directory and the user's home (never `/`); list `/` to
    #: allow any directory.
    allowed_directories: list[Path] = Field(default_factory=list)
    #: Seconds a disconnected client has to reconnect before it stops being an active client.
    active_client_grace: float = Field(30.0, ge=0)
    #: Days a session may go unmodified before it is forgotten at startup (0 = keep forever).
    retention_days: int = Field(0, ge=0)


class ClientToolSettings(BaseModel):
    """Tools an active client runs for the agent (VS Code's `usages`, `rename`, ...): the
    provider's host tools, each call completed by that client."""

    model_config = ConfigDict(extra="forbid")

    #: Seconds the bridge waits for the client to complete one call before it fails the call.
    timeout: float = Field(300.0, gt=0)
    #: Bytes of a client's result the model is given (UTF-8); the rest is cut, and that is said.
    max_result_bytes: int = Field(256 * 1024, ge=1024)
    #: Client tools one conversation registers; further ones are refused with that reason.
    max_tools: int = Field(128, ge=1)


class WorkspaceSettings(BaseModel):
    """What clients may do with the files of the sessions' working directories (resource*,
    createResourceWatch, `@` mentions in completions). Reading is confined to the working
    directories and `roots`; writing is off unless `allow_writes` says otherwise."""

    model_config = ConfigDict(extra="forbid")

    #: Directories served besides the sessions' working directories and the default one.
    roots: list[Path] = Field(default_factory=list)
    #: Whether clients may change files (resourceWrite, Mkdir, Move, Copy, Delete).
    allow_writes: bool = False
    #: Largest file resourceRead returns, in bytes (base64 makes the frame a third larger).
    max_read_bytes: int = Field(8 * 1024 * 1024, ge=1)
    #: Most entries resourceList returns for one directory (the spec has no paging).
    max_list_entries: int = Field(10_000, ge=1)
    #: Resource watches open at once across all clients (each holds OS watch handles).
    max_watches: int = Field(64, ge=1)
    #: Milliseconds a watch gathers changes before it reports them as one action.
    watch_debounce_ms: int = Field(200, ge=10, le=10_000)
    #: Files and folders the mention index of one working directory holds.
    mention_index_max_entries: int = Field(200_000, ge=1)
    #: Completions offered for one `@` mention.
    mention_results: int = Field(50, ge=1, le=1000)
    #: Seconds a mention index is used before it is rebuilt (in the background).
    mention_refresh_seconds: float = Field(30.0, ge=0)


class ChangesSettings(BaseModel):
    """What the agent changed: tool calls' `fileEdit` contents and the changesets."""

    model_config = ConfigDict(extra="forbid")

    #: Bytes of file contents (before and after a change) the host keeps for clients to read.
    max_content_bytes: int = Field(8 * 1024 * 1024, ge=1024)
    #: Seconds a read of a not yet known content (a tool edit's) waits for the provider.
    content_wait_seconds: float = Field(10.0, ge=0)
    #: Seconds a provider may take to report its changes (Conversation.diff) or to rewind.
    diff_timeout_seconds: float = Field(30.0, gt=0)


#: The host's own defaults (one source: the dataclasses the host runs with).
_LIMITS = Limits()
_TIMEOUTS = Timeouts()


class LimitSettings(BaseModel):
    """What one client may make the host keep (config.example.toml says why each is so).
    Each refusal names its key as `limits.<name>`."""

    model_config = ConfigDict(extra="forbid")

    max_title_bytes: int = Field(_LIMITS.max_title_bytes, ge=16)
    max_action_bytes: int = Field(_LIMITS.max_action_bytes, ge=1024)
    max_queued_messages: int = Field(_LIMITS.max_queued_messages, ge=0)
    max_annotations: int = Field(_LIMITS.max_annotations, ge=0)
    max_working_directories: int = Field(_LIMITS.max_working_directories, ge=1)
    max_sessions: int = Field(_LIMITS.max_sessions, ge=1)
    max_sessions_per_client: int = Field(_LIMITS.max_sessions_per_client, ge=1)
    max_chats_per_session: int = Field(_LIMITS.max_chats_per_session, ge=1)
    max_pending_calls: int = Field(_LIMITS.max_pending_calls, ge=1)
    max_client_bytes: int = Field(_LIMITS.max_client_bytes, ge=64 * 1024)
    max_host_bytes: int = Field(_LIMITS.max_host_bytes, ge=64 * 1024)
    max_live_turns: int = Field(_LIMITS.max_live_turns, ge=1)
    max_live_turn_bytes: int = Field(_LIMITS.max_live_turn_bytes, ge=1024)

    def limits(self) -> Limits:
        return Limits(**self.model_dump())


class TimeoutSettings(BaseModel):
    """How long the host waits for a provider's calls (engine/timeouts.py says which)."""

    model_config = ConfigDict(extra="forbid")

    models: float = Field(_TIMEOUTS.models, gt=0)
    sign_in: float = Field(_TIMEOUTS.sign_in, gt=0)
    provider_read: float = Field(_TIMEOUTS.provider_read, gt=0)
    reopen: float = Field(_TIMEOUTS.reopen, gt=0)
    close: float = Field(_TIMEOUTS.close, gt=0)
    turn_end: float = Field(_TIMEOUTS.turn_end, gt=0)

    def timeouts(self) -> Timeouts:
        return Timeouts(**self.model_dump())


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="forbid"
    )

    server: ServerSettings = Field(default_factory=ServerSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    bridge: BridgeSettings = Field(default_factory=BridgeSettings)
    workspace: WorkspaceSettings = Field(default_factory=WorkspaceSettings)
    client_tools: ClientToolSettings = Field(default_factory=ClientToolSettings)
    changes: ChangesSettings = Field(default_factory=ChangesSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    timeouts: TimeoutSettings = Field(default_factory=TimeoutSettings)
    #: Per-provider options, passed as they are to the provider's `create_provider`.
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml_file = _CONFIG_FILE.get("path")
        if toml_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)

    def data_dir(self) -> Path:
        return self.bridge.data_dir or default_state_dir()


_CONFIG_FILE: dict[str, Path] = {}


def load_settings(config_file: Path | None = None, **overrides: Any) -> Settings:
    """Read settings from `config_file` (if any) and the environment; `overrides` win.

    Raises ConfigError, whose message names the file or environment variable at fault.
    """
    if config_file is not None:
        _check_toml(config_file)
    _check_env_sections()
    _CONFIG_FILE.clear()
    if config_file is not None:
        _CONFIG_FILE["path"] = config_file
    try:
        settings = Settings(**overrides)
    except ValidationError as exc:
        raise ConfigError(_describe(exc, config_file)) from None
    except SettingsError:
        raise ConfigError(_env_parse_problem()) from None
    finally:
        _CONFIG_FILE.clear()
    problems = _provider_key_problems(settings.providers, config_file)
    if problems:
        raise ConfigError("\n".join(problems))
    return settings


def _provider_key_problems(
    tables: dict[str, dict[str, Any]], config_file: Path | None
) -> list[str]:
    """Unknown keys in every configured `[providers.NAME]` table, served or not, in the words of
    any other unknown key (where, the key path, the closest valid key): a typo in a provider
    that is not served today is found today, not on the day it is."""
    from ahp_bridge import providers

    lines: list[str] = []

    def walk(table: Mapping[str, Any], keys: Mapping[str, Any], loc: tuple[str, ...]) -> None:
        valid = list(keys) if len(loc) > 2 else [*providers.HOST_KEYS, *keys]
        for key, value in table.items():
            if len(loc) == 2 and key in providers.HOST_KEYS:
                continue
            where = (*loc, key)
            if key not in keys:
                problem = "unknown key" + _did_you_mean(key, [k for k in valid if k != key])
                lines.append(f"{_source(where, config_file)}: {'.'.join(where)}: {problem}")
            elif isinstance(keys[key], Mapping) and isinstance(value, Mapping):
                walk(value, keys[key], where)

    for name, table in tables.items():
        keys = providers.option_keys(providers.kind_of(name, table))
        if keys is not None:
            walk(table, keys, ("providers", name))
    return lines


def _check_toml(path: Path) -> None:
    if path.is_dir():
        raise ConfigError(
            f"--config {path} is a directory; give a TOML file, e.g. --config "
            f"{path / 'bridge.toml'} (config.example.toml documents every setting)"
        )
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot be read: {exc}") from None


def _sections() -> dict[str, type[BaseModel] | None]:
    """Top-level keys and the model of each (None: free-form, the providers' own options)."""
    out: dict[str, type[BaseModel] | None] = {}
    for name, info in Settings.model_fields.items():
        ann = info.annotation
        out[name] = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return out


def _env_vars() -> dict[str, str]:
    """The bridge's environment variables, by upper-case name (they are case-insensitive)."""
    return {k.upper(): k for k in os.environ if k.upper().startswith(ENV_PREFIX)}


def _check_env_sections() -> None:
    """Unknown `AHP_BRIDGE__SECTION__…` variables are mistakes (pydantic ignores them)."""
    sections = _sections()
    for upper, name in sorted(_env_vars().items()):
        section = upper[len(ENV_PREFIX) :].split("__", 1)[0].lower()
        if section not in sections:
            raise ConfigError(
                f"environment variable {name}: unknown section `{section}`"
                + _did_you_mean(section, list(sections))
            )


def _did_you_mean(key: str, valid: list[str]) -> str:
    close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
    if close:
        return f"; did you mean `{close[0]}`?"
    return f" (valid: {', '.join(valid)})" if valid else ""


def _fields_at(loc: tuple[str, ...]) -> list[str]:
    """The valid keys beside the last element of `loc` (for "did you mean")."""
    if len(loc) == 1:
        return list(_sections())
    model = _sections().get(loc[0])
    if model is None or len(loc) != 2:
        return []
    return list(model.model_fields)


def _source(loc: tuple[str, ...], config_file: Path | None) -> str:
    env = _env_vars()
    for n in range(len(loc), 0, -1):
        name = ENV_PREFIX + "__".join(loc[:n]).upper()
        if name in env:
            return f"environment variable {env[name]}"
    return str(config_file) if config_file is not None else "settings"


def _describe(exc: ValidationError, config_file: Path | None) -> str:
    lines = []
    for err in exc.errors(include_url=False):
        loc = tuple(str(p) for p in err["loc"])
        key = ".".join(loc) or "settings"
        where = _source(loc, config_file)
        if err["type"] == "extra_forbidden":
            problem = "unknown key" + _did_you_mean(loc[-1], _fields_at(loc))
        else:
            msg = str(err["msg"]).removeprefix("Value error, ")
            problem = msg[:1].lower() + msg[1:]
            if "input" in err and not isinstance(err["input"], dict | list):
                problem += f" (got {err['input']!r})"
        lines.append(f"{where}: {key}: {problem}")
    return "\n".join(lines)


def _env_parse_problem() -> str:
    """Which environment variable holds a list or table that is not JSON."""
    for upper, name in sorted(_env_vars().items()):
        try:
            json.loads(os.environ[name])
        except ValueError:
            parts = upper[len(ENV_PREFIX) :].lower().split("__")
            if len(parts) == 2:
                model = _sections().get(parts[0])
                field = model.model_fields.get(parts[1]) if model else None
                if field is not None and str(field.annotation).startswith(("list", "dict")):
                    return (
                        f"environment variable {name}: {parts[0]}.{parts[1]} is a list; write it "
                        "as JSON, e.g. '[\"http://localhost:*\"]'"
                    )
    return (
        f"environment variables {ENV_PREFIX}…: a list or table value could not be read; "
        "write lists and tables as JSON"
    )


def provider_options(settings: Settings) -> dict[str, dict[str, object]]:
    """Per-provider options, with a data directory under the bridge's unless one is set."""
    data_dir = settings.data_dir()
    options: dict[str, dict[str, object]] = {}
    for name in settings.bridge.providers:
        opts = dict(settings.providers.get(name, {}))
        opts.setdefault("data_dir", str(Path(data_dir) / "providers" / name))
        options[name] = opts
    return options
