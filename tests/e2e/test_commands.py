"""The provider's `/` commands over real WebSockets: offered by `completions` for a `/word`
that starts the message, and a message that invokes one runs `RunCommand` (its turn plays the
command's prompt, not the text as typed)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge
from tests.support.ahp_client import AhpClient, create

SCRIPT = Path(__file__).parent / "scripts" / "customize.toml"
V1 = ("1.0.0", "0.9.0")


@pytest.fixture
def settings(make_settings: Any, tmp_path: Path) -> Settings:
    settings: Settings = make_settings()
    settings.providers = {"fake": {"script": str(SCRIPT), "time_scale": 0.0}}
    return settings


async def complete(client: AhpClient, chat: str, text: str) -> list[dict[str, Any]]:
    units = len(text.encode("utf-16-le")) // 2
    params = {"channel": chat, "kind": "userMessage", "text": text, "offset": units}
    items: list[dict[str, Any]] = (await client.request("completions", params))["items"]
    return items


async def turn_reply(client: AhpClient, chat: str, message: dict[str, Any]) -> str:
    turn_id = str(uuid.uuid4())
    await client.dispatch(
        chat,
        {
            "type": "chat/turnStarted",
            "turnId": turn_id,
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"origin": {"kind": "user"}, **message},
        },
    )

    def done() -> dict[str, Any] | None:
        return next((t for t in client.states[chat].get("turns") or [] if t["id"] == turn_id), None)

    turn = await client.wait_for(done)
    return "".join(p.get("content", "") for p in turn["responseParts"] if p["kind"] == "markdown")


@pytest.mark.parametrize("versions", [V1, ("0.7.0",)], ids=["1.0", "0.7"])
async def test_commands_are_offered_and_a_completed_one_runs(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, versions: tuple[str, ...]
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    _, chat = await create(client, tmp_path)
    items = await complete(client, chat, "/")
    offered = [i["insertText"] for i in items]
    assert offered == ["/review ", "/tests "]  # the disabled skill is not offered
    review = items[0]
    assert review["rangeStart"] == 0 and review["rangeEnd"] == 1
    attachment = review["attachment"]
    assert attachment["type"] == "simple" and attachment["label"] == "/review"
    assert attachment["_meta"]["ahpBridge.command"] == "review"
    assert attachment["_meta"]["ahpBridge.inputHint"] == "<files>"
    assert [i["insertText"] for i in await complete(client, chat, "/te")] == ["/tests "]
    assert await complete(client, chat, "say /re") == []  # a command starts the message
    # The accepted completion: its attachment goes with the message, as clients must send it.
    reply = await turn_reply(
        client, chat, {"text": "/review src/app.py", "attachments": [attachment]}
    )
    assert reply == "Reviewed."
    # Typed without the completion: the text names it.
    assert await turn_reply(client, chat, {"text": "/tests parser"}) == "Tests written."
    # Not a command: the text is sent as it is.
    assert await turn_reply(client, chat, {"text": "/nope"}) == "ok"


async def test_the_initialize_result_names_the_slash_trigger(
    start_bridge: StartBridge, settings: Settings
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(initialize=False, versions=V1)
    result = await client.initialize()
    assert "/" in result["completionTriggerCharacters"]
