"""``ahp-bridge conformance``: argument handling, provider loading and exit codes."""

from __future__ import annotations

import io
import json
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import trio

from ahp_bridge.conformance import CHECKS, fake_target
from ahp_bridge.conformance.checks import CHECKS_BY_NAME
from ahp_bridge.conformance.cli import (
    UsageError,
    _parser,
    build_target,
    configured,
    load_provider,
    main,
    option_value,
)
from ahp_bridge.conformance.runner import run
from tests.conformance.toy import Faults, Options, ToyProvider
from tests.support.acp_agents import sdk_agent_options


def run_main(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out, err=out)
    return code, out.getvalue()


def test_the_fake_passes_from_the_command_line() -> None:
    code, text = run_main("conformance", "--provider", "fake", "--option", "time_scale=0.05")
    lines = text.splitlines()
    assert code == 0, text
    assert lines[0] == "conformance: fake"
    assert lines[-1] == f"{len(CHECKS)} passed, 0 failed, 0 not applicable"
    assert all(line.startswith("PASS ") for line in lines[1:-1])


def test_argv_forwarded_after_a_double_dash() -> None:
    code, text = run_main("--", "--provider", "fake", "--check", "reopen_unknown")
    assert code == 0, text
    assert text.splitlines()[1] == "PASS reopen_unknown"


def test_selected_checks_only() -> None:
    code, text = run_main("--provider", "fake", "--check", "reopen_unknown", "--check", "cancel")
    assert code == 0, text
    assert text.splitlines()[1:3] == ["PASS reopen_unknown", "PASS cancel"]


def test_durations_are_shown_on_request() -> None:
    code, text = run_main("--provider", "fake", "--check", "reopen_unknown", "--durations")
    assert code == 0, text
    assert re.fullmatch(r"PASS reopen_unknown \(\d+\.\d\ds\)", text.splitlines()[1])


def test_a_failing_check_makes_the_exit_code_one() -> None:
    # The fake's conformance script fails the turn of this prompt.
    code, text = run_main(
        "--provider", "fake", "--prompt", "answer=conformance: fail", "--check", "transcript"
    )
    assert code == 1
    assert text.splitlines()[1].startswith("FAIL transcript: the answer turn ended failed")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--provider", "nope"], "ahp-bridge: unknown provider 'nope' (installed: "),
        (["--provider", "fake", "--check", "nope"], "ahp-bridge: unknown check 'nope'; (checks: "),
        (["--provider", "fake", "--check", "cancl"], "'cancl'; did you mean `cancel`?"),
        ([], "ahp-bridge: the following arguments are required: --provider (see `ahp-bridge "),
        (["--provider", "fake", "--option", "novalue"], "expected key=value"),
        (["--provider", "fake", "--prompt", "plan=x"], "--prompt 'plan': scenarios are"),
        (["--provider", "fake", "--timeout", "0"], "--timeout must be positive"),
    ],
)
def test_usage_errors_exit_two(argv: list[str], message: str) -> None:
    """One line on stderr, in the words of every ahp-bridge command, and nothing on stdout."""
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, out=out, err=err)
    assert (code, out.getvalue()) == (2, "")
    [line] = err.getvalue().splitlines()
    assert line.startswith("ahp-bridge: ") and message in line, line


def test_a_run_without_a_workdir_leaves_nothing_in_the_temporary_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fake's target and the command line both work in scratch directories they remove
    (the edit check writes a file there)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, text = run_main("--provider", "fake", "--check", "cap_file_edits", "--check", "cancel")
    assert code == 0, text
    assert trio.run(run, fake_target(), [CHECKS_BY_NAME["cap_file_edits"]]).passed
    assert list(tmp_path.iterdir()) == []


def test_provider_options_it_refuses_are_usage_errors() -> None:
    args = _parser().parse_args(["--provider", "copilot-or-other", "--option", "bogus=1"])

    def create(options: Mapping[str, Any]) -> ToyProvider:
        raise ValueError(f"unknown option(s): {', '.join(options)}")

    with pytest.raises(UsageError, match="refused the options: unknown option"):
        build_target(args, create)


def test_option_values_are_read_as_toml_when_they_parse() -> None:
    assert option_value("0.5") == 0.5
    assert option_value("true") is True
    assert option_value('["a", "b"]') == ["a", "b"]
    assert option_value("/tmp/script.toml") == "/tmp/script.toml"
    assert option_value("") == ""


def test_load_provider_finds_entry_points() -> None:
    create = load_provider("fake")
    assert create.__name__ == "create_provider"
    with pytest.raises(UsageError, match="unknown provider"):
        load_provider("no-such-provider")


def test_any_provider_factory_gets_the_parsed_options_and_prompts() -> None:
    seen: list[Mapping[str, Any]] = []

    def create(options: Mapping[str, Any]) -> ToyProvider:
        seen.append(options)
        return ToyProvider(Options(faults=Faults(cancel_completes=bool(options["broken"]))))

    argv = ["--provider", "toy", "--option", "broken=true", "--workdir", "/srv/x"]
    for scenario in ("answer", "long", "permission", "question", "edit"):
        argv += ["--prompt", f"{scenario}={scenario}"]
    argv += ["--prompt", "host_tool=host tool"]
    target = build_target(_parser().parse_args(argv), create)
    assert target.prompts.host_tool == "host tool"
    assert target.open_request.workdir == "/srv/x"
    assert target.prompts.long == "long"
    report = trio.run(run, target)
    assert seen[0] == {"broken": True}
    assert [r.check for r in report.failures()] == ["cancel", "turn_after_cancel"]


def sdk_agent_config(path: Path, name: str = "mine") -> Path:
    """A bridge config naming the SDK test agent as an ACP instance (``kind = "acp"``)."""
    options = sdk_agent_options(path.parent / "store")
    q = json.dumps  # a JSON string literal is a valid TOML basic string
    command = ", ".join(q(c) for c in options["command"])  # type: ignore[attr-defined]
    env = ", ".join(f"{k} = {q(v)}" for k, v in options["env"].items())  # type: ignore[attr-defined]
    path.write_text(
        f"[bridge]\ndata_dir = {q(str(path.parent / 'data'))}\n"
        f'[providers.{name}]\nkind = "acp"\ncommand = [{command}]\nenv = {{ {env} }}\n'
        "probe_models = true\n"
    )
    return path


def test_a_configured_provider_is_run_with_the_bridges_options(tmp_path: Path) -> None:
    config = sdk_agent_config(tmp_path / "bridge.toml")
    kind, options = configured("mine", config)
    assert kind == "acp"
    assert options["command"] == sdk_agent_options(tmp_path / "store")["command"]
    assert options["probe_models"] is True
    assert options["data_dir"] == str(tmp_path / "data" / "providers" / "mine")
    code, text = run_main(
        "--config", str(config), "--provider", "mine", "--check", "provider_basics"
    )
    assert code == 0, text
    assert text.splitlines()[:2] == ["conformance: mine (acp)", "PASS provider_basics: 2 models"]


def test_a_provider_the_config_does_not_name_is_a_usage_error(tmp_path: Path) -> None:
    config = sdk_agent_config(tmp_path / "bridge.toml")
    code, text = run_main("--config", str(config), "--provider", "claude")
    assert code == 2
    assert text == f"ahp-bridge: --provider 'claude': {config} configures no such provider (mine)\n"
    code, text = run_main("--config", str(tmp_path / "none.toml"), "--provider", "mine")
    assert (code, text) == (2, f"ahp-bridge: config file not found: {tmp_path / 'none.toml'}\n")
