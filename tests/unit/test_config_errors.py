"""Config mistakes: one line naming the file or variable, the key path and the closest key."""

from __future__ import annotations

from pathlib import Path

import pytest

from ahp_bridge.config import ConfigError, load_settings


def error_of(path: Path | None = None) -> str:
    with pytest.raises(ConfigError) as err:
        load_settings(path)
    text = str(err.value)
    for leak in ("pydantic", "errors.pydantic.dev", "validation error", "type=", "Traceback"):
        assert leak not in text, text
    return text


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bridge.toml"
    path.write_text(text)
    return path


def test_an_unknown_key_names_the_file_the_key_and_the_closest_one(tmp_path: Path) -> None:
    path = write(tmp_path, "[server]\nprot = 9000\n")
    assert error_of(path) == f"{path}: server.prot: unknown key; did you mean `port`?"


def test_an_unknown_section_suggests_the_closest(tmp_path: Path) -> None:
    path = write(tmp_path, "[servr]\nport = 9000\n")
    assert error_of(path) == f"{path}: servr: unknown key; did you mean `server`?"


def test_an_unknown_key_far_from_any_lists_the_valid_ones(tmp_path: Path) -> None:
    path = write(tmp_path, "[log]\nzzzzzz = 1\n")
    assert error_of(path) == f"{path}: log.zzzzzz: unknown key (valid: format, level)"


def test_a_wrong_value_says_what_was_expected_and_what_came(tmp_path: Path) -> None:
    path = write(tmp_path, '[server]\nport = "high"\n[log]\nlevel = "loud"\n')
    lines = error_of(path).splitlines()
    assert f"{path}: server.port: input should be a valid integer" in lines[0]
    assert lines[0].endswith("(got 'high')")
    assert lines[1] == (
        f"{path}: log.level: input should be 'debug', 'info', 'warning' or 'error' (got 'loud')"
    )


def test_a_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[server\nport = 1\n")
    assert error_of(path) == (
        f"{path}: not valid TOML: Expected ']' at the end of a table declaration "
        "(at line 1, column 8)"
    )


def test_a_missing_file(tmp_path: Path) -> None:
    assert error_of(tmp_path / "nope.toml") == f"config file not found: {tmp_path / 'nope.toml'}"


def test_values_from_the_environment_name_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AHP_BRIDGE__SERVER__PORT", "abc")
    path = write(tmp_path, "[server]\nport = 9000\n")  # the environment wins, and is at fault
    text = error_of(path)
    assert text.startswith("environment variable AHP_BRIDGE__SERVER__PORT: server.port: ")
    assert text.endswith("(got 'abc')")


def test_an_unknown_variable_in_a_section(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AHP_BRIDGE__SERVER__PROT", "1")
    assert error_of() == (
        "environment variable AHP_BRIDGE__SERVER__PROT: server.prot: unknown key; "
        "did you mean `port`?"
    )


def test_an_unknown_section_variable_is_not_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AHP_BRIDGE__SERVR__PORT", "1")
    assert error_of() == (
        "environment variable AHP_BRIDGE__SERVR__PORT: unknown section `servr`; "
        "did you mean `server`?"
    )


def test_a_list_variable_that_is_not_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AHP_BRIDGE__SERVER__ALLOWED_ORIGINS", "http://localhost:*")
    assert error_of() == (
        "environment variable AHP_BRIDGE__SERVER__ALLOWED_ORIGINS: server.allowed_origins is a "
        "list; write it as JSON, e.g. '[\"http://localhost:*\"]'"
    )


def test_provider_options_are_free_form_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each provider checks its own options when it is created (see the CLI tests)."""
    monkeypatch.setenv("AHP_BRIDGE__PROVIDERS__FAKE__TIME_SCALE", "0")
    assert load_settings().providers == {"fake": {"time_scale": "0"}}


def test_copilot_options_name_the_key_and_the_closest() -> None:
    from ahp_bridge_copilot.options import CopilotOptions, OptionsError

    with pytest.raises(OptionsError) as err:
        CopilotOptions.parse({"offlne": True, "byok": {"base_url": "http://x", "modle": "m"}})
    assert str(err.value) == (
        "invalid [providers.copilot] options: byok.model: field required; byok.modle: unknown "
        "option; did you mean `model`?; offlne: unknown option; did you mean `offline`?"
    )
    with pytest.raises(OptionsError, match=r"offline = true needs your own model: add "):
        CopilotOptions.parse({"offline": True})


def test_fake_options_name_the_closest() -> None:
    from ahp_bridge_fake import create_provider

    with pytest.raises(ValueError) as err:
        create_provider({"time_scal": 0})
    assert str(err.value) == (
        "unknown fake provider option(s): time_scal (did you mean `time_scale`?); "
        "valid: script, data_dir, time_scale, sign_in_token, cancel_latency"
    )
