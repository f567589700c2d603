"""Copilot however it is signed in, with the real CLI, offline: the documented offline BYOK
setup runs a turn; a signed-out CLI says so at startup, shows it needs a sign-in, refuses
sessions with -32007 and passes a client's token to the runtime; a terminal's Ctrl-C reaches
only the bridge; a second Ctrl-C ends it at once and the CLI follows.

What can be verified offline about signing in, exactly: the token a client sends with
`authenticate` reaches the CLI's `account.login` (the answer is the CLI's own attempt to check
it with GitHub, which is unreachable here) and the failure comes back as a clear -32007. A
successful sign-in needs GitHub; that path is covered with the fake provider (test_sign_in.py).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.e2e.test_copilot_bridge import BridgeProcess, alive
from tests.support.ahp_client import AhpClient, RpcFailure, open_client, ready_chat
from tests.support.copilot_cli import CLI_PATH, offline_env, requires_cli
from tests.support.model_server import ModelServer, Text

pytestmark = requires_cli

ROOT = "ahp-root://"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "copilot.md"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
TURN_TIMEOUT = 90
GITHUB = "https://api.github.com"


@pytest.fixture(scope="module")
def models() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv


def q(value: str) -> str:
    return json.dumps(value)  # a JSON string literal is a valid TOML basic string


def offline_blocks() -> list[str]:
    """docs/copilot.md's `offline = true` blocks: Ollama's, then the echo model server's."""
    blocks = re.findall(r"```toml\n(.*?)```", DOCS.read_text(), re.S)
    return [b for b in blocks if "offline = true" in b]


def documented_offline_config(model_url: str) -> str:
    """The first `offline = true` block of docs/copilot.md, as written, pointed at our model
    server."""
    block = re.sub(r'base_url = ".*"', f"base_url = {q(model_url)}", offline_blocks()[0])
    return re.sub(r'model = ".*"', 'model = "fake-model"', block)


def isolated(config: str, home: Path) -> str:
    """The test's own additions: this CLI binary and a HOME of its own."""
    extra = f"cli_path = {q(str(CLI_PATH))}\nenv = {{ HOME = {q(str(home))} }}\n"
    if "[providers.copilot]\n" in config:
        return config.replace("[providers.copilot]\n", "[providers.copilot]\n" + extra, 1)
    return "[providers.copilot]\n" + extra + config


@asynccontextmanager
async def copilot_bridge(
    tmp_path: Path, config: str, *, own_group: bool = False, name: str = "bridge"
) -> AsyncIterator[BridgeProcess]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    path = tmp_path / f"{name}.toml"
    path.write_text(isolated(config, home))
    args = ["--provider", "copilot", "--listen", "127.0.0.1:0", "--config", str(path)]
    args += ["--data-dir", str(tmp_path / "data")]
    async with trio.open_nursery() as nursery:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "ahp_bridge.cli", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=offline_env(home),
            cwd=tmp_path,
            start_new_session=own_group,
        )
        assert process.stdout is not None and process.stderr is not None
        started = BridgeProcess(process)
        nursery.start_soon(started.drain_stderr, process.stderr)
        try:
            await started.until_ready(nursery, 60)
            yield started
        finally:
            await started.kill()
            nursery.cancel_scope.cancel()


@asynccontextmanager
async def client_of(url: str) -> AsyncIterator[AhpClient]:
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, "first-run", versions=("1.0.0", "0.9.0"))
        try:
            await client.initialize([ROOT])
            yield client
        finally:
            await client.close()
            nursery.cancel_scope.cancel()


async def run_turn(client: AhpClient, chat: str, turn_id: str, text: str) -> dict[str, Any]:
    action = {
        "type": "chat/turnStarted",
        "turnId": turn_id,
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": {"text": text, "origin": {"kind": "user"}},
    }
    await client.dispatch(chat, action)

    def done() -> dict[str, Any] | None:
        state = client.states[chat]
        if state.get("activeTurn"):
            return None
        return next((t for t in state.get("turns", []) if t["id"] == turn_id), None)

    turn: dict[str, Any] = await client.wait_for(done, TURN_TIMEOUT)
    return turn


