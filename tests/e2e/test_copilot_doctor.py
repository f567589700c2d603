"""``ahp_bridge_copilot.doctor.report``: each problem gets a failing line with a fix, and
secrets never appear in the output."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ahp_bridge_copilot.doctor import report

from tests.support.copilot_cli import CLI_PATH, offline_env, requires_cli
from tests.support.model_server import ModelServer

FAULT_CLI = Path(__file__).resolve().parents[1] / "fixtures" / "copilot" / "fault_cli.py"
SECRET = "ghp_doctor-secret-value-0123456789"


@pytest.fixture
def secret_env() -> Iterator[str]:
    os.environ["AHP_TEST_DOCTOR_TOKEN"] = SECRET
    yield "AHP_TEST_DOCTOR_TOKEN"
    del os.environ["AHP_TEST_DOCTOR_TOKEN"]


def failing(lines: list[tuple[bool, str, str]]) -> list[tuple[bool, str, str]]:
    return [line for line in lines if not line[0]]


def test_invalid_options_are_one_line_with_the_reason() -> None:
    lines = report({"byok": {"base_url": "ftp://x", "model": "m"}, "bogus": 1})
    assert len(lines) == 1
    ok, what, fix = lines[0]
    assert not ok and what == "provider options"
    assert "byok.base_url" in fix and "bogus" in fix


def test_a_cli_path_that_names_nothing_says_so(tmp_path: Path) -> None:
    lines = report({"cli_path": str(tmp_path / "missing")})
    (bad,) = failing(lines)
    assert bad[1] == f"cli_path {tmp_path / 'missing'} does not exist"
    assert bad[2].startswith("fix cli_path in [providers.copilot] (the path of the `copilot` ")
    assert "or set cli_path" not in bad[2]  # it is set: the fix is to correct it
    (tmp_path / "missing").write_text("")
    (bad,) = failing(report({"cli_path": str(tmp_path / "missing")}))
    assert bad[1] == f"cli_path {tmp_path / 'missing'} is not executable"


def test_missing_cli_names_the_exact_npm_command(monkeypatch: pytest.MonkeyPatch) -> None:
    import ahp_bridge_copilot.doctor as doctor

    monkeypatch.setattr(doctor, "find_cli", lambda opts: None)  # installed nowhere
    lines = report({})
    (bad,) = failing(lines)
    assert bad[1] == "Copilot CLI not found"
    # A wheel has no scripts/: the npm command installs the tested CLI where it is looked for.
    assert bad[2].startswith(
        "install the tested release with `npm install --prefix ~/.local/share/ahp-bridge/copilot "
        "@github/copilot@1.0.102` (found there without further setup)"
    )
    assert "or run `bash scripts/install-copilot-cli.sh` in the checkout" in bad[2]  # we are one
    assert bad[2].endswith(
        "or set cli_path in [providers.copilot] (or COPILOT_CLI_PATH) to the binary"
    )


def test_the_npm_prefix_is_where_the_cli_is_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ahp_bridge_copilot.options import (
        CopilotOptions,
        cli_candidates,
        find_cli,
        npm_binary_relpath,
    )

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    monkeypatch.delenv("COPILOT_CLI_PATH", raising=False)
    monkeypatch.chdir(tmp_path)
    binary = tmp_path / "ahp-bridge" / "copilot" / npm_binary_relpath()
    candidates = cli_candidates(CopilotOptions())
    assert binary in candidates
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    # Found unless something earlier in the search order (a checkout's .tools) is present.
    earlier = candidates[: candidates.index(binary)]
    expected = next((c for c in earlier if c.is_file()), binary)
    assert find_cli(CopilotOptions()) == expected


def test_offline_without_byok_is_an_options_error() -> None:
    (bad,) = report({"offline": True})
    assert bad[1] == "provider options"
    assert "offline = true needs your own model: add [providers.copilot.byok]" in bad[2]


def test_protocol_mismatch(tmp_path: Path) -> None:
    opts: dict[str, Any] = {"cli_path": str(FAULT_CLI), "env": {"AHP_FAULT_MODE": "protocol"}}
    lines = report(opts)
    assert (True, "GitHub Copilot CLI 0.0.0-fault; tested with 1.0.102", "") in lines
    (bad,) = failing(lines)
    assert "incompatible protocol" in bad[1] and "1.0.102" in bad[2]


def test_signed_out_and_unset_token(tmp_path: Path) -> None:
    opts = {
        "cli_path": str(FAULT_CLI),
        "token_env": "AHP_TEST_UNSET_TOKEN",
        "data_dir": str(tmp_path / "d"),
    }
    lines = report(opts)
    whats = [w for ok, w, _ in lines if ok]
    assert any("speaks protocol 3" in w for w in whats)
    assert any("is writable" in w for w in whats)
    bad = failing(lines)
    assert [b[1] for b in bad] == [
        "token_env names $AHP_TEST_UNSET_TOKEN, which is not set",
        "GitHub Copilot is signed out",
    ]
    fix = bad[1][2]
    # The real command: this provider's CLI binary and its COPILOT_HOME.
    assert fix.startswith(f"run `COPILOT_HOME={tmp_path / 'd'} {FAULT_CLI} login`; ")
    assert "sign in from an AHP client" in fix
    assert "use your own model, without a GitHub account, with [providers.copilot.byok]" in fix


def test_token_value_is_never_shown(secret_env: str) -> None:
    lines = report({"cli_path": str(FAULT_CLI), "token_env": secret_env})
    assert (True, f"a GitHub token is set in ${secret_env}", "") in lines
    assert SECRET not in repr(lines)


@requires_cli
def test_real_cli_with_byok_is_healthy(tmp_path: Path) -> None:
    env = offline_env(tmp_path)
    opts = {
        "cli_path": str(CLI_PATH),
        "env": {"HOME": env["HOME"]},
        "data_dir": env["COPILOT_HOME"],
        "byok": {"base_url": "http://127.0.0.1:9/v1", "model": "m"},
    }
    (bad,) = failing(report(opts))  # nothing listens on 127.0.0.1:9
    assert "does not answer" in bad[1] and "byok.base_url" in bad[2]
    with ModelServer() as models:
        base_url = models.base_url
        opts["byok"] = {"base_url": base_url, "model": "m"}
        lines = report(opts)
        assert failing(lines) == []
        assert [r.path for r in models.requests] == ["/v1/models"]
        # The documented offline setup starts the CLI too (it needs its provider at start).
        offline = {**opts, "offline": True}
        assert failing(report(offline)) == []
    whats = " | ".join(w for _, w, _ in lines)
    assert "1.0.102 (the tested release)" in whats
    assert "speaks protocol 3" in whats and "no sign-in needed" in whats
    assert f"the model server at {base_url} answers" in whats
    # Without a model provider or token, the offline CLI is signed out.
    del opts["byok"]
    (bad,) = failing(report(opts))
    assert bad[1] == "GitHub Copilot is signed out"
    assert f"run `COPILOT_HOME={env['COPILOT_HOME']} {CLI_PATH} login`" in bad[2]
