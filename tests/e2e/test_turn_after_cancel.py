"""Type, cancel, retype: a turn started right after a cancel works, whatever the agent's pace.

Real ACP agents answer a cancelled `session/prompt` with `stopReason: "cancelled"` a few
milliseconds after the cancel, and refuse a new prompt until then. The fake plays exactly that
with `cancel_latency` (busy until the cancelled turn ends). The host ends the AHP turn when it
accepts `chat/turnCancelled`, so a client may start the next one at once; the host holds that
turn's prompt until the provider reports the cancelled turn's end (at most `timeouts.turn_end`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import StartBridge
from tests.support.ahp_client import AhpClient, create

SCRIPT = Path(__file__).parent / "scripts" / "cancel.toml"


def fake(latency: float) -> dict[str, Any]:
    return {"fake": {"script": str(SCRIPT), "time_scale": 1.0, "cancel_latency": latency}}


async def cancel(client: AhpClient, chat: str, turn_id: str) -> None:
    action = {"type": "chat/turnCancelled", "turnId": turn_id, "duration": 1}
    echo = await client.echo_of(await client.dispatch(chat, action))
    assert "rejectionReason" not in echo, echo.get("rejectionReason")


def ended(client: AhpClient, chat: str, turn_id: str) -> dict[str, Any] | None:
    turns = client.states[chat].get("turns") or []
    return next((t for t in turns if t.get("id") == turn_id), None)


@pytest.mark.parametrize("latency", [0.0, 0.3], ids=["ends-at-once", "ends-300ms-later"])
async def test_a_turn_started_right_after_a_cancel_runs(
    start_bridge: StartBridge, make_settings: Any, tmp_path: Path, latency: float
) -> None:
    settings = make_settings()
    settings.providers = fake(latency)
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=("1.0.0",))
    _, chat = await create(client, tmp_path)
    slow = await client.start_turn(chat, "slow")
    await client.wait_for(lambda: client.states[chat].get("activeTurn", {}).get("responseParts"))
    await cancel(client, chat, slow)
    quick = await client.start_turn(chat, "quick")  # at once: the agent may still be busy
    done = await client.wait_for(lambda: ended(client, chat, quick), timeout=10)
    seen = (done, client.action_types(chat))
    assert done["state"] == "complete", seen
    assert "error" not in done, seen
    texts = [p.get("content") for p in done["responseParts"] if p.get("kind") == "markdown"]
    assert texts == ["Done."], seen
    assert ended(client, chat, slow)["state"] == "cancelled"


async def test_a_provider_that_never_ends_the_cancelled_turn_gets_the_prompt_after_the_timeout(
    start_bridge: StartBridge, make_settings: Any, tmp_path: Path
) -> None:
    """Past `timeouts.turn_end` the held prompt goes out anyway (and this fake, still busy,
    refuses it: the turn fails with the provider's reason instead of waiting forever)."""
    settings = make_settings()
    settings.providers = fake(30.0)
    settings.timeouts.turn_end = 0.5
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=("1.0.0",))
    _, chat = await create(client, tmp_path)
    slow = await client.start_turn(chat, "slow")
    await client.wait_for(lambda: client.states[chat].get("activeTurn", {}).get("responseParts"))
    await cancel(client, chat, slow)
    quick = await client.start_turn(chat, "quick")
    done = await client.wait_for(lambda: ended(client, chat, quick), timeout=10)
    assert done["state"] == "error", done
    assert "a turn is already running" in str(done), done
