"""The README's command-line paragraph, one test per promise: every operator mistake is one line
on stderr that says what to do (exit code 2 for the command line, 1 for configuration and
start-up); options go before or after the command, for every command; every command, at every
depth, has a "did you mean" for a typo.

Mistakes are found before anything starts, so most cases call `main` in this process (fast);
one runs the real command to prove the process exit code and that stderr is all it wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sys
import uuid
from pathlib import Path

import pytest
import trio

from ahp_bridge.cli import build_parser, main
from ahp_bridge.host.durable.catalog import Catalog, SessionRecord

INSTALLED = "(installed: acp, copilot, fake, remote)"


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("ahp-bridge: "), err
    return lines[0].removeprefix("ahp-bridge: ")


# -- one line, exit code 2, for every command-line mistake ---------------------------------


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--bogus"], "unrecognized arguments: --bogus (see `ahp-bridge serve --help`)"),
        (
            ["serve", "--lisen", "x"],
            "unrecognized arguments: --lisen x; did you mean `--listen`? "
            "(see `ahp-bridge serve --help`)",
        ),
        (
            ["--lisen", "127.0.0.1:0"],
            "unrecognized arguments: --lisen 127.0.0.1:0; did you mean `--listen`? "
            "(see `ahp-bridge serve --help`)",
        ),
        (
            ["--listen", "localhost:99999"],
            "argument --listen: port 99999 is out of range: ports are 0 to 65535 (0 picks any "
            "free port) (see `ahp-bridge serve --help`)",
        ),
        (
            ["--listen", "8765"],
            "argument --listen: expected HOST:PORT (e.g. 127.0.0.1:8765, or port 0 for any free "
            "port), got '8765' (see `ahp-bridge serve --help`)",
        ),
        (
            ["--listen", "example.invalid:8765"],
            "cannot listen on example.invalid:8765: the host name 'example.invalid' does not "
            "resolve (Name or service not known); use an IP address of this machine (127.0.0.1, "
            "or 0.0.0.0 for every interface) or a name it resolves, e.g. --listen 127.0.0.1:8765",
        ),
        (
            ["--log-format", "xml"],
            "argument --log-format: invalid choice: 'xml' (choose from 'console', 'json') "
            "(see `ahp-bridge serve --help`)",
        ),
        (["--provider", "nope", "--listen", "127.0.0.1:0"], f"unknown provider 'nope' {INSTALLED}"),
        (["doctor", "--provider", "nope"], f"unknown provider 'nope' {INSTALLED}"),
        (
            ["serve-provider", "--provider", "fake"],
            "the following arguments are required: --listen "
            "(see `ahp-bridge serve-provider --help`)",
        ),
        (
            ["serve-provider", "--provider", "fake", "--listen", "unix:/x", "--option", "x"],
            "--option expects KEY=VALUE, got 'x'",
        ),
        (
            ["serve-provider", "--provider", "fake", "--listen", "unix:/x", "--option", "scirpt=y"],
            "--option scirpt: unknown key; did you mean `script`?",
        ),
        (
            ["sessions"],
            "`ahp-bridge sessions` needs a command: list, forget, import "
            "(see `ahp-bridge sessions --help`)",
        ),
        (
            ["sessions", "forget"],
            "the following arguments are required: uri (see `ahp-bridge sessions forget --help`)",
        ),
        (
            ["sessions", "import", "--provider", "nope", "--workdir", "."],
            f"unknown provider 'nope' {INSTALLED}",
        ),
        (
            ["conformance"],
            "the following arguments are required: --provider "
            "(see `ahp-bridge conformance --help`)",
        ),
        (["conformance", "--provider", "nope"], f"unknown provider 'nope' {INSTALLED}"),
        (
            ["--log-level", "bogus", "conformance", "--provider", "fake"],
            "argument --log-level: invalid choice: 'bogus' (choose from 'debug', 'info', "
            "'warning', 'error') (see `ahp-bridge conformance --help`)",
        ),
        (
            ["conformance", "--provider", "fake", "--check", "cancl"],
            "unknown check 'cancl'; did you mean `cancel`? (checks: ",
        ),
        (
            ["frobnicate"],
            "unknown command 'frobnicate' (commands: serve, conformance, doctor, serve-provider, "
            "sessions; see ahp-bridge --help)",
        ),
    ],
)
def test_a_command_line_mistake_is_one_line_and_exit_code_2(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    line: str,
) -> None:
    monkeypatch.setenv("AHP_BRIDGE__BRIDGE__DATA_DIR", str(tmp_path))
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (2, "")
    said = one_line(err)
    assert said.startswith(line) if line.endswith(": ") else said == line


@pytest.mark.parametrize(
    ("setup", "argv", "line"),
    [
        (
            "dir",
            ["--config", "{tmp}"],
            "--config {tmp} is a directory; give a TOML file, e.g. "
            "--config {tmp}/bridge.toml (config.example.toml documents every setting)",
        ),
        ("", ["--config", "{tmp}/nope.toml"], "config file not found: {tmp}/nope.toml"),
        (
            "[providers.fake]\nscirpt = 'demo.toml'\n",
            ["--config", "{file}", "--provider", "copilot"],
            "{file}: providers.fake.scirpt: unknown key; did you mean `script`?",
        ),
        (
            "[providers.copilot.byok]\nbase_ur = 'http://127.0.0.1:1/v1'\nmodel = 'm'\n",
            ["doctor", "--config", "{file}", "--provider", "fake"],
            "{file}: providers.copilot.byok.base_ur: unknown key; did you mean `base_url`?",
        ),
        (
            "[providers.claude]\nkind = 'acp'\ncomand = ['claude-code-acp']\n",
            ["sessions", "list", "--config", "{file}"],
            "{file}: providers.claude.comand: unknown key; did you mean `command`?",
        ),
        (
            "[providers.other]\nkind = 'acpx'\n",
            ["--config", "{file}", "--provider", "other"],
            "provider 'other' has kind 'acpx', which is not installed " + INSTALLED,
        ),
    ],
    ids=["config-dir", "config-missing", "fake-typo", "byok-typo", "acp-typo", "kind"],
)
def test_a_configuration_mistake_is_one_line_and_exit_code_1(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    setup: str,
    argv: list[str],
    line: str,
) -> None:
    """A provider option's typo is found at load, whichever provider is served (here: never
    the one with the typo), in the words of every other unknown key: where, the key path, and
    the closest valid key."""
    monkeypatch.setenv("AHP_BRIDGE__BRIDGE__DATA_DIR", str(tmp_path))
    file = tmp_path / "bridge.toml"
    if setup and setup != "dir":
        file.write_text(setup)
    fill = {"{tmp}": str(tmp_path), "{file}": str(file)}
    for key, value in fill.items():
        argv = [a.replace(key, value) for a in argv]
        line = line.replace(key, value)
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (1, "")
    assert one_line(err) == line


def test_a_provider_option_typo_from_the_environment_names_the_variable(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AHP_BRIDGE__BRIDGE__DATA_DIR", str(tmp_path))
    monkeypatch.setenv("AHP_BRIDGE__PROVIDERS__REMOTE__ADRESS", "unix:/x")
    code, _, err = cli(capsys, "sessions", "list")
    assert code == 1
    assert one_line(err) == (
        "environment variable AHP_BRIDGE__PROVIDERS__REMOTE__ADRESS: providers.remote.adress: "
        "unknown key; did you mean `address`?"
    )


async def test_the_real_process_writes_only_that_line_and_exits_with_its_code(
    tmp_path: Path,
) -> None:
    for argv, code in ((["sessions", "lst"], 2), (["--config", str(tmp_path)], 1)):
        result = await trio.run_process(
            [sys.executable, "-m", "ahp_bridge.cli", *argv],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env={**os.environ, "AHP_BRIDGE__BRIDGE__DATA_DIR": str(tmp_path)},
        )
        assert (result.returncode, result.stdout) == (code, b""), result.stderr
        assert len(result.stderr.decode().splitlines()) == 1, result.stderr


# -- did you mean, for every command at every depth ----------------------------------------


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out.append((*path, name))
                out.extend(_commands(child, (*path, name)))
    return out


COMMANDS = _commands(build_parser())


def test_every_command_is_covered() -> None:
    assert COMMANDS == [
        ("serve",),
        ("conformance",),
        ("doctor",),
        ("serve-provider",),
        ("sessions",),
        ("sessions", "list"),
        ("sessions", "forget"),
        ("sessions", "import"),
    ]


@pytest.mark.parametrize("path", COMMANDS, ids=["-".join(p) for p in COMMANDS])
def test_a_typo_of_any_command_gets_a_did_you_mean(
    capsys: pytest.CaptureFixture[str], path: tuple[str, ...]
) -> None:
    word = path[-1]
    typo = word[: len(word) // 2] + word[len(word) // 2 + 1 :]  # one letter left out
    code, out, err = cli(capsys, *path[:-1], typo)
    assert (code, out) == (2, "")
    what = f"{path[-2]} command" if len(path) > 1 else "command"
    assert one_line(err).startswith(f"unknown {what} {typo!r}; did you mean `{word}`? (commands:")


# -- options before or after the command, for every command --------------------------------


def _catalog_with_one_session(data: Path) -> str:
    catalog = Catalog.open(data)
    uri = f"ahp-session:/{uuid.uuid4()}"
    now = "2026-01-01T00:00:00.000Z"
    catalog.add_session(
        SessionRecord(uri=uri, provider="fake", workdir="/w", created_at=now, modified_at=now)
    )
    catalog.close()
    return uri


#: For every command: its words, options it takes (moved before the words, then after), and
#: what the output shows only when those options were read.
CASES: dict[str, tuple[list[str], list[str], int, str]] = {
    "serve": (
        ["serve", "--print-vscode-settings"],
        ["--listen", "127.0.0.1:9123", "--data-dir", "{data}"],
        0,
        '"address": "127.0.0.1:9123"',
    ),
    "conformance": (
        ["conformance"],
        ["--provider", "fake", "--check", "reopen_unknown", "--durations"],
        0,
        "PASS reopen_unknown (",
    ),
    "doctor": (["doctor"], ["--provider", "fake", "--data-dir", "{data}"], 0, "provider 'fake'"),
    "serve-provider": (
        ["serve-provider"],
        ["--provider", "fake", "--listen", "unix:/x", "--token-env", "AHP_TEST_UNSET_VAR"],
        1,
        "environment variable AHP_TEST_UNSET_VAR is empty or unset",
    ),
    "sessions-list": (["sessions", "list"], ["--data-dir", "{data}"], 0, "{uri}"),
    "sessions-forget": (["sessions", "forget"], ["--data-dir", "{data}"], 0, "forgot {uri}"),
    "sessions-import": (
        ["sessions", "import"],
        ["--provider", "fake", "--workdir", "{data}", "--data-dir", "{data}"],
        1,
        "provider 'fake' cannot list its earlier conversations",
    ),
}


@pytest.mark.parametrize("where", ["before", "after", "between"])
@pytest.mark.parametrize("name", list(CASES))
def test_options_go_before_or_after_every_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, where: str
) -> None:
    words, options, expected, shows = CASES[name]
    # Every command has its case (`sessions` through its three).
    assert set(CASES) == {"-".join(p) for p in COMMANDS} - {"sessions"}
    uri = _catalog_with_one_session(tmp_path)
    (tmp_path / "connection-token").write_text("kept\n")  # for serve's VS Code entry
    options = [o.replace("{data}", str(tmp_path)) for o in options]
    if name == "sessions-forget":
        words = [*words, uri]
    argv = {
        "before": [*options, *words],
        "after": [*words, *options],
        "between": [words[0], *options, *words[1:]],
    }[where]
    code, out, err = cli(capsys, *argv)
    assert code == expected, (argv, out, err)
    assert shows.replace("{uri}", uri) in out + err, (argv, out, err)


# -- doctor --------------------------------------------------------------------------------


def test_doctor_checks_the_providers_the_configuration_serves(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No --provider: each provider `bridge.providers` names, each under its name."""
    config = tmp_path / "bridge.toml"
    config.write_text(
        '[bridge]\nproviders = ["fake", "second"]\n[providers.second]\nkind = "fake"\n'
    )
    code, out, err = cli(capsys, "doctor", "--config", str(config), "--data-dir", str(tmp_path))
    assert code == 0, err
    assert out.splitlines()[0] == "fake:"
    assert "second:" in out.splitlines()
    assert out.count("ok    the runtime is present and compatible") == 2


