"""Build the SDK's CopilotClient from provider options, and clean up after it.

Both the provider and ``doctor`` start clients the same way: an explicit CLI path (so the SDK
never downloads a runtime) or the URL of a running CLI, the options' environment, data
directory and credentials.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from .options import CopilotOptions


def make_client(opts: CopilotOptions, cli: Path | None) -> Any:
    """A new, unstarted CopilotClient. Call on the asyncio thread that will run it."""
    from copilot import CopilotClient
    from copilot.client import RuntimeConnection

    if opts.cli_url:
        connection: Any = RuntimeConnection.for_uri(opts.cli_url, connection_token=opts.cli_token())
    else:
        if cli is None:
            raise ValueError("a CLI path is required when cli_url is not set")
        connection = RuntimeConnection.for_stdio(path=str(cli))
    token = opts.token()
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
