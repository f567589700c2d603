"""Session customizations over real WebSockets, 1.0, 0.8, 0.7 and 0.6 (0.8 has 1.0's enablement
decisions, 0.7 and 0.6 a flag): the provider's skills, custom
agents, hooks, instructions, commands and MCP servers as typed customizations; toggling a skill
reaches the provider, MCP servers start and stop, and what cannot be done is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge
from tests.e2e.test_commands import complete
from tests.support.ahp_client import AhpClient, create

SCRIPT = Path(__file__).parent / "scripts" / "customize.toml"
V1 = ("1.0.0", "0.9.0")
LINES = pytest.mark.parametrize(
    "versions", [V1, ("0.8.0",), ("0.7.0",), ("0.6.0",)], ids=["1.0", "0.8", "0.7", "0.6"]
)
#: The lines whose customizations carry an `enabled` flag, not `enablement` decisions.
FLAGGED = ("0.7", "0.6")


@pytest.fixture
def settings(make_settings: Any) -> Settings:
    settings: Settings = make_settings()
    settings.providers = {"fake": {"script": str(SCRIPT), "time_scale": 0.0}}
    return settings


def by_id(client: AhpClient, session: str) -> dict[str, dict[str, Any]]:
    out = {}
    for item in client.states[session].get("customizations") or []:
        out[item["id"]] = item
        for child in item.get("children") or []:
            out[child["id"]] = child
    return out


def toggle(client: AhpClient, ident: str, enabled: bool) -> dict[str, Any]:
    if client.line in FLAGGED:
        return {"type": "session/customizationToggled", "id": ident, "enabled": enabled}
    decision = [{"kind": "global", "enabled": enabled}]
    return {"type": "session/customizationToggled", "id": ident, "enablement": decision}


def is_on(client: AhpClient, item: dict[str, Any]) -> bool:
    if client.line in FLAGGED or "enabled" in item:
        return bool(item.get("enabled", True))
    return bool(item["enablement"][0]["enabled"])


async def offered(client: AhpClient, chat: str) -> list[str]:
    return [i["insertText"].strip() for i in await complete(client, chat, "/")]


@LINES
async def test_the_provider_configuration_is_typed_customizations(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, versions: tuple[str, ...]
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    session, _ = await create(client, tmp_path)
    await client.wait_for(lambda: client.states[session].get("customizations"))
    items = client.states[session]["customizations"]
    assert [(i["type"], i.get("contents"), i["name"]) for i in items] == [
        ("directory", "skill", "Skills"),
        ("directory", "agent", "Custom agents"),
        ("directory", "hook", "Hooks"),
        ("directory", "rule", "Instructions"),
        ("directory", "prompt", "Commands"),
        ("mcpServer", None, "github"),
        ("mcpServer", None, "broken"),
    ]
    found = by_id(client, session)
    tests, legacy = found["skill:tests"], found["skill:legacy"]
    assert tests["type"] == "skill" and tests["description"] == "Write tests for a module"
    assert tests["uri"] == (tmp_path / "skills/tests/SKILL.md").as_uri()
    assert (tests["enabled"], legacy["enabled"]) == (True, False)
    assert found["agent:reviewer"]["name"] == "Reviewer"
    assert found["rule:style"]["uri"] == (tmp_path / "AGENTS.md").as_uri()
    assert found["prompt:review"]["name"] == "/review"
    assert found["mcp:github"]["state"] == {"kind": "ready"} and is_on(client, found["mcp:github"])
    broken = found["mcp:broken"]["state"]
    assert broken["kind"] == "error" and "command not found" in broken["error"]["message"]
    assert not any(k.startswith("ahpBridge.mcp") for k in client.states[session].get("_meta", {}))


@LINES
async def test_toggling_a_skill_reaches_the_provider(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, versions: tuple[str, ...]
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    session, chat = await create(client, tmp_path)
    await client.wait_for(lambda: client.states[session].get("customizations"))
    assert await offered(client, chat) == ["/review", "/tests"]
    echo = await client.echo_of(
        await client.dispatch(session, toggle(client, "skill:legacy", True))
    )
    assert "rejectionReason" not in echo
    await client.wait_for(lambda: by_id(client, session)["skill:legacy"]["enabled"] is True)
    # The provider's own list changed: the skill is a command now.
    names: list[str] = []
    for _ in range(50):
        names = await offered(client, chat)
        if "/legacy" in names:
            break
    assert names == ["/legacy", "/review", "/tests"]
    await client.dispatch(session, toggle(client, "skill:tests", False))
    await client.wait_for(lambda: by_id(client, session)["skill:tests"]["enabled"] is False)
    for _ in range(50):
        names = await offered(client, chat)
        if "/tests" not in names:
            break
    assert "/tests" not in names


@LINES
async def test_what_cannot_be_toggled_is_refused_with_a_reason(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, versions: tuple[str, ...]
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    session, _ = await create(client, tmp_path)
    await client.wait_for(lambda: client.states[session].get("customizations"))
    for ident, reason in (
        ("agent:reviewer", "cannot turn custom agents on or off"),
        ("hook:pre-commit", "cannot turn hooks on or off"),
        ("dir:skill", "whole directories"),
        ("nothing", "no customization 'nothing'"),
    ):
        echo = await client.echo_of(await client.dispatch(session, toggle(client, ident, False)))
        assert reason in echo["rejectionReason"]
    start = {"type": "session/mcpServerStartRequested", "id": "skill:tests"}
    echo = await client.echo_of(await client.dispatch(session, start))
    assert "is not an MCP server" in echo["rejectionReason"]
    assert by_id(client, session)["agent:reviewer"].get("enabled", True) is True


@LINES
async def test_mcp_servers_stop_and_start(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, versions: tuple[str, ...]
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    session, _ = await create(client, tmp_path)
    await client.wait_for(lambda: client.states[session].get("customizations"))

    def state() -> str:
        return str(by_id(client, session)["mcp:github"]["state"]["kind"])

    stop = {"type": "session/mcpServerStopRequested", "id": "mcp:github"}
    assert "rejectionReason" not in await client.echo_of(await client.dispatch(session, stop))
    await client.wait_for(lambda: state() == "stopped")
    start = {"type": "session/mcpServerStartRequested", "id": "mcp:github"}
    assert "rejectionReason" not in await client.echo_of(await client.dispatch(session, start))
    await client.wait_for(lambda: state() == "ready")
    # Turned off for this conversation: stopped, and its decision says off.
    await client.dispatch(session, toggle(client, "mcp:github", False))
    # The server's state and the list read after the call both come: a reading the provider
    # began before the call may land between them, so wait for the two to agree.
    await client.wait_for(
        lambda: state() == "stopped" and not is_on(client, by_id(client, session)["mcp:github"])
    )