def sdk_noise(stderr: bytes) -> list[str]:
    """Lines the SDK's loggers wrote at warning or above, and any traceback."""
    lines = stderr.decode(errors="replace").splitlines()
    return [
        line
        for line in lines
        if "Traceback" in line
        or (re.search(r"\[(warning|error|critical)", line) and "[copilot" in line)
    ]


def markdown(turn: dict[str, Any]) -> str:
    return "".join(p.get("content", "") for p in turn["responseParts"] if p["kind"] == "markdown")


# -- offline, as documented --------------------------------------------------------------------


async def test_the_documented_offline_configuration_runs_a_turn(
    tmp_path: Path, models: ModelServer
) -> None:
    models.script("offline hello", [Text("Answered with no network at all.")])
    config = documented_offline_config(models.base_url)
    assert "offline = true" in config and "[providers.copilot.byok]" in config
    async with copilot_bridge(tmp_path, config) as bridge, client_of(bridge.url) as client:
        [agent] = client.states[ROOT]["agents"]
        assert [m["id"] for m in agent["models"]] == ["fake-model"]
        assert "protectedResources" not in agent  # your own model needs no sign-in
        _, chat = await ready_chat(client, "copilot", TURN_TIMEOUT)
        turn = await run_turn(client, chat, "t1", "offline hello")
        assert turn["state"] == "complete", turn
        assert markdown(turn) == "Answered with no network at all."
        [request] = models.chat_requests("offline hello")
        assert request.body["model"] == "fake-model"
        assert await bridge.terminate() == 0
    assert sdk_noise(bytes(bridge.stderr)) == [], bytes(bridge.stderr).decode(errors="replace")[
        -6000:
    ]


