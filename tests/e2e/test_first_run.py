"""The first five minutes with `ahp-bridge`, as a real subprocess: every message an operator can
meet on the way to a working client, checked for its wording and exit code.

(The banner, the generated token and the signals are in test_cli.py; Copilot in
test_copilot_first_run.py.)
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import trio

from ahp_bridge.host.durable.catalog import Catalog, SessionRecord
from tests.e2e.test_cli import start_cli, stop
from tests.support.ahp_client import RpcFailure, open_client

ROOT = "ahp-root://"
INSTALLED = "(installed: acp, copilot, fake, remote)"


async def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = await trio.run_process(
        [sys.executable, "-m", "ahp_bridge.cli", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env={**os.environ, **(env or {})},
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and "ExceptionGroup" not in text, text


# -- a CLI with the usual manners --------------------------------------------------------------


async def test_an_unknown_command_is_an_error_with_a_suggestion() -> None:
    code, _, err = await run("session", "list")
    assert code == 2
    assert err.splitlines()[-1] == (
        "ahp-bridge: unknown command 'session'; did you mean `sessions`? (commands: serve, "
        "conformance, doctor, serve-provider, sessions; see ahp-bridge --help)"
    )
    code, _, err = await run("frobnicate")
    assert code == 2 and "unknown command 'frobnicate' (commands: serve," in err


@pytest.mark.parametrize(
    "argv",
    [
        ["sessions", "list", "--data-dir", "{dir}"],
        ["sessions", "--data-dir", "{dir}", "list"],
        ["--data-dir", "{dir}", "sessions", "list"],
        ["--log-level", "error", "sessions", "list", "--data-dir={dir}"],
    ],
    ids=["after", "between", "before", "mixed"],
)
async def test_options_work_before_or_after_the_command(tmp_path: Path, argv: list[str]) -> None:
    catalog = Catalog.open(tmp_path)
    uri = f"ahp-session:/{uuid.uuid4()}"
    now = "2026-01-01T00:00:00.000Z"
    catalog.add_session(
        SessionRecord(uri=uri, provider="fake", workdir="/w", created_at=now, modified_at=now)
    )
    catalog.close()
    code, out, err = await run(*[a.replace("{dir}", str(tmp_path)) for a in argv])
    assert code == 0, err
    assert out.splitlines()[0] == "1 session" and uri in out


@pytest.mark.parametrize(
    ("argv", "must_show"),
    [
        (
            ["--help"],
            [
                "examples:",
                "COMMAND",
                "sessions",
                "serve options (the default command;",
                "--provider NAME",
                "--listen HOST:PORT",
                "--wire-log FILE",
                "--print-vscode-settings",
            ],
        ),
        (["serve", "--help"], ["examples:", "installed: acp, copilot, fake, remote", "--wire-log"]),
        (["doctor", "--help"], ["examples:", "one of: acp, copilot, fake, remote"]),
        (["serve-provider", "--help"], ["examples:", "one of: acp, copilot, fake, remote"]),
        (["sessions", "--help"], ["examples:", "{list,forget,import}"]),
        (["sessions", "list", "--help"], ["examples:", "--data-dir"]),
        (["sessions", "forget", "--help"], ["examples:", "uri"]),
        (["sessions", "import", "--help"], ["examples:", "--workdir"]),
        (["serve", "--help"], ["{console,json}", "{debug,info,warning,error}"]),
        (["conformance", "--help"], ["examples:", "ahp-bridge conformance --provider fake"]),
    ],
)
async def test_help_shows_choices_and_an_example(argv: list[str], must_show: list[str]) -> None:
    code, out, err = await run(*argv)
    assert code == 0, err
    flat = " ".join(out.split())  # argparse wraps lines
    for text in must_show:
        assert text in flat, (text, out)


async def test_an_unknown_provider_has_one_wording_everywhere(tmp_path: Path) -> None:
    wording = f"unknown provider 'nope' {INSTALLED}"
    data = ["--data-dir", str(tmp_path)]
    # Named on the command line: a command-line mistake (2); by the configuration: 1.
    for argv in (
        ["--provider", "nope", "--listen", "127.0.0.1:0", *data],
        ["doctor", "--provider", "nope"],
        ["serve-provider", "--provider", "nope", "--listen", f"unix:{tmp_path}/s"],
        ["sessions", "import", "--provider", "nope", "--workdir", ".", *data],
        ["conformance", "--provider", "nope"],
    ):
        code, out, err = await run(*argv)
        assert (code, out, err) == (2, "", f"ahp-bridge: {wording}\n"), argv
    code, _, err = await run(
        "--listen", "127.0.0.1:0", *data, env={"AHP_BRIDGE__BRIDGE__PROVIDERS": '["nope"]'}
    )
    assert (code, err) == (1, f"ahp-bridge: {wording}\n")


async def test_a_named_instance_of_a_kind_not_installed_says_so(tmp_path: Path) -> None:
    """`[providers.claude] kind = "acpx"`: the instance and its kind are named, not "unknown
    provider 'claude'", and a named instance of an installed kind is accepted."""
    config = tmp_path / "bridge.toml"
    config.write_text('[providers.claude]\nkind = "acpx"\n[providers.other]\nkind = "fake"\n')
    wording = f"provider 'claude' has kind 'acpx', which is not installed {INSTALLED}"
    common = ["--config", str(config), "--data-dir", str(tmp_path)]
    for argv in (
        ["--provider", "claude", "--listen", "127.0.0.1:0", *common],
        ["doctor", "--provider", "claude", *common],
        ["serve-provider", "--provider", "claude", "--listen", f"unix:{tmp_path}/s", *common],
    ):
        code, _, err = await run(*argv)
        assert (code, err) == (1, f"ahp-bridge: {wording}\n"), argv
    code, out, err = await run("doctor", "--provider", "other", *common)
    assert code == 0, (out, err)


