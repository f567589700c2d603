"""`ahp-bridge` as a real subprocess: startup, signals, config errors, logs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import orjson
import pytest
import trio
from trio_websocket import ConnectionClosed, open_websocket_url

from ahp_bridge.host.transport.connection import GOING_AWAY
from tests.e2e.test_host_core import upgrade_status
from tests.support.ahp_client import open_client
from tests.unit.test_conformance_cli import sdk_agent_config

READY = b"ahp-bridge listening on ws://"


async def start_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[trio.Process, str]:
    """Start `ahp-bridge` and wait for its ready line; returns the process and the URL."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "ahp_bridge.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    assert process.stdout is not None
    line = b""
    with trio.fail_after(30):
        while not line.endswith(b"\n"):
            chunk = await process.stdout.receive_some(1)
            if not chunk:
                break
            line += chunk
    assert line.startswith(READY), line
    return process, line.decode().strip().removeprefix("ahp-bridge listening on ")


async def stop(process: trio.Process, sig: int) -> tuple[int, bytes]:
    process.send_signal(sig)
    assert process.stderr is not None
    err = b""
    with trio.fail_after(20):
        while chunk := await process.stderr.receive_some(65536):
            err += chunk
        code = await process.wait()
    return code, err


async def banner_rest(process: trio.Process) -> str:
    """The banner lines after the first, up to the VS Code line that ends it."""
    assert process.stdout is not None
    text = b""
    with trio.fail_after(10):
        while b"VS Code" not in text or not text.endswith(b"\n"):
            chunk = await process.stdout.receive_some(65536)
            if not chunk:
                break
            text += chunk
    return text.decode()


def bridge_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["--provider", "fake", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path), *extra]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_serves_and_shuts_down_cleanly_on_signals(tmp_path: Path, sig: int) -> None:
    process, url = await start_cli(*bridge_args(tmp_path))
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "cli-test")
        result = await client.initialize(["ahp-root://"])
        assert result["protocolVersion"] == "0.7.0"
        await client.close()
        nursery.cancel_scope.cancel()
    code, err = await stop(process, sig)
    assert code == 0, err.decode()
    assert b"shutting down" in err


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_stop_sends_every_client_a_going_away_close(tmp_path: Path, sig: int) -> None:
    """The first Ctrl-C or SIGTERM: each client gets close 1001 before the process ends."""
    process, url = await start_cli(*bridge_args(tmp_path))
    async with open_websocket_url(url) as ws:
        await ws.send_message(
            orjson.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {"protocolVersions": ["1.0.0"], "clientId": "going"},
                }
            ).decode()
        )
        assert orjson.loads(await ws.get_message())["id"] == 1
        process.send_signal(sig)
        with trio.fail_after(10), pytest.raises(ConnectionClosed) as closed:
            while True:
                await ws.get_message()
        assert closed.value.reason is not None
        assert (closed.value.reason.code, closed.value.reason.reason) == (1001, GOING_AWAY)
        # A client waits for the server's TCP close (RFC 6455); the context would cancel that
        # wait and leave the socket to the garbage collector.
        await trio.aclose_forcefully(ws._stream)
    with trio.fail_after(20):
        code = await process.wait()  # the one signal stops it (a second would be code 130)
    assert code == 0


async def test_json_logs_are_json_and_carry_no_tokens_or_prompts(tmp_path: Path) -> None:
    token = "tok-" + uuid.uuid4().hex
    process, url = await start_cli(
        *bridge_args(tmp_path, "--log-format", "json", "--log-level", "debug"),
        env={"AHP_BRIDGE__SERVER__TOKEN": token, "AHP_BRIDGE__PROVIDERS__FAKE__TIME_SCALE": "0"},
    )
    secret_prompt = "my-secret-prompt-" + uuid.uuid4().hex
    assert url.endswith(f"/?tkn={token}")  # the banner's URL works as it is
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "logs")
        await client.initialize(["ahp-root://"])
        session = f"ahp-session:/{uuid.uuid4()}"
        await client.request("createSession", {"channel": session, "provider": "fake"})
        await client.subscribe(session)
        await client.wait_for(lambda: client.states[session].get("lifecycle") == "ready")
        chat = client.states[session]["defaultChat"]
        await client.subscribe(chat)
        await client.dispatch(
            chat,
            {
                "type": "chat/turnStarted",
                "turnId": "t1",
                "startedAt": "2026-01-01T00:00:00.000Z",
                "message": {"text": secret_prompt, "origin": {"kind": "user"}},
            },
        )
        await client.wait_for(lambda: "t1" in str(client.envelopes))
        await client.close()
        nursery.cancel_scope.cancel()
    code, err = await stop(process, signal.SIGTERM)
    assert code == 0
    lines = [line for line in err.decode().splitlines() if line.strip()]
    assert lines, "expected log lines"
    for line in lines:
        try:
            record = orjson.loads(line)  # every line of stderr is one JSON record
        except orjson.JSONDecodeError:
            raise AssertionError(f"not a JSON log line: {line!r}") from None
        assert "event" in record and "level" in record
    assert token not in err.decode()
    assert secret_prompt not in err.decode()


