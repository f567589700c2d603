"""The `ahp-bridge` command: serve AHP, and the operator tools around it.

`ahp-bridge [serve] --provider fake` serves; `conformance`, `doctor`, `serve-provider` and
`sessions` are subcommands. The first line on stdout when serving is
`ahp-bridge listening on ws://HOST:PORT`, so scripts and tests can find an ephemeral port.
"""

from __future__ import annotations

import argparse
import functools
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog
import trio

from ahp_bridge import __version__
from ahp_bridge import log as logsetup
from ahp_bridge.config import Settings, load_settings

log = structlog.get_logger("ahp_bridge")

SUBCOMMANDS = ("serve", "conformance", "doctor", "serve-provider", "sessions")


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="TOML settings file (see config.example.toml)")
    parser.add_argument("--log-format", choices=("console", "json"), help="log output format")
    parser.add_argument("--log-level", choices=("debug", "info", "warning", "error"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ahp-bridge", description="Serve agent runtimes to AHP 0.7.0 clients over WebSocket."
    )
    parser.add_argument("--version", action="version", version=f"ahp-bridge {__version__}")
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", help="serve AHP over WebSocket (the default command)")
    _common(serve)
    serve.add_argument(
        "--provider",
        action="append",
        help="provider to serve (repeatable; default from config, else fake)",
    )
    serve.add_argument("--listen", type=parse_listen, help="HOST:PORT (default 127.0.0.1:8765)")
    serve.add_argument("--data-dir", type=Path, help="where sessions and provider data are kept")

    sub.add_parser(
        "conformance",
        help="run the adapter conformance suite against a provider (see its --help)",
        add_help=False,
    )

    doctor = sub.add_parser("doctor", help="check a provider's runtime and say how to fix it")
    _common(doctor)
    doctor.add_argument("--provider", required=True)

    sp = sub.add_parser("serve-provider", help="serve an installed provider over gRPC")
    _common(sp)
    sp.add_argument("--provider", required=True)
    sp.add_argument("--listen", required=True, help="unix:PATH or HOST:PORT")
    sp.add_argument("--token-env", help="environment variable holding the connection token")
    sp.add_argument("--option", action="append", default=[], help="provider option key=value")

    sessions = sub.add_parser("sessions", help="list or forget sessions in the catalog")
    _common(sessions)
    sessions.add_argument("--data-dir", type=Path)
    ssub = sessions.add_subparsers(dest="sessions_command", required=True)
    ssub.add_parser("list", help="list every session")
    forget = ssub.add_parser("forget", help="remove one session from the catalog")
    forget.add_argument("uri")
    imp = ssub.add_parser("import", help="add a provider's earlier conversations as sessions")
    imp.add_argument("--provider", required=True, help="a provider that implements Importer")
    imp.add_argument("--workdir", type=Path, required=True, help="their working directory")
    imp.add_argument("--conversation", help="import only this conversation id")
    return parser


def parse_options(pairs: Sequence[str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"ahp-bridge: --option expects key=value, got {pair!r}")
        options[key] = value
    return options


def _settings(args: argparse.Namespace) -> Settings:
    try:
        settings = load_settings(getattr(args, "config", None))
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"ahp-bridge: {exc}") from None
    if getattr(args, "log_format", None):
        settings.log.format = args.log_format
    if getattr(args, "log_level", None):
        settings.log.level = args.log_level
    return settings


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help", "--version")):
        argv = ["serve", *argv]
    if argv[0] == "conformance":
        # The suite has its own parser (provider options and check selection).
        from ahp_bridge.conformance.cli import main as conformance_main

        logsetup.configure("console", "warning")
        return conformance_main(argv[1:])
    args = build_parser().parse_args(argv)
    settings = _settings(args)
    logsetup.configure(settings.log.format, settings.log.level)
    if args.command == "serve":
        return _serve(args, settings)
    if args.command == "doctor":
        return _doctor(args, settings)
    if args.command == "serve-provider":
        return _serve_provider(args, settings)
    if args.command == "sessions":
        return _sessions(args, settings)
    raise AssertionError(args.command)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    if args.provider:
        settings.bridge.providers = list(dict.fromkeys(args.provider))
    if args.listen:
        settings.server.host, settings.server.port = args.listen
    if args.data_dir:
        settings.bridge.data_dir = args.data_dir
    from ahp_bridge.host.app import run_bridge

    async def main_task() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_cancel_on_signal, nursery.cancel_scope)
            port = await nursery.start(run_bridge, settings)
            print(
                f"ahp-bridge listening on ws://{_url_host(settings.server.host)}:{port}", flush=True
            )

    try:
        trio.run(main_task)
    except Exception as exc:  # a startup failure is an operator error: say it plainly
        cause = _leaf(exc)
        log.error("ahp-bridge stopped", error=str(cause), kind=type(cause).__name__)
        print(f"ahp-bridge: {cause}", file=sys.stderr)
        return 1
    return 0


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside nested exception groups (trio nurseries wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def _cancel_on_signal(scope: trio.CancelScope) -> None:
    """Shut down cleanly on the first SIGINT or SIGTERM."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            log.info("shutting down", signal=signal.Signals(signum).name)
            scope.cancel()
            return


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _doctor(args: argparse.Namespace, settings: Settings) -> int:
    from ahp_bridge.doctor import run_doctor

    return run_doctor(args.provider, settings.providers.get(args.provider, {}))


def _serve_provider(args: argparse.Namespace, settings: Settings) -> int:
    import os

    from ahp_bridge import providers

    options = {**settings.providers.get(args.provider, {}), **parse_options(args.option)}
    token = os.environ.get(args.token_env) if args.token_env else None
    if args.token_env and not token:
        raise SystemExit(f"ahp-bridge: environment variable {args.token_env} is empty or unset")
    try:
        provider = providers.create(args.provider, options)
    except providers.UnknownProvider as exc:
        raise SystemExit(f"ahp-bridge: {exc}") from None
    from ahp_bridge_remote.server import serve as serve_grpc

    async def main_task() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_cancel_on_signal, nursery.cancel_scope)
            address = await nursery.start(
                functools.partial(serve_grpc, provider, args.listen, token=token)
            )
            print(f"ahp-bridge serving provider {args.provider} on {address}", flush=True)

    try:
        trio.run(main_task)
    except Exception as exc:
        print(f"ahp-bridge: {_leaf(exc)}", file=sys.stderr)
        return 1
    return 0


def _sessions(args: argparse.Namespace, settings: Settings) -> int:
    from ahp_bridge.host.catalog_cli import run_sessions_command

    if args.data_dir:
        settings.bridge.data_dir = args.data_dir
    return run_sessions_command(args, settings)


if __name__ == "__main__":
    raise SystemExit(main())
