"""The ACP provider's options (``[providers.NAME]`` with ``kind = "acp"``), checked up front.

Every limit has a default and a key; a bad value is refused with one sentence naming the key.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class OptionsError(ValueError):
    """An option the operator must fix; the message names the key."""


_INTS = {
    # key: (default, minimum)
    "stderr_bytes": (64 * 1024, 1024),
    "max_message_bytes": (16 * 1024 * 1024, 64 * 1024),
    "max_file_bytes": (8 * 1024 * 1024, 1024),
    "terminal_output_bytes": (1024 * 1024, 1024),
    "max_terminals": (16, 1),
    "max_tool_text_bytes": (16 * 1024, 256),
}
_FLOATS = {
    "start_timeout": (60.0, 1.0),
    "request_timeout": (120.0, 1.0),
    "terminal_timeout": (600.0, 1.0),
    "stop_grace": (3.0, 0.0),
}
_STRINGS = ("display_name", "workdir", "data_dir", "mode", "auth_method")
_BOOLS = {"inherit_env": True, "probe_models": True}

#: The keys `[providers.NAME]` may hold (None: any value), which the bridge checks when it
#: loads its configuration.
OPTION_KEYS: Mapping[str, Any] = dict.fromkeys(
    ("command", "env", *_INTS, *_FLOATS, *_STRINGS, *_BOOLS)
)


@dataclass(frozen=True)
class AcpOptions:
    """How to start one ACP agent and the bounds the bridge keeps it in."""

    command: tuple[str, ...]
    """The agent's command and arguments (``command = ["claude-agent-acp"]``)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables set for the agent on top of the bridge's environment (or instead of it)."""
    inherit_env: bool = True
    """False: the agent sees only PATH, HOME, USER, LANG, TERM, SHELL, TMPDIR and ``env``."""
    display_name: str = ""
    """The agent's label for clients; default: the name the agent gives in ``initialize``."""
    workdir: str = ""
    """Where the agent process starts; sessions always get their own working directory."""
    data_dir: str = ""
    mode: str = ""
    """A session mode (``session/set_mode``) selected on every new and reopened session."""
    auth_method: str = ""
    """An auth method id to ``authenticate`` with right after ``initialize``."""
    probe_models: bool = True
    """List models by opening one scratch session when no session reported them yet."""
    stderr_bytes: int = 64 * 1024
    """The newest bytes of the agent's stderr kept for doctor and exit messages."""
    max_message_bytes: int = 16 * 1024 * 1024
    """The largest JSON-RPC message read from the agent; a longer line is dropped."""
    max_file_bytes: int = 8 * 1024 * 1024
    """The largest file ``fs/read_text_file`` returns or ``fs/write_text_file`` writes."""
    terminal_output_bytes: int = 1024 * 1024
    """Output kept per terminal (the agent may ask for less, never more)."""
    max_terminals: int = 16
    """Terminals one conversation may hold at once."""
    max_tool_text_bytes: int = 16 * 1024
    """Tool input and output display text kept per tool call."""
    start_timeout: float = 60.0
    """Seconds the agent has to start and answer ``initialize``."""
    request_timeout: float = 120.0
    """Seconds for any request but ``session/prompt`` (new, load, set_mode ...)."""
    terminal_timeout: float = 600.0
    """Seconds a terminal command may run before the bridge kills it."""
    stop_grace: float = 3.0
    """Seconds the agent has to exit once its stdin is closed before it gets SIGTERM (codex-acp
    0.16.0 does not exit at end of input; it does at SIGTERM, at once)."""
    renew_after_cancel: bool | None = None
    """Close and resume a session (``session/close``, ``session/resume``) after a cancelled
    turn, before its end is reported. None: for the agents known to need it (claude-agent-acp
    answers a cancelled prompt before its session went idle, so the next prompt ends at once,
    empty, and its answer goes to the prompt after)."""

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> AcpOptions:
        opts = dict(options)
        opts.pop("kind", None)
        known = {"command", "env", "renew_after_cancel", *_INTS, *_FLOATS, *_STRINGS, *_BOOLS}
        unknown = sorted(set(opts) - known)
        if unknown:
            raise OptionsError(
                f"unknown ACP provider option {unknown[0]!r}; see config.example.toml for the keys"
            )
        command = opts.pop("command", None)
        if isinstance(command, str):
            command = shlex.split(command)
        if (
            not isinstance(command, list | tuple)
            or not command
            or not all(isinstance(c, str) and c for c in command)
        ):
            raise OptionsError(
                "the ACP provider needs `command`, the agent command and its arguments, e.g. "
                'command = ["claude-agent-acp"]'
            )
        env = opts.pop("env", {}) or {}
        if not isinstance(env, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str | int | float | bool) for k, v in env.items()
        ):
            raise OptionsError('`env` must be a table of NAME = "value" strings')
        values: dict[str, Any] = {
            "command": tuple(command),
            "env": {k: str(v) for k, v in env.items()},
        }
        for key, (_, minimum) in _INTS.items():
            if key in opts:
                values[key] = _number(key, opts[key], int, minimum)
        for key, (_, fmin) in _FLOATS.items():
            if key in opts:
                values[key] = _number(key, opts[key], float, fmin)
        for key in _STRINGS:
            if key in opts:
                if not isinstance(opts[key], str):
                    raise OptionsError(f"`{key}` must be a string")
                values[key] = opts[key]
        for key in _BOOLS:
            if key in opts:
                if not isinstance(opts[key], bool):
                    raise OptionsError(f"`{key}` must be true or false")
                values[key] = opts[key]
        renew = opts.get("renew_after_cancel")
        if renew is not None and not isinstance(renew, bool):
            raise OptionsError("`renew_after_cancel` must be true or false")
        values["renew_after_cancel"] = renew
        return cls(**values)

    def executable(self) -> str | None:
        """The agent command's full path, or None when it cannot be found."""
        program = self.command[0]
        if os.sep in program:
            return program if os.access(program, os.X_OK) and os.path.isfile(program) else None
        path = self.environment().get("PATH")
        return shutil.which(program, path=path)

    def environment(self) -> dict[str, str]:
        """The agent's environment: the bridge's (or a minimal one) plus ``env``."""
        if self.inherit_env:
            base = dict(os.environ)
        else:
            keep = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "SHELL", "TMPDIR")
            base = {k: os.environ[k] for k in keep if k in os.environ}
        base.update(self.env)
        return base

    def label(self) -> str:
        return os.path.basename(self.command[0])


def _number(key: str, value: Any, kind: type, minimum: float) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise OptionsError(f"`{key}` must be a number")
    if kind is int and not float(value).is_integer():
        raise OptionsError(f"`{key}` must be a whole number")
    if value < minimum:
        raise OptionsError(f"`{key}` must be at least {minimum:g}")
    return kind(value)
