"""Settings: a TOML file, overridden by environment variables, overridden by command-line flags.

Environment overrides use the prefix `AHP_BRIDGE__` and `__` between levels, for example
`AHP_BRIDGE__SERVER__PORT=9000` or `AHP_BRIDGE__PROVIDERS__FAKE__SCRIPT=/path/demo.toml`.
`config.example.toml` documents every setting.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from ahp_bridge.state.limits import Limits


def default_state_dir() -> Path:
    """The user's state directory (XDG), where the bridge keeps its catalog and provider data."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(Path.home(), ".local", "state")
    return Path(base) / "ahp-bridge"


class ServerSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(8765, ge=0, le=65535)
    token: str | None = None
    allowed_origins: list[str] = Field(default_factory=list)
    max_frame_bytes: int = Field(4 * 1024 * 1024, ge=1024)
    outbound_queue: int = Field(4096, ge=16)
    max_subscriptions: int = Field(1024, ge=1)
    replay_log: int = Field(10_000, ge=100)
    #: Bytes of canonical frames the replay log keeps, whatever their count.
    replay_log_bytes: int = Field(64 * 1024 * 1024, ge=64 * 1024)


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
    #: Seconds a disconnected client has to reconnect before it stops being an active client.
    active_client_grace: float = Field(30.0, ge=0)
    #: Days a session may go unmodified before it is forgotten at startup (0 = keep forever).
    retention_days: int = Field(0, ge=0)


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


class LimitSettings(BaseModel):
    """What one client may make the host keep (config.example.toml says why each is so).
    Each refusal names its key as `limits.<name>`."""

    model_config = ConfigDict(extra="forbid")

    max_title_bytes: int = Field(1024, ge=16)
    max_action_bytes: int = Field(128 * 1024, ge=1024)
    max_queued_messages: int = Field(8, ge=0)
    max_annotations: int = Field(64, ge=0)
    max_working_directories: int = Field(16, ge=1)
    max_sessions: int = Field(500, ge=1)
    max_sessions_per_client: int = Field(20, ge=1)
    max_chats_per_session: int = Field(8, ge=1)

    def limits(self) -> Limits:
        return Limits(**self.model_dump())


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="AHP_BRIDGE__", env_nested_delimiter="__", extra="forbid"
    )

    server: ServerSettings = Field(default_factory=ServerSettings)
    log: LogSettings = Field(default_factory=LogSettings)
    bridge: BridgeSettings = Field(default_factory=BridgeSettings)
    workspace: WorkspaceSettings = Field(default_factory=WorkspaceSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
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
    """Read settings from `config_file` (if any) and the environment; `overrides` win."""
    if config_file is not None and not config_file.is_file():
        raise FileNotFoundError(f"config file not found: {config_file}")
    _CONFIG_FILE.clear()
    if config_file is not None:
        _CONFIG_FILE["path"] = config_file
    try:
        return Settings(**overrides)
    finally:
        _CONFIG_FILE.clear()