# -- errors that say what to do ----------------------------------------------------------------


async def test_a_config_error_is_one_line_with_the_file_the_key_and_the_closest(
    tmp_path: Path,
) -> None:
    config = tmp_path / "bridge.toml"
    config.write_text("[server]\nprot = 9000\n")
    code, out, err = await run("--config", str(config), "--data-dir", str(tmp_path))
    assert (code, out) == (1, "")
    assert err == f"ahp-bridge: {config}: server.prot: unknown key; did you mean `port`?\n"
    code, _, err = await run("doctor", "--provider", "fake", env={"AHP_BRIDGE__LOG__LEVL": "debug"})
    assert (code, err) == (
        1,
        "ahp-bridge: environment variable AHP_BRIDGE__LOG__LEVL: log.levl: unknown key; "
        "did you mean `level`?\n",
    )


async def test_a_startup_error_is_printed_once(tmp_path: Path) -> None:
    """Not a log line and the message too: the message, once."""
    code, _, err = await run(
        "--provider",
        "fake",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        str(tmp_path),
        env={"AHP_BRIDGE__PROVIDERS__FAKE__SCRIPT": str(tmp_path / "missing.toml")},
    )
    assert code == 1
    lines = [line for line in err.splitlines() if "missing.toml" in line]
    assert len(lines) == 1 and lines[0].startswith("ahp-bridge: "), err
    no_traceback(err)


async def test_a_busy_port_names_the_address_and_a_way_out(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = await run("--listen", f"127.0.0.1:{port}", "--data-dir", str(tmp_path))
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"ahp-bridge: cannot listen on 127.0.0.1:{port}: the address is already in use "
        "(another ahp-bridge?); pick a free port with --listen 127.0.0.1:0 or another HOST:PORT"
    )
    assert [line for line in err.splitlines() if "cannot listen" in line] == [err.splitlines()[-1]]


async def test_import_from_a_provider_that_cannot_is_one_sentence(tmp_path: Path) -> None:
    code, out, err = await run(
        "sessions",
        "import",
        "--provider",
        "fake",
        "--workdir",
        str(tmp_path),
        "--data-dir",
        str(tmp_path),
    )
    assert (code, out) == (1, "")
    assert err == (
        "ahp-bridge: provider 'fake' cannot list its earlier conversations, so there is "
        "nothing to import from it (copilot can)\n"
    )


async def test_an_unreachable_remote_provider_says_so_at_once(tmp_path: Path) -> None:
    address = f"unix:{tmp_path}/nobody.sock"
    hint = (
        f"start one with `ahp-bridge serve-provider --provider NAME --listen {address}`, "
        "or fix address in [providers.remote]"
    )
    process = await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "ahp_bridge.cli",
            "--provider",
            "remote",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={
            **os.environ,
            "AHP_BRIDGE__PROVIDERS__REMOTE__ADDRESS": address,
            "AHP_BRIDGE__PROVIDERS__REMOTE__CONNECT_TIMEOUT": "8",
        },
    )
    assert process.stderr is not None
    err = b""
    try:
        # A bound for a loaded machine (start-up, then connect_timeout's 8 s, then the exit);
        # "at once" is that the warning comes while the bridge still waits.
        with trio.fail_after(90):
            while b"no provider answers" not in err:
                err += await process.stderr.receive_some(65536)
            # Said while the bridge still waits for the provider (connect_timeout), not after.
            assert process.returncode is None
            while chunk := await process.stderr.receive_some(65536):
                err += chunk
            code = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    text = err.decode()
    assert code == 1
    assert f"no provider answers at {address}; waiting up to 8s for one ({hint})" in text
    assert text.splitlines()[-1] == f"ahp-bridge: no provider is serving at {address}: {hint}"
    no_traceback(text)


