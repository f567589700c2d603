"""``ahp-bridge conformance``: run the suite against a provider loaded by entry point.

Usage: ``ahp-bridge conformance --provider NAME [--config FILE] [--option key=value ...]
[--prompt scenario=text ...] [--workdir DIR] [--check NAME ...] [--timeout SECONDS]
[--durations]``. Without ``--workdir`` conversations open in a scratch directory that is
removed afterwards. With ``--config`` (before or after the command word), NAME is a provider
the file configures: ``[providers.claude] kind = "acp"`` runs the ``acp`` adapter with exactly
the options the bridge would give it (``--option`` on top); without it NAME is an entry point.
Option values are read as TOML values when they parse as one (``speed=0``, ``debug=true``)
and as plain strings otherwise. Exit code 0 only when every check passed or did not apply.
"""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
import tomllib
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, NoReturn, TextIO

import trio

from ahp_bridge.agentapi import OpenRequest, Provider
from ahp_bridge.conformance.checks import CHECKS, CHECKS_BY_NAME
from ahp_bridge.conformance.fake import fake_target
from ahp_bridge.conformance.runner import run
from ahp_bridge.conformance.target import Prompts, Target

PROVIDER_GROUP = "ahp_bridge.providers"
_SCENARIOS = ("answer", "long", "permission", "question", "exit", "host_tool", "edit", "command")

CreateProvider = Callable[[Mapping[str, Any]], Provider]


class UsageError(Exception):
    """A command-line mistake; the message says which argument and why."""


def load_provider(name: str) -> CreateProvider:
    """The ``create_provider`` registered as ``name`` in the ``ahp_bridge.providers`` group."""
    found = entry_points(group=PROVIDER_GROUP, name=name)
    if not found:
        from ahp_bridge.providers import UnknownProvider

        raise UsageError(str(UnknownProvider(name)))
    create: CreateProvider = next(iter(found)).load()
    return create


def _pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise UsageError(f"{flag} {value!r}: expected key=value")
        pairs[key] = text
    return pairs


def option_value(text: str) -> Any:
    """A TOML value when ``text`` is one (numbers, booleans, arrays), else the text itself."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


class _Parser(argparse.ArgumentParser):
    """Argument mistakes are a UsageError (one line on stderr, exit code 2), not a usage
    block: the same manners as the rest of `ahp-bridge`."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `ahp-bridge conformance --help`)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ahp-bridge conformance",
        description="Check that a provider adapter keeps the agentapi contract.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  ahp-bridge conformance --provider fake\n"
        "  ahp-bridge conformance --config bridge.toml --provider claude\n"
        "  ahp-bridge conformance --provider copilot --option cli_path=/path/to/copilot "
        "--check cancel --durations",
    )
    parser.add_argument(
        "--provider",
        required=True,
        help="a provider the --config file names, else an entry point (fake, copilot, ...)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="the bridge's TOML settings: the provider's kind and options come from it",
    )
    parser.add_argument(
        "--option", action="append", default=[], metavar="KEY=VALUE", help="a provider option"
    )
    parser.add_argument(
        "--prompt",
        action="append",
        default=[],
        metavar="SCENARIO=TEXT",
        help=f"the prompt for a scenario ({', '.join(_SCENARIOS)})",
    )
    parser.add_argument("--workdir", help="project directory to open conversations in")
    parser.add_argument(
        "--check", action="append", default=[], metavar="NAME", help="run only these checks"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per check")
    parser.add_argument("--durations", action="store_true", help="show how long each check took")
    return parser


def configured(name: str, config: Path | None) -> tuple[str, dict[str, Any]]:
    """(entry point, options) of provider ``name`` as the bridge would run it with ``config``:
    the ``kind`` of its ``[providers.NAME]`` table (else the name itself) and that table's
    options, with the data directory the bridge gives it."""
    from ahp_bridge import providers
    from ahp_bridge.config import ConfigError, load_settings, provider_options

    try:
        settings = load_settings(config)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    if config is not None and name not in settings.providers:
        names = ", ".join(sorted(settings.providers)) or "none"
        raise UsageError(f"--provider {name!r}: {config} configures no such provider ({names})")
    settings.bridge.providers = [name]
    options = provider_options(settings)[name]
    kind = providers.kind_of(name, options)
    options.pop("kind", None)
    if config is None:
        options.pop("data_dir", None)  # an entry point alone: its own defaults, as before
    return kind, options


def build_target(
    args: argparse.Namespace, create: CreateProvider | None = None, *, scratch: str = ""
) -> Target:
    """The Target the command line describes; ``scratch`` is the workdir when none is given."""
    given = {k: option_value(v) for k, v in _pairs(args.option, "--option").items()}
    config = getattr(args, "config", None)
    kind, options = (args.provider, {}) if create is not None else configured(args.provider, config)
    options.update(given)
    name = args.provider if kind == args.provider else f"{args.provider} ({kind})"
    prompts = _pairs(args.prompt, "--prompt")
    unknown = sorted(set(prompts) - set(_SCENARIOS))
    if unknown:
        raise UsageError(f"--prompt {unknown[0]!r}: scenarios are {', '.join(_SCENARIOS)}")
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    workdir = args.workdir or scratch or tempfile.gettempdir()
    if kind == "fake" and create is None:
        base = fake_target(options, workdir=workdir, timeout=args.timeout)
        merged = {s: prompts.get(s, getattr(base.prompts, s)) for s in _SCENARIOS}
        label = base.name if name == "fake" else name
        return Target(label, base.factory, base.open_request, Prompts(**merged), args.timeout)
    make = create or load_provider(kind)
    try:
        make(options)
    except Exception as exc:  # any refusal of the options is a usage error
        raise UsageError(f"provider {args.provider!r} refused the options: {exc}") from exc

    def factory() -> AbstractAsyncContextManager[Provider]:
        return make(options)

    request = OpenRequest(session_id=str(uuid.uuid4()), workdir=workdir, title="AHP conformance")
    return Target(name, factory, request, Prompts(**prompts), args.timeout)


def _usage_error(message: object, err: TextIO | None) -> int:
    """One line on stderr in the words of every `ahp-bridge` command; exit code 2."""
    print(f"ahp-bridge: {message}", file=err or sys.stderr)
    return 2


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the suite as the command line says; print the report (on ``out``) or a mistake
    (one line on ``err``, exit code 2); 0 only when all pass."""
    stream = out or sys.stdout
    arguments = list(sys.argv[1:] if argv is None else argv)
    # Callers may forward argv from the word "conformance" on, or after a "--".
    if arguments[:1] == ["conformance"]:
        arguments = arguments[1:]
    if arguments[:1] == ["--"]:
        arguments = arguments[1:]
    try:
        args = _parser().parse_args(arguments)
    except UsageError as exc:
        return _usage_error(exc, err)
    try:
        checks = [CHECKS_BY_NAME[name] for name in args.check] if args.check else list(CHECKS)
    except KeyError as exc:
        name = exc.args[0]
        close = difflib.get_close_matches(name, list(CHECKS_BY_NAME), n=1, cutoff=0.6)
        hint = f"did you mean `{close[0]}`? " if close else ""
        return _usage_error(
            f"unknown check {name!r}; {hint}(checks: {', '.join(CHECKS_BY_NAME)})", err
        )
    with tempfile.TemporaryDirectory(prefix="ahp-conformance-") as scratch:
        try:
            target = build_target(args, scratch=scratch)
        except UsageError as exc:
            return _usage_error(exc, err)
        report = trio.run(run, target, checks)
    print(report.format(seconds=args.durations), file=stream)
    return 0 if report.passed else 1
