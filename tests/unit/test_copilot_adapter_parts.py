"""The copilot adapter's small parts: options, CLI discovery, the asyncio thread bridge, titles,
attachments and error wording."""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import trio
from ahp_bridge_copilot import create_provider
from ahp_bridge_copilot.conversation import clean_title, prompt_attachments
from ahp_bridge_copilot.options import CopilotOptions, OptionsError, find_cli
from ahp_bridge_copilot.provider import sdk_thread
from ahp_bridge_copilot.sdk_errors import plain_error, rpc_message
from ahp_bridge_support import LoopStopped

from ahp_bridge.agentapi import AgentAPIError, Blob, File, Prompt, TurnState
from tests.support.copilot_cli import RecordingSink
from tests.unit.test_copilot_mapping import HINT, SIGNED_OUT_TURN, turn_states


def test_options_defaults_and_byok() -> None:
    opts = CopilotOptions.parse(
        {"byok": {"base_url": "http://127.0.0.1:1/v1/", "model": "a", "models": ["b", "a"]}}
    )
    assert opts.byok is not None and opts.byok.base_url == "http://127.0.0.1:1/v1"
    assert opts.byok.all_models() == ["a", "b"]
    cfg = opts.provider_config()
    assert cfg == {
        "type": "openai",
        "base_url": "http://127.0.0.1:1/v1",
        "api_key": "unused",
        "wire_api": "completions",
    }
    assert CopilotOptions.parse(None).provider_config() is None


def test_options_errors_name_the_field() -> None:
    with pytest.raises(OptionsError, match=r"byok\.base_url") as info:
        CopilotOptions.parse({"byok": {"base_url": "localhost:1", "model": "m"}})
    assert "[providers.copilot]" in str(info.value)
    with pytest.raises(OptionsError, match="cli_pth"):
        CopilotOptions.parse({"cli_pth": "/x"})
    with pytest.raises(OptionsError, match="log_level"):
        create_provider({"log_level": "loud"})


def test_secrets_come_from_named_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AHP_T_TOKEN", "s3cr3t-token-value")
    monkeypatch.setenv("AHP_T_KEY", "s3cr3t-api-key")
    opts = CopilotOptions.parse(
        {
            "token_env": "AHP_T_TOKEN",
            "byok": {"base_url": "https://x", "model": "m", "api_key_env": "AHP_T_KEY"},
            "offline": True,
            "env": {"HOME": "/tmp/h"},
        }
    )
    assert opts.token() == "s3cr3t-token-value"
    assert opts.provider_config()["api_key"] == "s3cr3t-api-key"  # type: ignore[index]
    env = opts.runtime_env()
    assert env["HOME"] == "/tmp/h" and env["COPILOT_OFFLINE"] == "true"
    assert "s3cr3t" not in repr(opts) and "s3cr3t" not in str(opts.model_dump())
    monkeypatch.delenv("AHP_T_TOKEN")
    assert opts.token() is None


def test_find_cli_prefers_explicit_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exe = tmp_path / "copilot"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    assert find_cli(CopilotOptions.parse({"cli_path": str(exe)})) == exe
    assert find_cli(CopilotOptions.parse({"cli_path": str(tmp_path / "none")})) is None
    monkeypatch.setenv("COPILOT_CLI_PATH", str(exe))
    assert find_cli(CopilotOptions.parse({})) == exe
    loader = tmp_path / "npm-loader.js"
    loader.write_text("")
    assert find_cli(CopilotOptions.parse({"cli_path": str(loader)})) == loader
    monkeypatch.setenv("COPILOT_CLI_PATH", str(tmp_path / "not-executable"))
    (tmp_path / "not-executable").write_text("")
    found = find_cli(CopilotOptions.parse({}))
    assert found != tmp_path / "not-executable"
    assert os.environ["COPILOT_CLI_PATH"]  # unchanged


async def test_bridge_runs_coroutines_on_its_own_thread() -> None:
    loop = sdk_thread()
    with pytest.raises(LoopStopped, match=r"^the Copilot SDK thread is not running$"):
        loop.submit(asyncio.sleep(0))
    loop.start()
    try:

        async def where() -> bool:
            await asyncio.sleep(0)
            return loop.in_loop_thread()

        assert await loop.run(where()) is True
        assert loop.in_loop_thread() is False

        async def boom() -> None:
            raise KeyError("x")

        with pytest.raises(KeyError):
            await loop.run(boom())
    finally:
        loop.stop()
    assert not loop.running