# -- VS Code -----------------------------------------------------------------------------------


async def test_print_vscode_settings_needs_a_kept_token(tmp_path: Path) -> None:
    for host in ("127.0.0.1", "0.0.0.0"):  # every bind needs a token, loopback too
        argv = ["--print-vscode-settings", "--listen", f"{host}:9123", "--data-dir", str(tmp_path)]
        code, out, err = await run(*argv)
        # Printing writes nothing: without a kept token, it says how to get one.
        assert (code, out) == (1, "")
        assert err == (
            f"ahp-bridge: a bridge on {host} needs a connection token, and none is kept in "
            f"{tmp_path}/connection-token yet: serve once with these options (the bridge makes "
            "one and keeps it there), or set server.token; then print the settings again\n"
        )
        assert list(tmp_path.iterdir()) == []


async def test_print_vscode_settings_on_loopback(tmp_path: Path) -> None:
    (tmp_path / "connection-token").write_text("kept-token\n")
    loopback = [
        "--print-vscode-settings",
        "--listen",
        "127.0.0.1:9123",
        "--data-dir",
        str(tmp_path),
    ]
    code, out, err = await run(*loopback)
    assert code == 0, err
    settings = json.loads(out)
    assert settings["chat.remoteAgentHostsEnabled"] is True
    [entry] = settings["chat.remoteAgentHosts"]
    assert entry["address"] == "127.0.0.1:9123" and entry["connectionToken"] == "kept-token"
    # Going without is an explicit choice, and only loopback may make it.
    code, out, err = await run(*loopback, env={"AHP_BRIDGE__SERVER__REQUIRE_TOKEN": "false"})
    [entry] = json.loads(out)["chat.remoteAgentHosts"]
    assert (code, set(entry)) == (0, {"name", "address"})


async def test_print_vscode_settings_on_every_interface(tmp_path: Path) -> None:
    (tmp_path / "connection-token").write_text("kept-token\n")
    wide = ["--print-vscode-settings", "--listen", "0.0.0.0:9123", "--data-dir", str(tmp_path)]
    code, out, err = await run(*wide, env={"AHP_BRIDGE__SERVER__REQUIRE_TOKEN": "false"})
    [entry] = json.loads(out)["chat.remoteAgentHosts"]
    assert (code, err, entry["connectionToken"]) == (0, "", "kept-token")
    code, out, err = await run(*wide, env={"AHP_BRIDGE__SERVER__TOKEN": "set-token"})
    [entry] = json.loads(out)["chat.remoteAgentHosts"]
    assert (code, entry["connectionToken"]) == (0, "set-token")
    code, out, err = await run("--print-vscode-settings", "--listen", "127.0.0.1:0")
    assert (code, out) == (2, "")
    assert err == (
        "ahp-bridge: port 0 is chosen when the bridge starts; give a fixed one with "
        "--listen HOST:PORT\n"
    )


# -- a quiet stop ------------------------------------------------------------------------------


async def _serve_provider(tmp_path: Path) -> tuple[trio.Process, str]:
    sock = tmp_path / "fake.sock"
    server = await trio.lowlevel.open_process(
        [
            sys.executable,
            "-m",
            "ahp_bridge.cli",
            "serve-provider",
            "--provider",
            "fake",
            "--listen",
            f"unix:{sock}",
            "--option",
            f"data_dir={tmp_path / 'fake'}",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdout is not None
    with trio.fail_after(30):
        line = b""
        while not line.endswith(b"\n"):
            line += await server.stdout.receive_some(1)
    assert line.startswith(b"ahp-bridge serving provider fake on unix:")
    return server, f"unix:{sock}"


async def _remote_session_with_a_running_turn(url: str) -> str:
    """A session whose turn waits for a permission (the demo script asks one) when we leave."""
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "remote-stop")
        await client.initialize([ROOT])
        session = f"ahp-session:/{uuid.uuid4()}"
        await client.request("createSession", {"channel": session, "provider": "remote"})
        await client.subscribe(session)
        await client.wait_for(lambda: client.states[session].get("lifecycle") == "ready")
        chat = client.states[session]["defaultChat"]
        await client.subscribe(chat)
        turn = {
            "type": "chat/turnStarted",
            "turnId": "t1",
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"text": "run the demo", "origin": {"kind": "user"}},
        }
        await client.dispatch(chat, turn)
        await client.wait_for(lambda: client.states[session].get("inputNeeded"), 30)
        await client.close()
        nursery.cancel_scope.cancel()
    return session


