"""The real Copilot CLI and SDK complete turns offline against the scripted model server.

This is the foundation the copilot provider relies on: no token, HOME/COPILOT_HOME in a temporary
directory, bring-your-own-model provider pointing at 127.0.0.1. It talks to the SDK directly (on
asyncio) so that a failure here points at the environment, not at the adapter.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from copilot import CopilotClient
from copilot.client import RuntimeConnection
from copilot.session import PermissionNoResult

from tests.support.copilot_cli import CLI_PATH as CLI
from tests.support.copilot_cli import requires_cli
from tests.support.model_server import ModelServer, Reasoning, Text

pytestmark = requires_cli


def _offline_env(home: Path) -> dict[str, str]:
    drop = {"GITHUB_TOKEN", "GH_TOKEN", "COPILOT_GITHUB_TOKEN"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["HOME"] = str(home)
    return env


async def _run_turn(home: Path, server: ModelServer, prompt: str) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    idle = asyncio.Event()

    def on_event(ev: Any) -> None:
        d = ev.to_dict()
        events.append(d)
        if d["type"] == "session.idle":
            idle.set()

    client = CopilotClient(
        connection=RuntimeConnection.for_stdio(path=str(CLI)),
        env=_offline_env(home),
        base_directory=str(home / "copilot-home"),
        use_logged_in_user=False,
        working_directory=str(home),
    )
    await client.start()
    process = client._cli_process
    try:
        status = await client.get_status()
        assert status.protocol_version == 3
        session = await client.create_session(
            provider={"type": "openai", "base_url": server.base_url, "api_key": "unused"},
            model="fake-model",
            streaming=True,
            working_directory=str(home),
            on_permission_request=lambda req, inv: PermissionNoResult(),
            on_event=on_event,
        )
        await session.send(prompt)
        await asyncio.wait_for(idle.wait(), 60)
        await session.disconnect()
    finally:
        await client.stop()
        # The SDK leaves the child's pipe objects open after stop(): stdout and stderr always,
        # stdin when the child had already exited (a ResourceWarning in whichever later test the
        # garbage collector happens to run in).
        for pipe in (process.stdin, process.stdout, process.stderr) if process else ():
            if pipe is not None:
                pipe.close()
    return events


def test_real_cli_completes_a_streamed_turn_offline(tmp_path: Path) -> None:
    with ModelServer() as server:
        server.script("greet me", [Reasoning("the user wants a greeting"), Text("Hello from fake")])
        events = asyncio.run(_run_turn(tmp_path, server, "greet me please"))

        reqs = server.chat_requests("greet me")
        assert len(reqs) == 1
        assert reqs[0].body["stream"] is True
        assert reqs[0].body["model"] == "fake-model"
        assert "greet me please" in reqs[0].last_user_text
        assert "bash" in reqs[0].tool_names

    types = [e["type"] for e in events]
    assert "session.error" not in types
    deltas = "".join(
        e["data"]["deltaContent"] for e in events if e["type"] == "assistant.message_delta"
    )
    assert deltas == "Hello from fake"
    final = [e["data"]["content"] for e in events if e["type"] == "assistant.message"]
    assert final == ["Hello from fake"]
    reasoning = [e["data"]["content"] for e in events if e["type"] == "assistant.reasoning"]
    assert reasoning == ["the user wants a greeting"]
    user = [e["data"] for e in events if e["type"] == "user.message"]
    assert [u["content"] for u in user] == ["greet me please"]
    assert (
        types.index("user.message") < types.index("assistant.message") < types.index("session.idle")
    )
    # Session state went to the temporary COPILOT_HOME, not the real home.
    assert any((tmp_path / "copilot-home").rglob("events.jsonl"))