async def test_cancelled_caller_leaves_the_coroutine_running_unless_asked() -> None:
    loop = sdk_thread()
    loop.start()
    try:
        outcome: list[str] = []

        async def waits(gate: asyncio.Event, finished: asyncio.Event) -> None:
            try:
                await gate.wait()
                outcome.append("done")
            except asyncio.CancelledError:
                outcome.append("cancelled")
                raise
            finally:
                finished.set()

        async def events() -> tuple[asyncio.Event, asyncio.Event]:
            return asyncio.Event(), asyncio.Event()

        gate, finished = await loop.run(events())
        with trio.move_on_after(0.01):  # the coroutine waits on the gate, so this always fires
            await loop.run(waits(gate, finished))
        assert outcome == []
        loop.call_soon(gate.set)
        await loop.run(finished.wait())
        assert outcome == ["done"]

        gate, finished = await loop.run(events())
        with trio.move_on_after(0.01):
            await loop.run(waits(gate, finished), cancel_on_abort=True)
        await loop.run(finished.wait())
        assert outcome == ["done", "cancelled"]
    finally:
        loop.stop()


#: A JSON-RPC peer on stdio: answers one request, then waits for its stdin to close.
_ANSWER_ONCE = r"""
import json, sys
n = int(sys.stdin.buffer.readline().split(b":")[1])
sys.stdin.buffer.readline()
request = json.loads(sys.stdin.buffer.read(n))
body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"ok": True}}).encode()
sys.stdout.buffer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
sys.stdout.buffer.flush()
sys.stdin.buffer.read()
"""


def _loop_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.ERROR
    ]