async def test_a_clean_stop_keeps_every_catalog_write(tmp_path: Path) -> None:
    server, address = await _serve_provider(tmp_path)
    try:
        process, url = await start_cli(
            "--provider",
            "remote",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(tmp_path / "bridge"),
            env={"AHP_BRIDGE__PROVIDERS__REMOTE__ADDRESS": address},
        )
        session = await _remote_session_with_a_running_turn(url)
        code, err = await stop(process, signal.SIGINT)
        assert code == 0, err.decode()
        assert b"catalog write" not in err and b"[error" not in err, err.decode()
        no_traceback(err.decode())
        catalog = Catalog.open(tmp_path / "bridge", read_only=True)
        try:
            record = catalog.get(session)
        finally:
            catalog.close()
        # What the chat was doing when the bridge stopped was written while it stopped.
        assert record is not None and record.status == "ready"
        assert record.chats[0].active_turn is not None
    finally:
        code, err = await stop(server, signal.SIGTERM)
    assert code == 0, err.decode()


# -- the wire log ------------------------------------------------------------------------------


async def test_the_wire_log_records_every_frame_in_the_inspector_format(tmp_path: Path) -> None:
    wire = tmp_path / "wire.jsonl"
    process, url = await start_cli(
        "--provider",
        "fake",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        str(tmp_path),
        "--wire-log",
        str(wire),
        env={"AHP_BRIDGE__PROVIDERS__FAKE__TIME_SCALE": "0"},
    )
    secret = "gho_" + uuid.uuid4().hex
    sent: list[dict[str, object]] = []
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "wire")
        original = client.ws.send_message

        async def spy(message: str | bytes) -> None:
            sent.append(json.loads(message))
            await original(message)

        client.ws.send_message = spy  # type: ignore[method-assign]
        await client.initialize([ROOT])
        with pytest.raises(RpcFailure):
            await client.request(
                "authenticate", {"channel": ROOT, "resource": "https://x.example", "token": secret}
            )
        session = f"ahp-session:/{uuid.uuid4()}"
        await client.request("createSession", {"channel": session, "provider": "fake"})
        await client.subscribe(session)
        await client.wait_for(lambda: client.states[session].get("lifecycle") == "ready")
        received = len(client.envelopes)
        await client.close()
        nursery.cancel_scope.cancel()
    code, err = await stop(process, signal.SIGTERM)
    assert code == 0
    # Said at start, since the file holds transcripts.
    [said] = [line for line in err.decode().splitlines() if "wire log" in line]
    assert (
        "[warning" in said and "recording every frame in and out (prompts and answers too)" in said
    )
    assert f"file={wire}" in said
    assert wire.stat().st_mode & 0o777 == 0o600
    text = wire.read_text()
    assert secret not in text
    entries = [json.loads(line) for line in text.splitlines()]
    c2s = [e for e in entries if e["_ahpLog"]["dir"] == "c2s"]
    s2c = [e for e in entries if e["_ahpLog"]["dir"] == "s2c"]
    for entry in entries:
        meta = entry["_ahpLog"]
        assert meta["ts"].endswith("Z") and meta["connectionId"] == "conn-1"
        assert meta["transport"] == "websocket" and meta["byteLength"] > 0
    strip = [{k: v for k, v in e.items() if k != "_ahpLog"} for e in c2s]
    for frame in sent:
        if frame.get("method") == "authenticate":
            frame["params"]["token"] = "<redacted>"  # type: ignore[index]
    assert strip == sent  # every frame in, verbatim, in order
    ids = {e["id"] for e in s2c if "id" in e and ("result" in e or "error" in e)}
    assert ids == {f["id"] for f in sent if "id" in f}  # every answer out
    actions = [e for e in s2c if e.get("method") == "action"]
    assert len(actions) >= received > 0  # every envelope the client saw, at least
