"""What the Copilot CLI discovers and runs, through the adapter and through the bridge: the real
CLI, offline (a scripted model server on 127.0.0.1, MCP servers that are local processes).

Covered: skill and custom-agent discovery (`skills.discover`, `agents.discover`), the global
disabled-skills list, each conversation's MCP servers (`session.mcp.list`, enable, disable,
reload) and their status events, a tool's file edit as `fileEdit` content with readable sides
and the turn's changeset from the CLI's own diff, and the session's typed customizations.

What the offline CLI cannot produce: selecting a custom agent. Discovery lists the agents, but a
session started without a GitHub account loads none (`session.agent.list` is empty, `select`
answers "Custom agent ... not found"), so the adapter does not advertise `custom_agents`; the
one thing checked is that such an open fails with AgentUnavailable.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_copilot import CopilotProvider, create_provider

from ahp_bridge.agentapi import AgentUnavailable, EventKind, OpenRequest
from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge
from tests.support.ahp_client import AhpClient
from tests.support.copilot_cli import CliServer, RecordingSink, cli_server, requires_cli
from tests.support.model_server import ModelServer, Text, ToolCall

pytestmark = requires_cli

MCP_SERVER = Path(__file__).parents[1] / "support" / "mcp_stdio_server.py"
V1 = ("1.0.0", "0.9.0")


@pytest.fixture(scope="module")
def models() -> Iterator[ModelServer]:
    with ModelServer() as srv:
        yield srv


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliServer]:
    home = tmp_path_factory.mktemp("copilot-customize")
    config = home / "copilot-home"
    (config / "agents").mkdir(parents=True)
    (config / "agents" / "userbot.agent.md").write_text(
        "---\nname: userbot\ndescription: A user-level agent\n---\nYou help.\n"
    )
    servers = {
        "echo": {"type": "local", "command": sys.executable, "args": [str(MCP_SERVER)]},
        "broken": {"type": "local", "command": str(home / "no-such-mcp-server"), "args": []},
    }
    for server in servers.values():
        server["tools"] = ["*"]
    (config / "mcp-config.json").write_text(json.dumps({"mcpServers": servers}))
    with cli_server(home) as srv:
        yield srv


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    skill = project / ".github" / "skills" / "haiku"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: haiku\ndescription: Write a haiku\n---\nBody.\n")
    agents = project / ".github" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.agent.md").write_text(
        "---\nname: reviewer\ndescription: Reviews diffs\n---\nYou review.\n"
    )
    (project / "notes.txt").write_text("alpha\nbeta\n")
    return project


@pytest.fixture
async def provider(cli: CliServer, models: ModelServer) -> AsyncIterator[CopilotProvider]:
    async with create_provider(cli.options(models.base_url)) as p:
        yield p


async def test_skills_and_agents_are_discovered(provider: CopilotProvider, project: Path) -> None:
    skills = await provider.discover_skills([str(project)], [])
    haiku = next(d for d in skills.definitions if d.name == "haiku")
    assert (haiku.id, haiku.source, haiku.enabled) == ("haiku", "project", True)
    assert haiku.path == str(project / ".github" / "skills" / "haiku" / "SKILL.md")
    agents = await provider.discover_agents([str(project)])
    found = {d.id: d for d in agents.definitions}
    assert (
        found["reviewer"].source == "project" and found["reviewer"].description == "Reviews diffs"
    )
    assert found["userbot"].source == "user"
    # The global disabled-skills list: discovery shows it at once, and it can be undone.
    await provider.set_skill_globally_disabled("haiku", True)
    skills = await provider.discover_skills([str(project)], [])
    assert next(d for d in skills.definitions if d.name == "haiku").enabled is False
    await provider.set_skill_globally_disabled("haiku", False)
    skills = await provider.discover_skills([str(project)], [])
    assert next(d for d in skills.definitions if d.name == "haiku").enabled is True
    with pytest.raises(Exception, match="no hooks"):
        await provider.discover_hooks([str(project)])


async def wait_mcp(conv: Any, want: dict[str, str]) -> dict[str, str]:
    states: dict[str, str] = {}
    with trio.fail_after(30):
        while True:
            states = {s.name: s.status for s in await conv.mcp_status()}
            if all(states.get(k) == v for k, v in want.items()):
                return states
            await trio.sleep(0.2)


async def test_mcp_servers_are_listed_and_switched(
    provider: CopilotProvider, project: Path
) -> None:
    sink = RecordingSink()
    conv = await provider.open(OpenRequest(workdir=str(project), events=sink))
    await wait_mcp(conv, {"echo": "connected", "broken": "failed"})
    broken = next(s for s in await conv.mcp_status() if s.name == "broken")
    assert "spawn" in broken.error
    await conv.set_mcp_server_enabled("echo", False)
    await wait_mcp(conv, {"echo": "disabled"})
    await conv.set_mcp_server_enabled("echo", True)
    await wait_mcp(conv, {"echo": "connected"})
    await conv.restart_mcp_server("echo")
    await wait_mcp(conv, {"echo": "connected"})
    # The CLI's own status events became EventMCPStatus snapshots.
    snapshots = [e.mcp_status for e in sink.snapshot() if e.kind == EventKind.MCP_STATUS]
    assert snapshots and any(
        s is not None and {v.name for v in s.servers} >= {"echo", "broken"} for s in snapshots
    )
    await conv.close()


async def test_an_agent_the_session_cannot_select_fails_the_open(
    provider: CopilotProvider, project: Path
) -> None:
    with pytest.raises(AgentUnavailable):
        await provider.open(OpenRequest(workdir=str(project), events=RecordingSink(), agent="x"))
    assert not provider.capabilities().custom_agents


# -- through the bridge ------------------------------------------------------------------------


@pytest.fixture
def settings(make_settings: Any, cli: CliServer, models: ModelServer, project: Path) -> Settings:
    settings: Settings = make_settings()
    settings.bridge.providers = ["copilot"]
    settings.bridge.workdir = project
    settings.providers = {"copilot": cli.options(models.base_url, workdir=str(project))}
    return settings


async def open_session(client: AhpClient, project: Path) -> tuple[str, str]:
    session = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession",
        {"channel": session, "provider": "copilot", "workingDirectories": [project.as_uri()]},
    )
    await client.subscribe(session)
    await client.wait_for(lambda: client.states[session].get("lifecycle") == "ready", timeout=60)
    chat: str = client.states[session]["defaultChat"]
    await client.subscribe(chat)
    return session, chat


def by_id(client: AhpClient, session: str) -> dict[str, dict[str, Any]]:
    out = {}
    for item in client.states[session].get("customizations") or []:
        out[item["id"]] = item
        for child in item.get("children") or []:
            out[child["id"]] = child
    return out


async def test_the_cli_configuration_is_typed_customizations(
    start_bridge: StartBridge, settings: Settings, project: Path
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, _ = await open_session(client, project)

    def ready() -> bool:
        found = by_id(client, session)
        return "mcp:echo" in found and found["mcp:echo"]["state"]["kind"] == "ready"

    await client.wait_for(lambda: by_id(client, session).get("mcp:echo"), timeout=30)
    found = by_id(client, session)
    assert found["skill:haiku"]["type"] == "skill"
    assert found["agent:reviewer"]["type"] == "agent"
    assert found["mcp:broken"]["state"]["kind"] == "error"
    if not ready():  # the CLI may still be connecting: its status event moves it
        await client.wait_for(ready, timeout=30)
    stop = {"type": "session/mcpServerStopRequested", "id": "mcp:echo"}
    assert "rejectionReason" not in await client.echo_of(await client.dispatch(session, stop))
    await client.wait_for(
        lambda: by_id(client, session)["mcp:echo"]["state"]["kind"] == "stopped", timeout=30
    )
    start = {"type": "session/mcpServerStartRequested", "id": "mcp:echo"}
    await client.dispatch(session, start)
    await client.wait_for(ready, timeout=30)


async def test_a_cli_edit_is_file_edit_content_and_a_turn_changeset(
    start_bridge: StartBridge, settings: Settings, models: ModelServer, project: Path
) -> None:
    target = project / "notes.txt"
    models.script(
        "customize-edit",
        [ToolCall("edit", {"path": str(target), "old_str": "beta", "new_str": "gamma"})],
        [Text("edited")],
    )
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, chat = await open_session(client, project)
    turn_id = str(uuid.uuid4())
    message = {"text": "customize-edit", "origin": {"kind": "user"}}
    started = {"type": "chat/turnStarted", "turnId": turn_id, "message": message}
    await client.dispatch(chat, {**started, "startedAt": "2026-01-01T00:00:00.000Z"})

    def pending() -> str | None:
        active = client.states[chat].get("activeTurn") or {}
        for part in active.get("responseParts") or []:
            call = part.get("toolCall") or {}
            if call.get("status") == "pending-confirmation":
                return str(call["toolCallId"])
        return None

    def done() -> dict[str, Any] | None:
        return next((t for t in client.states[chat].get("turns") or [] if t["id"] == turn_id), None)

    confirmed: set[str] = set()
    with trio.fail_after(90):
        while done() is None:  # allow every permission the edit asks for
            call_id = await client.wait_for(lambda: done() or pending(), timeout=60)
            if isinstance(call_id, str) and call_id not in confirmed:
                confirmed.add(call_id)
                confirm = {"type": "chat/toolCallConfirmed", "turnId": turn_id}
                seq = await client.dispatch(
                    chat,
                    {
                        **confirm,
                        "toolCallId": call_id,
                        "approved": True,
                        "confirmed": "user-action",
                    },
                )
                echo = await client.echo_of(seq)
                assert "rejectionReason" not in echo, echo["rejectionReason"]
            await trio.sleep(0.05)
    turn = done()
    assert turn is not None
    assert target.read_text() == "alpha\ngamma\n"
    calls = [p["toolCall"] for p in turn["responseParts"] if p.get("kind") == "toolCall"]
    edits = [c for call in calls for c in call.get("content") or [] if c["type"] == "fileEdit"]
    (edit,) = edits
    assert edit["after"]["uri"] == target.as_uri()
    read = {"channel": "ahp-root://", "uri": edit["after"]["content"]["uri"]}
    assert (await client.request("resourceRead", read))["data"] == "alpha\ngamma\n"
    read["uri"] = edit["before"]["content"]["uri"]
    assert (await client.request("resourceRead", read))["data"] == "alpha\nbeta\n"
    template = next(
        c["uriTemplate"] for c in client.states[session]["changesets"] if c["changeKind"] == "turn"
    )
    channel = template.replace("{turnId}", turn_id)
    await client.subscribe(channel)
    await client.wait_for(lambda: client.states[channel]["status"] == "ready", timeout=30)
    (changed,) = client.states[channel]["files"]
    assert changed["id"] == target.as_uri()
    assert changed["edit"]["diff"] == {"added": 1, "removed": 1}
