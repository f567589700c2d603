"""The `ahp-bridge` command: serve AHP, and the operator tools around it.

`ahp-bridge [serve] --provider fake` serves; `conformance`, `doctor`, `serve-provider` and
`sessions` are subcommands. Options may come before or after the command. The first line on
stdout when serving is `ahp-bridge listening on URL`, a URL a client can use as it is (with
`?tkn=` when a token is set), so scripts and tests can find an ephemeral port.

Every mistake an operator can make is one line on stderr that says what to do, never a
traceback: exit code 2 for a command-line mistake, 1 for a bad configuration or a failure to
start. One Ctrl-C (SIGINT or SIGTERM) stops cleanly; a second one exits at once (code 130).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import gc
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

import structlog
import trio

from ahp_bridge import __version__, providers
from ahp_bridge import log as logsetup
from ahp_bridge.config import ConfigError, Settings, load_settings

log = structlog.get_logger("ahp_bridge")

SUBCOMMANDS = ("serve", "conformance", "doctor", "serve-provider", "sessions")

#: Exit code of a second interrupt (128 + SIGINT, as shells report it).
EXIT_INTERRUPTED = 130

_FORMATTER = argparse.RawDescriptionHelpFormatter
_LOG_FORMATS = ("console", "json")
_LOG_LEVELS = ("debug", "info", "warning", "error")


class UsageError(Exception):
    """A command-line mistake (exit code 2); the message says what to do."""


class _Parser(argparse.ArgumentParser):
    """argparse, with a mistake raised as one UsageError line instead of a usage block; an
    unknown option gets the closest known one."""

    def error(self, message: str) -> NoReturn:
        unknown = message.removeprefix("unrecognized arguments: ")
        if unknown != message and unknown.startswith("-"):
            message += _closest_option(unknown.split()[0], self)
        raise UsageError(message)


def _closest_option(word: str, parser: argparse.ArgumentParser) -> str:
    """ "; did you mean `--listen`?" for an unknown option, or ""."""
    name = word.split("=", 1)[0]
    close = difflib.get_close_matches(name, sorted(_option_strings(parser)), n=1, cutoff=0.6)
    return f"; did you mean `{close[0]}`?" if close else ""


def _option_strings(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string of `parser` and its commands, at any depth."""
    out: set[str] = set()
    for action in parser._actions:
        out.update(s for s in action.option_strings if s.startswith("--"))
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                out |= _option_strings(child)
    return out


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit():
        raise argparse.ArgumentTypeError(
            f"expected HOST:PORT (e.g. 127.0.0.1:8765, or port 0 for any free port), got {value!r}"
        )
    if int(port) > 65535:
        raise argparse.ArgumentTypeError(
            f"port {int(port)} is out of range: ports are 0 to 65535 (0 picks any free port)"
        )
    return host.strip("[]") or "127.0.0.1", int(port)


def _installed() -> str:
    return ", ".join(providers.available()) or "none"


def _global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """Options every command takes, before or after its name (SUPPRESS keeps the top's value)."""
    d: Any = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--config", type=Path, default=d, metavar="FILE", help="TOML settings (config.example.toml)"
    )
    parser.add_argument(
        "--log-format", choices=_LOG_FORMATS, default=d, help="log format on stderr"
    )
    parser.add_argument("--log-level", choices=_LOG_LEVELS, default=d, help="log level")
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=d,
        metavar="DIR",
        help="where the session catalog and provider data live "
        "(default: $XDG_STATE_HOME/ahp-bridge or ~/.local/state/ahp-bridge)",
    )


def _sub(
    sub: Any, name: str, help: str, examples: Sequence[str], **kw: Any
) -> argparse.ArgumentParser:
    epilog = "examples:\n" + "\n".join(f"  {e}" for e in examples)
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        help=help,
        description=help[:1].upper() + help[1:] + ".",
        epilog=epilog,
        formatter_class=_FORMATTER,
        **kw,
    )
    _global_options(parser, top=False)
    return parser