async def test_non_loopback_bind_without_token_generates_one_and_keeps_it(tmp_path: Path) -> None:
    """An empty token is no token: the bridge never serves every interface without one."""
    env = {"AHP_BRIDGE__SERVER__TOKEN": " "}
    args = [*bridge_args(tmp_path), "--listen", "0.0.0.0:0"]
    process, url = await start_cli(*args, env=env)
    token_file = tmp_path / "connection-token"
    token = token_file.read_text().strip()
    assert token_file.stat().st_mode & 0o777 == 0o600
    assert url.startswith("ws://") and url.endswith(f"/?tkn={token}"), url
    port = int(url.split("/?", 1)[0].rsplit(":", 1)[1])
    assert await upgrade_status(port, "/") == 403  # no token: refused before any JSON-RPC
    async with trio.open_nursery() as nursery:
        # Every URL the banner printed works as printed (the wildcard's real addresses).
        rest = await banner_rest(process)
        also = [line.split("also on ", 1)[1] for line in rest.splitlines() if "also on " in line]
        assert f"ws://127.0.0.1:{port}/?tkn={token}" in [url, *also]
        assert f"kept in {token_file}" in rest and "generated" in rest
        for each in [url, *also]:
            client = await open_client(nursery, each, "wildcard")
            await client.initialize()
            await client.close()
        nursery.cancel_scope.cancel()
    code, _err = await stop(process, signal.SIGTERM)
    assert code == 0
    again, url2 = await start_cli(*args, env=env)  # the kept token is reused
    assert url2.endswith(f"/?tkn={token}")
    assert "the connection token is the one kept in" in await banner_rest(again)
    code, _ = await stop(again, signal.SIGTERM)
    assert code == 0


async def test_a_loopback_bind_needs_the_token_too(tmp_path: Path) -> None:
    """Any local user's process can reach loopback: the default bind has a token, the banner's
    URL carries it, and a client without it is refused before any JSON-RPC."""
    process, url = await start_cli(*bridge_args(tmp_path))
    token = (tmp_path / "connection-token").read_text().strip()
    assert (tmp_path / "connection-token").stat().st_mode & 0o777 == 0o600
    assert url.startswith("ws://127.0.0.1:") and url.endswith(f"/?tkn={token}"), url
    port = int(url.split("/?", 1)[0].rsplit(":", 1)[1])
    assert await upgrade_status(port, "/") == 403
    assert await upgrade_status(port, "/?tkn=wrong") == 403
    rest = await banner_rest(process)
    assert "a connection token was generated and kept in" in rest
    assert f'"connectionToken": "{token}"' in rest  # the VS Code entry carries it
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "local")
        await client.initialize()
        await client.close()
    code, err = await stop(process, signal.SIGTERM)
    assert code == 0
    assert token.encode() not in err


async def test_going_without_a_token_on_loopback_is_explicit_and_warned(tmp_path: Path) -> None:
    env = {"AHP_BRIDGE__SERVER__REQUIRE_TOKEN": "false"}
    process, url = await start_cli(*bridge_args(tmp_path), env=env)
    assert "tkn" not in url and not (tmp_path / "connection-token").exists()
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "local")
        await client.initialize()
        await client.close()
    code, err = await stop(process, signal.SIGTERM)
    assert code == 0
    assert b"no connection token (server.require_token = false): any process of any user" in err
    # The choice is loopback's alone: a wildcard bind still gets (and needs) one.
    args = [*bridge_args(tmp_path), "--listen", "0.0.0.0:0"]
    wide, wide_url = await start_cli(*args, env=env)
    assert "?tkn=" in wide_url
    code, err = await stop(wide, signal.SIGTERM)
    assert code == 0 and b"require_token" not in err