async def test_the_shipped_echo_model_server_finishes_the_offline_setup_as_documented(
    tmp_path: Path,
) -> None:
    """examples/echo_model_server.py, started as docs/copilot.md says, and its config block as
    written (only the port is this test's: a free one): a real Copilot turn, offline."""
    [_, block] = offline_blocks()
    assert 'base_url = "http://127.0.0.1:8000/v1"' in block and 'model = "echo"' in block
    server = await trio.lowlevel.open_process(
        [sys.executable, str(EXAMPLES / "echo_model_server.py"), "--listen", "127.0.0.1:0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert server.stdout is not None
        line = b""
        with trio.fail_after(30):
            while not line.endswith(b"\n"):
                line += await server.stdout.receive_some(1)
        url = line.decode().strip().removeprefix("echo model server on ")
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/v1", url), line
        config = block.replace("http://127.0.0.1:8000/v1", url)
        async with copilot_bridge(tmp_path, config) as bridge, client_of(bridge.url) as client:
            [agent] = client.states[ROOT]["agents"]
            assert [m["id"] for m in agent["models"]] == ["echo"]
            _, chat = await ready_chat(client, "copilot", TURN_TIMEOUT)
            turn = await run_turn(client, chat, "t1", "hello offline echo")
            assert turn["state"] == "complete", turn
            assert markdown(turn).strip() == "You said: hello offline echo"
            assert await bridge.terminate() == 0
        assert b"does not answer" not in bytes(bridge.stderr)  # no start-up warning: it answers
    finally:
        server.kill()
        await server.wait()


# -- signed out --------------------------------------------------------------------------------


async def test_a_signed_out_cli_says_so_and_passes_a_clients_token_to_the_runtime(
    tmp_path: Path,
) -> None:
    copilot_home = tmp_path / "data" / "providers" / "copilot"
    hint = (
        "GitHub Copilot is signed out: sign in from your client (the agent asks for a GitHub "
        f"token), run `COPILOT_HOME={copilot_home} {CLI_PATH} login` on the bridge's machine, "
        "or use your own model with [providers.copilot.byok] (docs/copilot.md)"
    )
    async with copilot_bridge(tmp_path, "") as bridge, client_of(bridge.url) as client:
        # A warning at startup, with the real command.
        assert "provider is signed out" in bridge.stderr.decode()
        assert f"fix={json.dumps(hint)}" in bridge.stderr.decode()
        # The agent shows it needs a sign-in.
        [agent] = client.states[ROOT]["agents"]
        resource = {
            "resource": GITHUB,
            "resource_name": "GitHub Copilot",
            "authorization_servers": ["https://github.com/login/oauth"],
            "scopes_supported": ["read:user", "user:email"],
            "required": True,
        }
        assert agent["protectedResources"] == [resource]
        assert agent["models"] == []
        assert client.initialized["_meta"]["ahpBridge.capabilities"]["copilot"]["account"] is True
        # Using it unauthenticated: -32007 with the resources, and what to do.
        with pytest.raises(RpcFailure) as refused:
            await client.request(
                "createSession", {"channel": f"ahp-session:/{uuid.uuid4()}", "provider": "copilot"}
            )
        assert refused.value.code == -32007
        assert refused.value.message == f"Authentication required for GitHub Copilot: {hint}"
        assert refused.value.data == {"resources": [resource]}
        # A client's token reaches the CLI's account.login; its answer is a clear error.
        token = "gho_" + uuid.uuid4().hex
        with pytest.raises(RpcFailure) as bad:
            await client.request(
                "authenticate", {"channel": ROOT, "resource": GITHUB, "token": token}
            )
        assert bad.value.code == -32007
        assert bad.value.message.startswith("GitHub Copilot did not sign in with that token: ")
        assert "api.github.com" in bad.value.message  # the CLI tried GitHub with it
        assert bad.value.data == {"resources": [resource]}
        assert client.states[ROOT]["agents"][0]["protectedResources"] == [resource]
        assert await bridge.terminate() == 0
    stderr = bytes(bridge.stderr)
    assert token.encode() not in stderr  # never logged
    assert sdk_noise(stderr) == []


async def test_a_turn_that_fails_for_want_of_a_sign_in_says_what_to_do(tmp_path: Path) -> None:
    """An earlier conversation of this CLI, imported as a session and continued while the CLI
    is signed out: the turn's error is the one sentence, from the adapter and through AHP."""
    from ahp_bridge_copilot import create_provider

    from ahp_bridge.agentapi import OpenRequest, Prompt, TurnState
    from tests.support.copilot_cli import RecordingSink

    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    copilot_home = tmp_path / "data" / "providers" / "copilot"
    hint = (
        "GitHub Copilot is signed out: sign in from your client (the agent asks for a GitHub "
        f"token), run `COPILOT_HOME={copilot_home} {CLI_PATH} login` on the bridge's machine, "
        "or use your own model with [providers.copilot.byok] (docs/copilot.md)"
    )
    options = {
        "cli_path": str(CLI_PATH),
        "env": {"HOME": str(home)},
        "data_dir": str(copilot_home),
        "workdir": str(work),
    }
    async with create_provider(options) as provider:
        sink = RecordingSink()
        conv = await provider.open(OpenRequest(workdir=str(work), title="earlier", events=sink))
        await conv.send(Prompt(text="before"))
        turn = await sink.turn_end()
        assert (turn.state, turn.error) == (TurnState.FAILED, hint)  # the adapter's words
        await conv.close()
    code, out, err = await run_cli(
        tmp_path, "sessions", "import", "--provider", "copilot", "--workdir", str(work)
    )
    assert code == 0 and out.startswith("imported 1 conversation"), (out, err)
    async with copilot_bridge(tmp_path, "") as bridge, client_of(bridge.url) as client:
        [summary] = (await client.request("listSessions", {"channel": ROOT}))["items"]
        state = (await client.subscribe(summary["resource"]))["state"]
        chat = state["defaultChat"]
        await client.subscribe(chat)
        turn2 = await run_turn(client, chat, "t2", "after")
        assert turn2["state"] == "error", turn2
        # AHP 1.0 carries a turn's error as its last response part.
        [error] = [p for p in turn2["responseParts"] if p["kind"] == "error"]
        assert error["error"]["message"] == hint
        assert await bridge.terminate() == 0
    assert sdk_noise(bytes(bridge.stderr)) == [], bytes(bridge.stderr).decode(errors="replace")[
        -6000:
    ]


async def run_cli(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """`ahp-bridge ARGS` with the test's config and data directory, like copilot_bridge."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    path = tmp_path / "cli.toml"
    path.write_text(isolated("", home))
    result = await trio.run_process(
        [
            sys.executable,
            "-m",
            "ahp_bridge.cli",
            *args,
            "--config",
            str(path),
            "--data-dir",
            str(tmp_path / "data"),
        ],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
        env=offline_env(home),
        cwd=tmp_path,
    )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


# -- a quiet stop ------------------------------------------------------------------------------


async def test_a_terminals_ctrl_c_reaches_only_the_bridge(
    tmp_path: Path, models: ModelServer
) -> None:
    byok = f'[providers.copilot.byok]\nbase_url = {q(models.base_url)}\nmodel = "fake-model"\n'
    async with copilot_bridge(tmp_path, byok, own_group=True) as bridge:
        async with client_of(bridge.url) as client:
            await ready_chat(client, "copilot", TURN_TIMEOUT)  # the CLI runs now
        [cli] = bridge.copilot_cli_pids()
        group = os.getpgid(bridge.process.pid)
        assert os.getpgid(cli) != group  # its own process group
        os.killpg(group, signal.SIGINT)  # what a terminal does on Ctrl-C
        with trio.fail_after(30):
            code = await bridge.process.wait()
            await bridge.stderr_closed.wait()
        assert code == 0, bridge.stderr.decode()
        assert not alive(cli)  # stopped by the bridge
    assert sdk_noise(bytes(bridge.stderr)) == [], bytes(bridge.stderr).decode(errors="replace")[
        -6000:
    ]


async def test_a_second_ctrl_c_exits_at_once_and_the_cli_follows(
    tmp_path: Path, models: ModelServer
) -> None:
    byok = f'[providers.copilot.byok]\nbase_url = {q(models.base_url)}\nmodel = "fake-model"\n'
    async with copilot_bridge(tmp_path, byok) as bridge:
        async with client_of(bridge.url) as client:
            await ready_chat(client, "copilot", TURN_TIMEOUT)
        [cli] = bridge.copilot_cli_pids()
        os.kill(cli, signal.SIGSTOP)  # a CLI that does not answer: the clean stop waits for it
        try:
            bridge.process.send_signal(signal.SIGINT)
            with trio.fail_after(20):
                while b"shutting down" not in bridge.stderr:
                    await trio.sleep(0.05)
            with trio.move_on_after(1):
                await bridge.process.wait()
            assert bridge.process.returncode is None, "the first Ctrl-C waits for the CLI"
            bridge.process.send_signal(signal.SIGINT)
            with trio.fail_after(10):
                code = await bridge.process.wait()
                await bridge.stderr_closed.wait()
        finally:
            os.kill(cli, signal.SIGCONT)
        text = bridge.stderr.decode()
        assert code == 130, text
        assert text.splitlines()[-1] == "ahp-bridge: stopping now (second interrupt)"
        assert "Traceback" not in text
        # The bridge's end of the CLI's stdio is closed: the CLI ends too.
        with trio.fail_after(30):
            while alive(cli):
                await trio.sleep(0.1)