def build_parser() -> argparse.ArgumentParser:
    installed = _installed()
    parser = _Parser(
        prog="ahp-bridge",
        description="Serve agent runtimes to Agent Host Protocol (AHP) clients over WebSocket.",
        formatter_class=_FORMATTER,
        epilog="examples:\n"
        "  ahp-bridge --provider fake                  serve the scripted agent on 127.0.0.1:8765\n"
        "  ahp-bridge --provider copilot --listen 127.0.0.1:9000\n"
        "  ahp-bridge --print-vscode-settings          the VS Code settings for this bridge\n"
        "  ahp-bridge doctor --provider copilot        what is missing and how to fix it\n"
        "  ahp-bridge sessions list                    the session catalog\n"
        "\n`ahp-bridge COMMAND --help` shows a command's options. Without a command, "
        "`ahp-bridge` serves.",
    )
    parser.add_argument("--version", action="version", version=f"ahp-bridge {__version__}")
    _global_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = _sub(
        sub,
        "serve",
        "serve AHP over WebSocket (the default command)",
        [
            "ahp-bridge serve --provider fake --listen 127.0.0.1:0",
            "ahp-bridge --provider copilot --config bridge.toml",
            "ahp-bridge --listen 0.0.0.0:8765     # any interface: a token is generated and kept",
            "ahp-bridge --print-vscode-settings --listen 127.0.0.1:9000",
        ],
    )
    serve.add_argument(
        "--provider",
        action="append",
        metavar="NAME",
        help=f"provider to serve, repeatable (installed: {installed}; default from config, "
        "else fake)",
    )
    serve.add_argument(
        "--listen",
        type=parse_listen,
        metavar="HOST:PORT",
        help="address to listen on (default 127.0.0.1:8765; port 0 picks a free one)",
    )
    serve.add_argument(
        "--wire-log",
        type=Path,
        metavar="FILE",
        help="record every frame in and out to FILE (JSONL for the AHP inspector; it holds "
        "transcripts, so it is created mode 0600)",
    )
    serve.add_argument(
        "--print-vscode-settings",
        action="store_true",
        help="print the VS Code settings (chat.remoteAgentHosts) for this bridge, then exit",
    )

    sub.add_parser(
        "conformance",
        help="run the adapter conformance suite against a provider (see its --help)",
        add_help=False,
    )

    doctor = _sub(
        sub,
        "doctor",
        "check a provider's runtime and say how to fix it",
        [
            "ahp-bridge doctor --provider copilot",
            "ahp-bridge doctor --config bridge.toml      # every provider bridge.toml serves",
            "ahp-bridge doctor --provider remote --config b.toml",
        ],
    )
    doctor.add_argument(
        "--provider",
        action="append",
        metavar="NAME",
        help=f"provider to check, repeatable (one of: {installed}; default: the ones the "
        "configuration serves, else fake)",
    )

    sp = _sub(
        sub,
        "serve-provider",
        "serve an installed provider over gRPC, for `--provider remote` bridges",
        [
            "ahp-bridge serve-provider --provider fake --listen unix:/tmp/fake.sock",
            "ahp-bridge serve-provider --provider copilot --listen 0.0.0.0:50051 "
            "--token-env PROVIDER_TOKEN",
        ],
    )
    sp.add_argument("--provider", required=True, metavar="NAME", help=f"one of: {installed}")
    sp.add_argument("--listen", required=True, metavar="ADDRESS", help="unix:PATH or HOST:PORT")
    sp.add_argument("--token-env", metavar="VAR", help="environment variable holding the token")
    sp.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="a provider option"
    )

    sessions = _sub(
        sub,
        "sessions",
        "list, forget or import sessions in the catalog",
        [
            "ahp-bridge sessions list",
            "ahp-bridge sessions list --data-dir /var/lib/ahp-bridge",
            "ahp-bridge sessions forget ahp-session:/1f0c...",
            "ahp-bridge sessions import --provider copilot --workdir ~/project",
        ],
    )
    ssub = sessions.add_subparsers(dest="sessions_command", required=True)
    _sub(ssub, "list", "list every session", ["ahp-bridge sessions list"])
    forget = _sub(
        ssub,
        "forget",
        "remove one session from the catalog (the provider keeps its conversation)",
        ["ahp-bridge sessions forget ahp-session:/1f0c..."],
    )
    forget.add_argument("uri", help="the session's URI, as `sessions list` shows it")
    imp = _sub(
        ssub,
        "import",
        "add a provider's earlier conversations as sessions",
        ["ahp-bridge sessions import --provider copilot --workdir ~/project"],
    )
    imp.add_argument(
        "--provider", required=True, metavar="NAME", help="a provider that can list them (copilot)"
    )
    imp.add_argument("--workdir", type=Path, required=True, help="their working directory")
    imp.add_argument("--conversation", metavar="ID", help="import only this conversation id")
    parser.epilog = _serve_options(serve) + "\n\n" + (parser.epilog or "")
    return parser