def test_doctor_with_a_wrong_cli_path_says_the_path_is_wrong(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not "set cli_path", which is set: which path names nothing, and the two ways out."""
    monkeypatch.setenv("AHP_BRIDGE__PROVIDERS__COPILOT__CLI_PATH", str(tmp_path / "copilot"))
    code, out, _ = cli(capsys, "doctor", "--provider", "copilot", "--data-dir", str(tmp_path))
    assert code == 1
    lines = out.splitlines()
    at = lines.index(f"FAIL  cli_path {tmp_path / 'copilot'} does not exist")
    assert lines[at + 1].startswith(
        "      fix: fix cli_path in [providers.copilot] (the path of the `copilot` binary), or "
        "remove it and let the bridge find the CLI where it is installed: install the tested "
        "release with `npm install --prefix "
    )
    assert "set cli_path" not in out


def test_the_readmes_vscode_entry_is_the_one_printed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The README's settings block, HOSTNAME being this machine's name, is what
    `--print-vscode-settings` prints for the default bind."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    [block] = [b for b in re.findall(r"```json\n(.*?)```", readme, re.S) if "remoteAgentHosts" in b]
    (tmp_path / "connection-token").write_text("kept-token\n")  # as the first serve keeps it
    documented = json.loads(
        block.replace("HOSTNAME", socket.gethostname()).replace("TOKEN", "kept-token")
    )
    code, out, err = cli(capsys, "--print-vscode-settings", "--data-dir", str(tmp_path))
    assert (code, err) == (0, "")
    assert json.loads(out) == documented
    assert [p.name for p in tmp_path.iterdir()] == ["connection-token"]  # printing wrote nothing


def test_version_is_the_packages(capsys: pytest.CaptureFixture[str]) -> None:
    import tomllib

    from ahp_bridge import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"ahp-bridge {__version__}\n"
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == __version__
    assert pyproject["project"]["scripts"] == {"ahp-bridge": "ahp_bridge.cli:main"}