async def test_an_answer_to_a_request_cancelled_meanwhile_is_dropped_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The SDK's reader thread schedules ``set_result`` for an answer whose wait is cancelled
    before that runs (a read given up as its client leaves or the bridge stops): asyncio would
    log InvalidStateError with a traceback. Here the wait is cancelled at the moment the real
    SDK client has parsed the answer, which makes that order certain."""
    from copilot._jsonrpc import JsonRpcClient

    caplog.set_level(logging.DEBUG)
    loop = sdk_thread()
    loop.start()
    peer = subprocess.Popen(
        [sys.executable, "-c", _ANSWER_ONCE], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:

        async def ask() -> str:
            rpc = JsonRpcClient(peer)
            rpc.start(asyncio.get_running_loop())
            tasks: list[asyncio.Future[Any]] = []

            def cancel_the_wait(_: Any) -> None:  # reader thread, before it schedules set_result
                loop.call_soon(tasks[0].cancel)

            tasks.append(
                asyncio.ensure_future(rpc.request("ping", on_response_inline=cancel_the_wait))
            )
            try:
                await tasks[0]
                outcome = "answered"
            except asyncio.CancelledError:
                outcome = "cancelled"
            assert peer.stdin is not None
            peer.stdin.close()
            await asyncio.to_thread(peer.wait, 10)
            await rpc.stop()
            return outcome

        assert await loop.run(ask()) == "cancelled"
        assert _loop_errors(caplog) == []
        assert "came after its request was cancelled" in caplog.text

        async def fails() -> None:  # any other error in a callback is still reported
            asyncio.get_running_loop().call_soon(int, "not a number")
            await asyncio.sleep(0)  # the callback runs first

        await loop.run(fails())
        [reported] = _loop_errors(caplog)
        assert reported.startswith("Exception in callback int('not a number')")
    finally:
        if peer.poll() is None:
            peer.kill()
        peer.wait()
        for pipe in (peer.stdin, peer.stdout):
            if pipe is not None:
                pipe.close()
        loop.stop()


class _Session:
    """A session whose CLI reports on each prompt before its answer to ``send`` is handled.

    The real CLI does so only sometimes (the SDK queues its answer and the session's events on
    the loop in arrival order; the awaiting ``send`` resumes after the events queued with it),
    so this fake makes that order certain. ``refuse`` makes send a JSON-RPC error reply instead.
    """

    session_id = "s-1"

    def __init__(self, conv: Any, events: list[dict[str, Any]]) -> None:
        from copilot.generated.session_events import SessionEvent

        self.conv = conv
        self.events = [SessionEvent.from_dict(raw) for raw in events]
        self.refuse = False

        async def get_metrics() -> Any:
            return SimpleNamespace(to_dict=lambda: {"aiCreditsStatus": "unavailable"})

        self.rpc = SimpleNamespace(usage=SimpleNamespace(get_metrics=get_metrics))

    async def send(self, text: str, **kwargs: Any) -> str:
        from copilot._jsonrpc import JsonRpcError

        if self.refuse:
            raise JsonRpcError(-32603, "the session is busy")
        for event in self.events:
            self.conv.on_sdk_event(event)
        return "m-1"


async def test_a_turn_reported_before_send_returns_works_then_fails_with_the_sentence() -> None:
    from ahp_bridge_copilot.conversation import CopilotConversation

    loop = sdk_thread()
    loop.start()
    try:
        sink = RecordingSink()
        conv = CopilotConversation(loop, sink, lambda _: None, signed_out_hint=HINT)
        session = _Session(conv, SIGNED_OUT_TURN)
        loop.call_soon(conv.attach, session)
        await conv.send(Prompt(text="after"))
        turn = await sink.turn_end(timeout=10)
        assert (turn.state, turn.error) == (TurnState.FAILED, HINT)
        assert turn_states(sink.snapshot()) == [TurnState.WORKING, TurnState.FAILED]

        session.refuse = True  # a refused prompt: an error for the caller, no turn, not busy
        with pytest.raises(AgentAPIError, match="could not send the prompt: the session is busy"):
            await conv.send(Prompt(text="refused"))
        session.refuse = False
        mark = len(sink.snapshot())
        await conv.send(Prompt(text="again"))
        await sink.turn_end(after=mark, timeout=10)
        states = turn_states(sink.snapshot())
        assert states == [TurnState.WORKING, TurnState.FAILED] * 2
    finally:
        loop.stop()


def test_clean_title() -> None:
    assert clean_title('  Fix "the" bug\n') == "Fix 'the' bug"
    assert len(clean_title("x" * 300)) == 100
    assert clean_title("😀" * 60) == "😀" * 50  # 100 UTF-16 units
    with pytest.raises(ValueError, match="empty"):
        clean_title("\n\t ")


def test_prompt_attachments() -> None:
    prompt = Prompt(
        text="see",
        files=[File(path="/w/a.py", rel="a.py"), File(path="/w/src", dir=True)],
        attachments=[
            Blob(name="i.png", mime="image/png", data=b"\x89PNG"),
            Blob(name="d.pdf", mime="application/pdf", data=b"%PDF", path="/up/d.pdf"),
        ],
    )
    assert prompt_attachments(prompt) == [
        {"type": "file", "path": "/w/a.py", "displayName": "a.py"},
        {"type": "directory", "path": "/w/src"},
        {"type": "blob", "data": "iVBORw==", "mimeType": "image/png", "displayName": "i.png"},
        {"type": "file", "path": "/up/d.pdf", "displayName": "d.pdf"},
    ]
    assert prompt_attachments(Prompt(text="plain")) == []


def test_error_wording() -> None:
    from copilot._jsonrpc import JsonRpcError, ProcessExitedError

    err = JsonRpcError(-32603, "Request session.resume failed with message: Session not found: x")
    assert rpc_message(err) == "Session not found: x"
    assert plain_error("open", err) == "could not open: Session not found: x"
    assert (
        plain_error("send", ProcessExitedError("gone")) == "could not send: the Copilot CLI exited"
    )
    assert "did not answer" in plain_error("x", TimeoutError())


def test_model_info_mapping() -> None:
    from ahp_bridge_copilot.provider import _model
    from copilot.client import ModelInfo

    info = ModelInfo.from_dict(
        {
            "id": "gpt-5",
            "name": "GPT-5",
            "capabilities": {
                "supports": {"vision": True, "reasoningEffort": True},
                "limits": {
                    "max_prompt_tokens": 128000,
                    "vision": {
                        "supported_media_types": ["image/png"],
                        "max_prompt_images": 5,
                    },
                },
            },
            "supportedReasoningEfforts": ["low", "high"],
        }
    )
    model = _model(info)
    assert (model.id, model.name, model.efforts) == ("gpt-5", "GPT-5", ["low", "high"])
    assert [(c.id, c.tokens) for c in model.context_sizes] == [("default", 128000)]
    assert model.media is not None and model.media.images and model.media.max_images == 5
    assert model.media.types == ["image/png"]


def test_the_first_client_imports_the_sdk_with_the_collector_off() -> None:
    """The SDK's import (1,800 generated classes) runs with the cyclic collector off, a quarter
    of its CPU; a fresh interpreter, so that the import is the first."""
    code = (
        "import gc, json, sys\n"
        "seen = {}\n"
        "class Spy:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'copilot.generated.rpc':\n"
        "            seen['collector on'] = gc.isenabled()\n"
        "sys.meta_path.insert(0, Spy())\n"
        "from ahp_bridge_copilot.client import make_client\n"
        "from ahp_bridge_copilot.options import CopilotOptions\n"
        "before = 'copilot' in sys.modules\n"
        "make_client(CopilotOptions.parse({'cli_url': 'http://127.0.0.1:9'}), None)\n"
        "print(json.dumps([before, seen, gc.isenabled()]))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == '[false, {"collector on": false}, true]', out.stderr
