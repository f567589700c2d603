"""Build the SDK's CopilotClient from provider options, and clean up after it.

Both the provider and ``doctor`` start clients the same way: an explicit CLI path (so the SDK
never downloads a runtime) or the URL of a running CLI, the options' environment, data
directory and credentials.

Two things the SDK does not offer are added here:

- The CLI runs in its own process group (``start_new_session``), so a terminal's Ctrl-C reaches
  the bridge only; the bridge stops the CLI itself (and a CLI on stdio exits when the bridge's
  end of its pipes closes, however the bridge ends).
- The SDK logs expected states (a CLI that stopped, a refused request the adapter reports in its
  own words, the CLI's stderr) as warnings with tracebacks. Unless the host logs at debug, its
  loggers are kept at error, so what an operator sees is the adapter's sentence.
"""

from __future__ import annotations

import contextlib
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

from ahp_bridge_support.imports import import_without_gc
from ahp_bridge_support.private import private_dir

from .options import CopilotOptions


class _OwnGroupPopen(subprocess.Popen):
    """subprocess.Popen that puts the child in a new session (its own process group)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if sys.platform != "win32":
            kwargs.setdefault("start_new_session", True)
        super().__init__(*args, **kwargs)


class _SubprocessInNewGroups:
    """The ``subprocess`` module as copilot.client sees it: the same, but Popen is ours."""

    Popen = _OwnGroupPopen

    def __getattr__(self, name: str) -> Any:
        return getattr(subprocess, name)


def _own_process_groups() -> None:
    import copilot.client as sdk_client

    if not isinstance(sdk_client.subprocess, _SubprocessInNewGroups):
        sdk_client.subprocess = _SubprocessInNewGroups()  # type: ignore[assignment]


def quiet_sdk_logs() -> None:
    """Keep the SDK's loggers at error unless the host logs at debug or set them itself."""
    sdk = logging.getLogger("copilot")
    if sdk.level == logging.NOTSET and not logging.getLogger().isEnabledFor(logging.DEBUG):
        sdk.setLevel(logging.ERROR)


def make_client(opts: CopilotOptions, cli: Path | None) -> Any:
    """A new, unstarted CopilotClient. Call on the asyncio thread that will run it."""
    import_without_gc("copilot")
    from copilot import CopilotClient
    from copilot.client import RuntimeConnection

    _own_process_groups()
    quiet_sdk_logs()

    if opts.cli_url:
        connection: Any = RuntimeConnection.for_uri(opts.cli_url, connection_token=opts.cli_token())
    else:
        if cli is None:
            raise ValueError("a CLI path is required when cli_url is not set")
        connection = RuntimeConnection.for_stdio(path=str(cli))
    token = opts.token()
    if opts.data_dir:
        private_dir(opts.data_dir)  # COPILOT_HOME keeps the sign-in: the user's only
    return _tracking(CopilotClient)(
        connection=connection,
        env=opts.runtime_env(),
        base_directory=opts.data_dir or None,
        working_directory=opts.workdir or None,
        github_token=token,
        use_logged_in_user=None if token else (opts.byok is None),
        log_level=opts.log_level,
    )


def _tracking(base: type[Any]) -> type[Any]:
    """A CopilotClient that remembers every child process it starts.

    The SDK forgets its process when it force-stops (e.g. after a failed handshake) without
    closing the pipes; remembering it lets the adapter close them.
    """

    class TrackingClient(base):
        def __setattr__(self, name: str, value: Any) -> None:
            if name == "_cli_process" and value is not None:
                self.__dict__.setdefault("_ahp_processes", []).append(value)
            super().__setattr__(name, value)

    return TrackingClient


def close_pipes(client: Any) -> None:
    """Close the stdio pipes of every process the client started (the SDK leaves them open)."""
    for process in getattr(client, "_ahp_processes", []):
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def process_of(client: Any) -> Any:
    """The child process the client runs now, if it started one."""
    return getattr(client, "_cli_process", None)