def _serve_options(serve: argparse.ArgumentParser) -> str:
    """The serve command's own options, for the top-level help: `ahp-bridge` alone serves,
    so they are the ones a first `--help` is read for."""
    lines = ["serve options (the default command; `ahp-bridge serve --help` has them all):"]
    for action in serve._actions:
        names = [s for s in action.option_strings if s.startswith("--")]
        help_text = action.help
        if "-h" in action.option_strings or not names or help_text is None:
            continue
        if names[0] in _option_strings_global():
            continue
        left = f"{names[0]} {action.metavar}" if action.metavar else names[0]
        lines.append(f"  {left:<28}{help_text.split(' (')[0]}")
    return "\n".join(lines)


def _option_strings_global() -> set[str]:
    probe = argparse.ArgumentParser(add_help=False)
    _global_options(probe, top=True)
    return {s for a in probe._actions for s in a.option_strings}


def _value_options(parser: argparse.ArgumentParser) -> set[str]:
    """Every option string, at any depth, that takes a value (to find the command word)."""
    out: set[str] = set()
    for action in parser._actions:
        if action.option_strings and action.nargs != 0:
            out.update(action.option_strings)
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                out |= _value_options(child)
    return out


def _command_word(
    argv: Sequence[str],
    takes_value: set[str],
    known: set[str] | None = None,
    commands: Sequence[str] = (),
) -> int | None:
    """The index of the first word that is neither an option nor an option's value.

    An option not in `known` (one of the conformance suite's, which has its own parser, or a
    typo) is taken to have a value unless the next word is one of `commands`, so `--check x
    conformance` finds the command and `--lisen x` is reported as the option it is.
    """
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--":
            return None
        if word.startswith("-"):
            name = word.split("=", 1)[0]
            unknown = known is not None and name not in known and "=" not in word
            follows = argv[i + 1] if i + 1 < len(argv) else "-"
            value = word in takes_value or (
                unknown and not follows.startswith("-") and follows not in commands
            )
            i += 2 if value else 1
            continue
        return i
    return None


def _commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            choices: dict[str, argparse.ArgumentParser] = action.choices
            return choices
    return None


def _route(argv: list[str], parser: argparse.ArgumentParser) -> tuple[list[str], list[str]]:
    """`argv` with `serve` where no command is named, and the command words it names (`sessions
    list`); an unknown or missing command, at any depth, is an error with a suggestion."""
    takes_value = _value_options(parser)
    known = _option_strings(parser) | {"-h", "--help", "--version"}
    helping = any(a in ("-h", "--help", "--version") for a in argv)
    top = list(_commands_of(parser) or ())
    if _command_word(argv, takes_value, known, top) is None:
        # The top-level help lists the commands (`serve --help` its options).
        return (argv, []) if helping else (["serve", *argv], ["serve"])
    path: list[str] = []
    positions: list[int] = []
    current, at = parser, 0
    while (commands := _commands_of(current)) is not None and path[-1:] != ["conformance"]:
        found = _command_word(argv[at:], takes_value, known, list(commands))
        where = " ".join(["ahp-bridge", *path])
        names = ", ".join(commands)
        if found is None:
            if helping:
                break
            raise UsageError(f"`{where}` needs a command: {names} (see `{where} --help`)")
        word = argv[at + found]
        if word not in commands:
            close = difflib.get_close_matches(word, list(commands), n=1, cutoff=0.5)
            hint = f"; did you mean `{close[0]}`?" if close else ""
            what = f"{path[-1]} command" if path else "command"
            raise UsageError(
                f"unknown {what} {word!r}{hint} (commands: {names}; see {where} --help)"
            )
        path.append(word)
        positions.append(at + found)
        current, at = commands[word], at + found + 1
    # Every option may come before or after the command words: the command words go first, so
    # the innermost command's parser reads them all (each command knows the global options too).
    rest = [w for i, w in enumerate(argv) if i not in positions]
    return [*path, *rest], path