async def test_bad_config_is_reported_plainly(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text("[server]\nport = 'not a number'\n")
    result = await trio.run_process(
        [sys.executable, "-m", "ahp_bridge.cli", "--config", str(config)],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert result.returncode != 0
    assert b"port" in result.stderr
    missing = await trio.run_process(
        [sys.executable, "-m", "ahp_bridge.cli", "--config", str(tmp_path / "nope.toml")],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert missing.returncode != 0
    assert b"config file not found" in missing.stderr


async def test_unknown_provider_is_reported_plainly(tmp_path: Path) -> None:
    # Its own --data-dir: the default one may be held by a bridge running on this machine.
    args = ["--provider", "nope", "--listen", "127.0.0.1:0", "--data-dir", str(tmp_path)]
    result = await trio.run_process(
        [sys.executable, "-m", "ahp_bridge.cli", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert result.returncode == 2  # named on the command line: a command-line mistake
    assert b"unknown provider 'nope'" in result.stderr


async def test_example_config_is_valid_and_complete(tmp_path: Path) -> None:
    from ahp_bridge.config import Settings, load_settings

    example = Path(__file__).resolve().parents[2] / "config.example.toml"
    settings = load_settings(example)
    assert isinstance(settings, Settings)
    text = example.read_text()
    sections = [name for name in Settings.model_fields if name != "providers"]
    assert {"server", "limits", "timeouts"} <= set(sections)
    for section in sections:
        assert f"[{section}]" in text, f"config.example.toml has no [{section}]"
        body = text.split(f"\n[{section}]\n", 1)[1].split("\n[", 1)[0]
        for name in type(getattr(settings, section)).model_fields:
            assert f"\n{name} =" in body or f"# {name} =" in body, (
                f"config.example.toml does not document {section}.{name}"
            )
    # Every provider's section, each option commented with its meaning.
    from ahp_bridge_copilot.options import ByokOptions, CopilotOptions
    from ahp_bridge_fake import _OPTIONS as FAKE_OPTIONS
    from ahp_bridge_remote.client import _OPTIONS as REMOTE_OPTIONS

    sections = {
        "providers.fake": FAKE_OPTIONS,
        "providers.copilot": tuple(CopilotOptions.model_fields),
        "providers.copilot.byok": tuple(ByokOptions.model_fields),
        "providers.remote": REMOTE_OPTIONS,
    }
    for section, options in sections.items():
        assert f"[{section}]" in text, f"config.example.toml has no [{section}]"
        body = text.split(f"[{section}]", 1)[1].split("\n[", 1)[0]
        for name in options:
            if name != "byok":
                assert f"# {name} =" in body, f"[{section}] does not document {name}"


async def test_doctor_reports_in_plain_words() -> None:
    ok = await trio.run_process(
        [sys.executable, "-m", "ahp_bridge.cli", "doctor", "--provider", "fake"],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert b"ok    the runtime is present and compatible" in ok.stdout
    unknown = await trio.run_process(
        [sys.executable, "-m", "ahp_bridge.cli", "doctor", "--provider", "nope"],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert unknown.returncode == 2
    assert b"unknown provider 'nope'" in unknown.stderr


async def test_conformance_subcommand_reports_and_sets_the_exit_code() -> None:
    result = await trio.run_process(
        [sys.executable, "-m", "ahp_bridge.cli", "conformance", "--provider", "fake"],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert b"PASS cancel" in result.stdout
    assert b" 0 failed" in result.stdout
    bad = await trio.run_process(
        [sys.executable, "-m", "ahp_bridge.cli", "conformance", "--provider", "nope"],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert bad.returncode != 0


@pytest.mark.parametrize("where", ["before", "after"])
async def test_conformance_runs_a_configured_named_provider(tmp_path: Path, where: str) -> None:
    """`[providers.mine] kind = "acp"` in the file: the suite runs on exactly that agent,
    with --config before or after the command word."""
    config = str(sdk_agent_config(tmp_path / "bridge.toml"))
    suite = ["--provider", "mine", "--check", "provider_basics"]
    argv = (
        ["--config", config, "conformance", *suite]
        if where == "before"
        else ["conformance", "--config", config, *suite]
    )
    result = await trio.run_process(
        [sys.executable, "-m", "ahp_bridge.cli", *argv],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.decode().splitlines()
    assert lines[:2] == ["conformance: mine (acp)", "PASS provider_basics: 2 models"]


async def test_serve_provider_and_the_remote_provider_connect_through_the_cli(
    tmp_path: Path,
) -> None:
    socket = tmp_path / "fake.sock"
    server = await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "ahp_bridge.cli",
            "serve-provider",
            "--provider",
            "fake",
            "--listen",
            f"unix:{socket}",
            "--option",
            f"data_dir={tmp_path / 'fake'}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        with trio.fail_after(30):
            line = b""
            while not line.endswith(b"\n"):
                line += await server.stdout.receive_some(1)
        assert line.startswith(b"ahp-bridge serving provider fake on unix:")
        process, url = await start_cli(
            "--provider",
            "remote",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(tmp_path / "bridge"),
            env={"AHP_BRIDGE__PROVIDERS__REMOTE__ADDRESS": f"unix:{socket}"},
        )
        async with trio.open_nursery() as nursery:
            client = await open_client(nursery, url, "remote-cli")
            await client.initialize(["ahp-root://"])
            [agent] = client.states["ahp-root://"]["agents"]
            assert agent["provider"] == "remote"
            assert [m["id"] for m in agent["models"]] == ["fake-fast", "fake-deep"]
            session = f"ahp-session:/{uuid.uuid4()}"
            await client.request("createSession", {"channel": session, "provider": "remote"})
            await client.subscribe(session)
            await client.wait_for(lambda: client.states[session].get("lifecycle") == "ready")
            await client.close()
            nursery.cancel_scope.cancel()
        code, _ = await stop(process, signal.SIGTERM)
        assert code == 0
    finally:
        code, err = await stop(server, signal.SIGTERM)
    assert code == 0, err.decode()
