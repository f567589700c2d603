"""Session settings over real WebSockets, 1.0 and 0.7: `resolveSessionConfig` gives a schema
built from the provider, `sessionConfigCompletions` completes it, `createSession` values reach
the provider's `OpenRequest`, and `session/configChanged` switches the model mid-session (or is
refused with the reason)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge
from tests.e2e.test_commands import turn_reply
from tests.support.ahp_client import RpcFailure, create

SCRIPT = Path(__file__).parent / "scripts" / "customize.toml"
ROOT = "ahp-root://"
V1 = ("1.0.0", "0.9.0")
LINES = pytest.mark.parametrize("versions", [V1, ("0.7.0",)], ids=["1.0", "0.7"])


@pytest.fixture
def selected(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The agents the fake was asked to select (AgentSelector is not recorded)."""
    from ahp_bridge_fake.conversation import FakeConversation

    seen: list[str] = []
    original = FakeConversation.select_agent

    async def select_agent(self: FakeConversation, id: str) -> None:
        seen.append(id)
        await original(self, id)

    monkeypatch.setattr(FakeConversation, "select_agent", select_agent)
    return seen


def calls(path: Path, name: str) -> list[dict[str, Any]]:
    import json

    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [line["args"] for line in lines if line.get("call") == name]


@pytest.fixture
def settings(make_settings: Any) -> Settings:
    settings: Settings = make_settings()
    settings.providers = {"fake": {"script": str(SCRIPT), "time_scale": 0.0}}
    return settings