def _error(message: str, code: int) -> int:
    for i, line in enumerate(str(message).splitlines() or [""]):
        print(f"ahp-bridge: {line}" if i == 0 else f"  {line}", file=sys.stderr)
    return code


def _settings(args: argparse.Namespace) -> Settings:
    settings = load_settings(getattr(args, "config", None))
    if getattr(args, "log_format", None):
        settings.log.format = args.log_format
    if getattr(args, "log_level", None):
        settings.log.level = args.log_level
    if getattr(args, "data_dir", None):
        settings.bridge.data_dir = args.data_dir
    return settings


def _log_options(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """`--log-format` and `--log-level` taken out of `argv` (for the conformance suite, whose
    own parser knows only its options), with their values."""
    rest: list[str] = []
    found: dict[str, str] = {}
    choices = {"--log-format": _LOG_FORMATS, "--log-level": _LOG_LEVELS}
    words = iter(argv)
    for word in words:
        name, eq, value = word.partition("=")
        if name in choices:
            value = value if eq else next(words, "")
            if value not in choices[name]:
                allowed = ", ".join(repr(c) for c in choices[name])
                raise UsageError(
                    f"argument {name}: invalid choice: {value!r} (choose from {allowed})"
                )
            found[name[6:]] = value
            continue
        rest.append(word)
    return rest, found


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    path: list[str] = []
    try:
        argv, path = _route(argv, parser)
        if path[:1] == ["conformance"]:
            # The suite has its own parser (provider options and check selection); the options
            # before the command word are its options too.
            from ahp_bridge.conformance.cli import main as conformance_main

            rest, log_options = _log_options(argv[1:])
            logsetup.configure(
                log_options.get("format") or "console", log_options.get("level") or "warning"
            )
            return conformance_main(rest)
        args = parser.parse_args(argv)
    except UsageError as exc:
        where = " ".join(["ahp-bridge", *path])
        message = str(exc)
        return _error(message if "--help" in message else f"{message} (see `{where} --help`)", 2)
    try:
        settings = _settings(args)
    except ConfigError as exc:
        return _error(str(exc), 1)
    logsetup.configure(settings.log.format, settings.log.level)
    commands: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
        "serve": _serve,
        "doctor": _doctor,
        "serve-provider": _serve_provider,
        "sessions": _sessions,
    }
    try:
        return commands[args.command](args, settings)
    except KeyboardInterrupt:  # an interrupt before or after trio's signal handling
        return EXIT_INTERRUPTED


def check_providers(names: Sequence[str], settings: Settings) -> None:
    """Raise UnknownProvider (the one wording for it) for the first name whose adapter is not
    installed: the name itself, or a named instance's `kind` (`[providers.claude] kind = "acp"`).
    """
    known = set(providers.available())
    for name in names:
        kind = providers.kind_of(name, settings.providers.get(name))
        if kind not in known:
            raise providers.UnknownProvider(kind, instance=name)


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    from ahp_bridge.host.transport import connect

    if args.provider:
        settings.bridge.providers = list(dict.fromkeys(args.provider))
    if args.listen:
        settings.server.host, settings.server.port = args.listen
    if args.wire_log:
        settings.server.wire_log = args.wire_log
    try:
        check_providers(settings.bridge.providers, settings)
        _check_host(settings.server.host, settings.server.port)
        # Printing the settings writes nothing: a token is made only by a bridge that serves.
        source = connect.ensure_token(settings, create=not args.print_vscode_settings)
    except providers.UnknownProvider as exc:
        return _error(str(exc), _named_here(exc, args.provider))
    except UsageError as exc:
        return _error(str(exc), 2 if args.listen else 1)
    except OSError as exc:
        return _error(f"cannot keep the connection token in {settings.data_dir()}: {exc}", 1)
    server = settings.server
    if args.print_vscode_settings:
        if server.port == 0:
            return _error(
                "port 0 is chosen when the bridge starts; give a fixed one with --listen HOST:PORT",
                2,
            )
        if source is not None and source.kind == "missing":
            return _error(
                f"a bridge on {server.host} needs a connection token, and none is kept in "
                f"{source.path} yet: serve once with these options (the bridge makes one and "
                "keeps it there), or set server.token; then print the settings again",
                1,
            )
        settings_json = connect.vscode_settings(server.host, server.port, server.token)
        print(json.dumps(settings_json, indent=2))
        return 0
    with _long_lived_imports():
        from ahp_bridge.host.app import run_bridge

    async def main_task() -> None:
        stop = trio.Event()
        async with trio.open_nursery() as nursery:
            grace = settings.server.shutdown_grace
            trio.lowlevel.spawn_system_task(_stop_on_signals, nursery.cancel_scope, stop, grace)
            port = await nursery.start(functools.partial(run_bridge, settings, stop=stop))
            _banner(settings, port, source)

    try:
        trio.run(main_task)
    except Exception as exc:  # a startup failure is an operator error: say it plainly, once
        return _failed(exc)
    return 0


@contextlib.contextmanager
def _long_lived_imports() -> Iterator[None]:
    """The imports of a command that serves build a few hundred thousand objects (the wire
    models, an adapter's SDK) that live as long as the process. The cyclic garbage collector
    would walk them all at each full collection while they are built, at every one after, and
    once more at exit: about 0.6 s of CPU in a bridge's start and stop (1.55 s instead of 2.2).
    So it is off while they are built, and they are frozen out of its sight once they are
    (`gc.freeze`). The price: the few thousand objects the imports leave in reference cycles
    are never freed (a full collection to free them costs 0.16 s)."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.freeze()


def _named_here(exc: providers.UnknownProvider, named: Sequence[str] | None) -> int:
    """The exit code of an unknown provider: 2 when the command line named it, 1 when the
    configuration did (a `[providers.X]` table's `kind`, `bridge.providers`)."""
    return 2 if exc.name in (named or ()) else 1


def _check_host(host: str, port: int) -> None:
    """A host name that does not resolve is said before anything starts (no token is made for
    it, no warning about the network is printed), with what to use instead."""
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UsageError(
            f"cannot listen on {host}:{port}: the host name {host!r} does not resolve "
            f"({exc.strerror}); use an IP address of this machine (127.0.0.1, or 0.0.0.0 for "
            "every interface) or a name it resolves, e.g. --listen 127.0.0.1:8765"
        ) from None


def _failed(exc: BaseException) -> int:
    """One line for the operator; the traceback only at `--log-level debug`."""
    cause = _leaf(exc)
    log.debug("stopped by an error", exc_info=cause)
    return _error(str(cause) or type(cause).__name__, 1)


def _banner(settings: Settings, port: int, source: Any) -> None:
    """The connect lines on stdout; the first is `ahp-bridge listening on URL`."""
    from ahp_bridge.host.transport import connect

    server = settings.server
    hosts = connect.reachable_hosts(server.host)
    urls = [connect.connect_url(h, port, server.token) for h in hosts]
    print(f"ahp-bridge listening on {urls[0]}", flush=True)
    for url in urls[1:]:
        print(f"  also on {url}", flush=True)
    if source is not None and source.kind == "generated":
        print(
            f"  a connection token was generated and kept in {source.path} (clients pass it "
            "as ?tkn=; reused next run; set server.token to choose one)",
            flush=True,
        )
    elif source is not None and source.kind == "reused":
        print(f"  the connection token is the one kept in {source.path}", flush=True)
    entry = connect.vscode_settings(server.host, port, server.token)["chat.remoteAgentHosts"][0]
    print(
        f"  VS Code (chat.remoteAgentHosts; chat.remoteAgentHostsEnabled): {json.dumps(entry)}",
        flush=True,
    )


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside nested exception groups (trio nurseries wrap them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


async def _stop_on_signals(
    scope: trio.CancelScope, stop: trio.Event | None = None, grace: float = 0.0
) -> None:
    """The first SIGINT or SIGTERM stops cleanly (`stop`: every client is told goodbye, then
    everything stops; past `grace` and a little more, the scope is cancelled); a second one
    exits at once.

    A system task, so it keeps listening while the main task shuts down (a task in the
    cancelled nursery would stop listening, and the second Ctrl-C would become a traceback).
    Child processes (the Copilot CLI) run in their own process groups, so a terminal's Ctrl-C
    reaches only the bridge, which stops them; on a second one they see their stdin close.
    """
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for signum in signals:
            if scope.cancel_called or (stop is not None and stop.is_set()):
                print("ahp-bridge: stopping now (second interrupt)", file=sys.stderr, flush=True)
                os._exit(EXIT_INTERRUPTED)
            log.info("shutting down", signal=signal.Signals(signum).name)
            if stop is None:
                scope.cancel()
                continue
            stop.set()
            trio.lowlevel.spawn_system_task(_cancel_later, scope, grace + 3)


async def _cancel_later(scope: trio.CancelScope, seconds: float) -> None:
    """A clean stop that takes too long is cut short."""
    await trio.sleep(seconds)
    scope.cancel()


def _doctor(args: argparse.Namespace, settings: Settings) -> int:
    """Check each provider named with --provider, else each the configuration serves."""
    from ahp_bridge.config import provider_options
    from ahp_bridge.doctor import run_doctor

    names = list(dict.fromkeys(args.provider or settings.bridge.providers))
    try:
        check_providers(names, settings)
    except providers.UnknownProvider as exc:
        return _error(str(exc), _named_here(exc, args.provider))
    settings.bridge.providers = names
    options = provider_options(settings)
    codes = []
    for name in names:
        if len(names) > 1:
            print(f"{name}:")
        codes.append(run_doctor(name, options[name]))
    return max(codes)


def _parse_options(pairs: Sequence[str], kind: str = "") -> dict[str, Any]:
    """`--option KEY=VALUE` pairs; a key the adapter `kind` does not declare is a mistake in
    the words of the configuration's (the closest valid key)."""
    options: dict[str, Any] = {}
    keys = providers.option_keys(kind) if kind else None
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UsageError(f"--option expects KEY=VALUE, got {pair!r}")
        if keys is not None and key not in keys and key not in providers.HOST_KEYS:
            valid = [*providers.HOST_KEYS, *keys]
            close = difflib.get_close_matches(key, valid, n=1, cutoff=0.5)
            hint = f"; did you mean `{close[0]}`?" if close else f" (valid: {', '.join(valid)})"
            raise UsageError(f"--option {key}: unknown key{hint}")
        options[key] = value
    return options


def _serve_provider(args: argparse.Namespace, settings: Settings) -> int:
    try:
        check_providers([args.provider], settings)
        table = settings.providers.get(args.provider, {})
        kind = providers.kind_of(args.provider, table)
        options = {**table, **_parse_options(args.option, kind)}
    except providers.UnknownProvider as exc:
        return _error(str(exc), _named_here(exc, [args.provider]))
    except UsageError as exc:
        return _error(str(exc), 2)
    token = os.environ.get(args.token_env) if args.token_env else None
    if args.token_env and not (token or "").strip():
        return _error(f"environment variable {args.token_env} is empty or unset", 1)
    try:
        with _long_lived_imports():
            provider = providers.create(args.provider, options)
            from ahp_bridge_remote.server import serve as serve_grpc
    except ValueError as exc:
        return _error(f"[providers.{args.provider}]: {exc}", 1)

    async def main_task() -> None:
        async with trio.open_nursery() as nursery:
            trio.lowlevel.spawn_system_task(_stop_on_signals, nursery.cancel_scope)
            address = await nursery.start(
                functools.partial(serve_grpc, provider, args.listen, token=token)
            )
            print(f"ahp-bridge serving provider {args.provider} on {address}", flush=True)

    try:
        trio.run(main_task)
    except Exception as exc:
        return _failed(exc)
    return 0


def _sessions(args: argparse.Namespace, settings: Settings) -> int:
    from ahp_bridge.host.durable.catalog_cli import run_sessions_command

    return run_sessions_command(args, settings)


if __name__ == "__main__":
    raise SystemExit(main())