@LINES
async def test_the_schema_is_built_from_the_provider(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, versions: tuple[str, ...]
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    here = {"channel": ROOT, "provider": "fake", "workingDirectory": tmp_path.as_uri()}
    result = await client.request("resolveSessionConfig", here)
    props = result["schema"]["properties"]
    assert set(props) == {"model", "effort", "contextSize", "agent", "workingDirectory"}
    assert props["model"]["enum"] == ["fake-fast", "fake-plain"]
    assert props["model"]["enumLabels"] == ["Fake Fast", "Fake Plain"]
    assert props["model"]["sessionMutable"] is True
    assert props["effort"]["enum"] == ["", "low", "high"]
    assert props["contextSize"]["enum"] == ["", "default", "long"]
    assert props["agent"]["enum"] == ["", "reviewer"]
    assert props["agent"]["enumLabels"] == ["Default agent", "Reviewer"]
    assert "sessionMutable" not in props["workingDirectory"]
    assert result["values"] == {
        "model": "fake-fast",
        "effort": "",
        "contextSize": "",
        "agent": "",
        "workingDirectory": tmp_path.as_uri(),
    }
    # A value that does not fit its model falls back while the client is still choosing.
    chosen = {**here, "config": {"model": "fake-plain", "effort": "high", "autoApprove": "x"}}
    again = await client.request("resolveSessionConfig", chosen)
    assert again["values"]["model"] == "fake-plain" and again["values"]["effort"] == ""
    assert "autoApprove" not in again["values"]


@LINES
async def test_completions_complete_a_setting(
    start_bridge: StartBridge, settings: Settings, versions: tuple[str, ...]
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    ask = {"channel": ROOT, "provider": "fake", "property": "model"}
    items = (await client.request("sessionConfigCompletions", {**ask, "query": "plain"}))["items"]
    assert items == [{"value": "fake-plain", "label": "Fake Plain"}]
    agents = await client.request("sessionConfigCompletions", {**ask, "property": "agent"})
    assert agents["items"][1] == {
        "value": "reviewer",
        "label": "Reviewer",
        "description": "Reviews diffs",
    }
    with pytest.raises(RpcFailure) as failure:
        await client.request("sessionConfigCompletions", {**ask, "property": "temperature"})
    assert "'temperature' is not a setting" in str(failure.value.message)


async def test_create_session_values_reach_the_provider(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, recording: Path
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, _ = await create(
        client, tmp_path, model="fake-fast", effort="high", agent="reviewer", mode="interactive"
    )
    (opened,) = [c["request"] for c in calls(recording, "open")]
    assert (opened["Model"], opened["Effort"], opened["Agent"]) == ("fake-fast", "high", "reviewer")
    assert opened["Workdir"] == str(tmp_path)
    values = client.states[session]["config"]["values"]
    assert values["effort"] == "high" and values["agent"] == "reviewer"
    for bad, reason in (
        ({"model": "gpt-9"}, "config.model: 'gpt-9' is not one of"),
        ({"model": "fake-plain", "effort": "high"}, "model 'fake-plain' has no effort 'high'"),
        ({"agent": "nobody"}, "config.agent"),
        ({"mode": "autopilot"}, "cannot be switched through agentapi"),
    ):
        with pytest.raises(RpcFailure) as failure:
            await client.request(
                "createSession",
                {"channel": f"ahp-session:/{uuid.uuid4()}", "provider": "fake", "config": bad},
            )
        assert failure.value.code == -32602 and reason in str(failure.value.message)


@LINES
async def test_the_model_changes_mid_session(
    start_bridge: StartBridge,
    settings: Settings,
    tmp_path: Path,
    recording: Path,
    selected: list[str],
    versions: tuple[str, ...],
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    session, chat = await create(client, tmp_path)
    await turn_reply(client, chat, {"text": "hello"})
    seq = await client.dispatch(
        session,
        {"type": "session/configChanged", "config": {"model": "fake-plain"}},
    )
    echo = await client.echo_of(seq)
    assert "rejectionReason" not in echo
    await client.wait_for(lambda: calls(recording, "set_model"))
    assert calls(recording, "set_model") == [
        {"model": "fake-plain", "effort": "", "context_size": ""}
    ]
    values = client.states[session]["config"]["values"]
    assert values["model"] == "fake-plain" and values["effort"] == ""
    await turn_reply(client, chat, {"text": "after"})
    turns = calls(recording, "send")
    assert len(turns) == 2
    # The provider ran the second turn on the new model (the end of a turn names it).
    ends = [a for a in client.actions(chat) if a["type"] == "chat/turnComplete"]
    assert [e["_meta"]["ahpBridge.model"] for e in ends] == ["fake-fast", "fake-plain"]
    # The agent follows through SelectAgent.
    await client.dispatch(
        session, {"type": "session/configChanged", "config": {"agent": "reviewer"}}
    )
    await client.wait_for(lambda: selected)
    assert selected == ["reviewer"]
    await client.wait_for(lambda: client.states[session]["config"]["values"]["agent"])
    assert client.states[session]["config"]["values"]["agent"] == "reviewer"


async def test_a_model_change_the_provider_refuses_is_put_back_everywhere(
    start_bridge: StartBridge,
    settings: Settings,
    tmp_path: Path,
    recording: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """SetModel fails: the state shows the previous values again, and a chat opened afterwards
    asks the provider for the previous model, not the refused one."""
    from ahp_bridge_fake.conversation import FakeConversation

    from ahp_bridge import agentapi

    async def refuse(self: FakeConversation, *args: Any) -> None:
        raise agentapi.AgentAPIError("the runtime refused the model")

    monkeypatch.setattr(FakeConversation, "set_model", refuse)
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, _ = await create(client, tmp_path, model="fake-fast")
    change = {"type": "session/configChanged", "config": {"model": "fake-plain"}}
    assert "rejectionReason" not in await client.echo_of(await client.dispatch(session, change))
    await client.wait_for(
        lambda: any(
            a["type"] == "session/configChanged" and a.get("replace")
            for a in client.actions(session)
        )
    )
    assert client.states[session]["config"]["values"]["model"] == "fake-fast"
    chat = f"ahp-chat:/{uuid.uuid4()}"
    await client.request("createChat", {"channel": session, "chat": chat})
    await client.wait_for(lambda: len(calls(recording, "open")) == 2)
    assert [c["request"]["Model"] for c in calls(recording, "open")] == ["fake-fast", "fake-fast"]


@LINES
async def test_bad_changes_are_refused_with_a_reason(
    start_bridge: StartBridge, settings: Settings, tmp_path: Path, versions: tuple[str, ...]
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    session, _ = await create(client, tmp_path)
    for config, reason in (
        ({"model": "gpt-9"}, "config.model: 'gpt-9' is not one of"),
        ({"effort": "ultra"}, "config.effort: 'ultra' is not one of"),
        ({"model": "fake-plain", "effort": "low"}, "model 'fake-plain' has no effort 'low'"),
        ({"workingDirectory": "file:///elsewhere"}, "fixed once the session exists"),
        ({"temperature": 1}, "config.temperature: not a setting of this session"),
    ):
        seq = await client.dispatch(session, {"type": "session/configChanged", "config": config})
        echo = await client.echo_of(seq)
        assert reason in echo["rejectionReason"], echo
    assert client.states[session]["config"]["values"]["model"] == "fake-fast"
