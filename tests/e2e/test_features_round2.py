"""Host features whose rules an audit could break without a test noticing (round 2), over real
WebSockets against an in-process bridge and the scripted fake: a settings change refused while
a turn runs, undo of a later turn and undo while a turn runs, a refused customization toggle put
back, which MCP call a start makes, and what a 0.7 client's toggle becomes."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_fake.conversation import FakeConversation
from ahp_bridge_fake.provider import FakeProvider

from ahp_bridge import agentapi
from ahp_bridge.config import Settings
from ahp_bridge.protocol import errors as E
from tests.e2e.conftest import StartBridge
from tests.support.ahp_client import AhpClient, RpcFailure, create

SCRIPT = Path(__file__).parent / "scripts" / "features_round2.toml"
README = "# Project\n\nOld first paragraph.\n"
NEW_README = "# Project\n\nA new first paragraph.\n"
NOTES = "one\ntwo\nthree\n"
V1 = ("1.0.0", "0.9.0")
LINES = pytest.mark.parametrize("versions", [V1, ("0.7.0",)], ids=["1.0", "0.7"])
BUSY = "a turn is running; change the model or agent when it has ended"


class Calls:
    """The provider calls a test watches, in order, each also handed to `next()`."""

    def __init__(self) -> None:
        self.seen: list[tuple[Any, ...]] = []
        self._send, self._recv = trio.open_memory_channel[tuple[Any, ...]](math.inf)

    def add(self, *call: Any) -> None:
        self.seen.append(call)
        self._send.send_nowait(call)

    async def next(self) -> tuple[Any, ...]:
        with trio.fail_after(10):
            return await self._recv.receive()


@pytest.fixture
def work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "README.md").write_text(README)
    return work


@pytest.fixture
def settings(make_settings: Any, work: Path) -> Settings:
    settings: Settings = make_settings()
    settings.bridge.workdir = work
    settings.providers = {"fake": {"script": str(SCRIPT), "time_scale": 0.0}}
    return settings


@pytest.fixture
def watched(monkeypatch: pytest.MonkeyPatch) -> Calls:
    """The fake's skill and MCP calls (the recording passes these through unrecorded)."""
    calls = Calls()
    skill = FakeProvider.set_skill_globally_disabled
    enable = FakeConversation.set_mcp_server_enabled
    restart = FakeConversation.restart_mcp_server

    async def set_skill(self: FakeProvider, name: str, disabled: bool) -> None:
        calls.add("set_skill_globally_disabled", name, disabled)
        await skill(self, name, disabled)

    async def set_mcp(self: FakeConversation, name: str, enabled: bool) -> None:
        calls.add("set_mcp_server_enabled", name, enabled)
        await enable(self, name, enabled)

    async def restart_mcp(self: FakeConversation, name: str) -> None:
        calls.add("restart_mcp_server", name)
        await restart(self, name)

    monkeypatch.setattr(FakeProvider, "set_skill_globally_disabled", set_skill)
    monkeypatch.setattr(FakeConversation, "set_mcp_server_enabled", set_mcp)
    monkeypatch.setattr(FakeConversation, "restart_mcp_server", restart_mcp)
    return calls


def recorded(path: Path, name: str) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    return [line["args"] for line in lines if line.get("call") == name]


def by_id(client: AhpClient, session: str) -> dict[str, dict[str, Any]]:
    out = {}
    for item in client.states[session].get("customizations") or []:
        out[item["id"]] = item
        for child in item.get("children") or []:
            out[child["id"]] = child
    return out


def toggle(client: AhpClient, ident: str, enabled: bool) -> dict[str, Any]:
    if client.line == "0.7":
        return {"type": "session/customizationToggled", "id": ident, "enabled": enabled}
    decision = [{"kind": "global", "enabled": enabled}]
    return {"type": "session/customizationToggled", "id": ident, "enablement": decision}


def toggles(client: AhpClient, session: str) -> list[dict[str, Any]]:
    return [a for a in client.actions(session) if a["type"] == "session/customizationToggled"]


async def run_turn(client: AhpClient, chat: str, text: str) -> dict[str, Any]:
    turn_id = await client.start_turn(chat, text)

    def done() -> dict[str, Any] | None:
        return next((t for t in client.states[chat].get("turns") or [] if t["id"] == turn_id), None)

    turn: dict[str, Any] = await client.wait_for(done)
    return turn


async def hold_turn(client: AhpClient, chat: str) -> tuple[str, str]:
    """Start a turn that waits on a permission: (turn id, tool call id); it runs until
    `release`."""
    turn_id = await client.start_turn(chat, "hold")
    ready = await client.wait_for(
        lambda: next(
            (
                a
                for a in client.actions(chat)
                if a["type"] == "chat/toolCallReady" and a["turnId"] == turn_id
            ),
            None,
        )
    )
    return turn_id, str(ready["toolCallId"])


async def release(client: AhpClient, chat: str, turn_id: str, call_id: str) -> None:
    """Allow the held turn's permission and wait until the turn has completed."""
    answer = {
        "type": "chat/toolCallConfirmed",
        "turnId": turn_id,
        "toolCallId": call_id,
        "approved": True,
        "confirmed": "user-action",
    }
    echo = await client.echo_of(await client.dispatch(chat, answer))
    assert "rejectionReason" not in echo, echo
    await client.wait_for(
        lambda: any(
            a["type"] == "chat/turnComplete" and a["turnId"] == turn_id
            for a in client.actions(chat)
        )
    )


async def turn_changeset(client: AhpClient, session: str, turn_id: str) -> str:
    await client.wait_for(lambda: client.states[session].get("changesets"))
    template = next(
        c["uriTemplate"] for c in client.states[session]["changesets"] if c["changeKind"] == "turn"
    )
    uri = str(template).replace("{turnId}", turn_id)
    await client.subscribe(uri)
    await client.wait_for(lambda: client.states[uri]["status"] == "ready")
    return uri


# -- 1. session/configChanged while a turn runs ---------------------------------------------------


async def test_a_settings_change_during_a_turn_is_refused_and_never_reaches_the_provider(
    start_bridge: StartBridge, settings: Settings, work: Path, recording: Path
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, chat = await create(client, work)
    turn_id, call_id = await hold_turn(client, chat)
    for config in ({"model": "fake-plain"}, {"agent": "reviewer"}):
        seq = await client.dispatch(session, {"type": "session/configChanged", "config": config})
        echo = await client.echo_of(seq)
        assert echo.get("rejectionReason") == BUSY, echo
    values = client.states[session]["config"]["values"]
    assert (values["model"], values["agent"]) == ("fake-fast", "")
    await release(client, chat, turn_id, call_id)
    assert recorded(recording, "set_model") == []
    # Idle again, the same change is taken: the refusal was about the running turn.
    change = {"type": "session/configChanged", "config": {"model": "fake-plain"}}
    assert "rejectionReason" not in await client.echo_of(await client.dispatch(session, change))
    await client.wait_for(lambda: recorded(recording, "set_model"))
    assert recorded(recording, "set_model") == [
        {"model": "fake-plain", "effort": "", "context_size": ""}
    ]


# -- 2. undo of the second turn ------------------------------------------------------------------


async def test_undoing_the_second_turn_undoes_exactly_that_turn_and_later_ones(
    start_bridge: StartBridge, settings: Settings, work: Path
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, chat = await create(client, work)
    first = await run_turn(client, chat, "edit the readme")
    second = await run_turn(client, chat, "delete the notes")
    await run_turn(client, chat, "anything")  # a third turn, discarded with the second
    assert not (work / "notes.txt").exists()
    first_uri = await turn_changeset(client, session, first["id"])
    second_uri = await turn_changeset(client, session, second["id"])

    result = await client.request(
        "invokeChangesetOperation", {"channel": second_uri, "operationId": "undo"}
    )
    assert result == {"message": "Discarded 2 turn(s); restored 1 file(s)."}
    assert (work / "notes.txt").read_text() == NOTES  # the second turn's delete, undone
    assert (work / "README.md").read_text() == NEW_README  # the first turn's edit stays
    await client.wait_for(lambda: [t["id"] for t in client.states[chat]["turns"]] == [first["id"]])
    assert client.states[second_uri]["files"] == []
    # The first turn keeps its changeset and its undo.
    kept = {f["id"] for f in client.states[first_uri]["files"]}
    assert kept == {(work / "README.md").as_uri(), (work / "notes.txt").as_uri()}
    assert [op["id"] for op in client.states[first_uri]["operations"]] == ["undo"]
    # The conversation lost the same turns: the next prompt deletes the notes again.
    again = await run_turn(client, chat, "delete the notes")
    assert not (work / "notes.txt").exists()
    assert [t["id"] for t in client.states[chat]["turns"]] == [first["id"], again["id"]]


# -- 3. undo while a turn runs -------------------------------------------------------------------


async def test_undo_while_a_turn_runs_is_refused_and_changes_nothing(
    start_bridge: StartBridge, settings: Settings, work: Path
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, chat = await create(client, work)
    first = await run_turn(client, chat, "edit the readme")
    uri = await turn_changeset(client, session, first["id"])
    turn_id, call_id = await hold_turn(client, chat)
    with pytest.raises(RpcFailure) as failure:
        await client.request("invokeChangesetOperation", {"channel": uri, "operationId": "undo"})
    assert failure.value.code == E.TURN_IN_PROGRESS
    assert failure.value.message == (
        "A turn is running in this chat: undo a turn when the chat is idle"
    )
    assert (work / "README.md").read_text() == NEW_README
    assert (work / "notes.txt").read_text() == NOTES
    (undo,) = client.states[uri]["operations"]
    assert undo["status"] == "idle"
    await release(client, chat, turn_id, call_id)
    assert [t["id"] for t in client.states[chat]["turns"]] == [first["id"], turn_id]


# -- 4. a toggle the provider refuses is put back ------------------------------------------------


@LINES
async def test_a_skill_toggle_the_provider_refuses_is_put_back(
    start_bridge: StartBridge,
    settings: Settings,
    work: Path,
    monkeypatch: pytest.MonkeyPatch,
    versions: tuple[str, ...],
) -> None:
    tried: list[tuple[str, bool]] = []

    async def refuse(self: FakeProvider, name: str, disabled: bool) -> None:
        tried.append((name, disabled))
        raise agentapi.AgentAPIError("the skills list is read-only")

    monkeypatch.setattr(FakeProvider, "set_skill_globally_disabled", refuse)
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=versions)
    session, _ = await create(client, work)
    await client.wait_for(lambda: "skill:legacy" in by_id(client, session))
    assert by_id(client, session)["skill:legacy"]["enabled"] is False
    echo = await client.echo_of(
        await client.dispatch(session, toggle(client, "skill:legacy", True))
    )
    assert "rejectionReason" not in echo  # accepted: the optimistic state claims it on
    await client.wait_for(lambda: len(toggles(client, session)) == 2)
    assert tried == [("legacy", False)]
    claimed, back = [
        e
        for e in client.envelopes
        if e["action"]["type"] == "session/customizationToggled" and "rejectionReason" not in e
    ]
    assert claimed["origin"]["clientId"] == client.client_id and "origin" not in back
    assert by_id(client, session)["skill:legacy"]["enabled"] is False
    assert by_id(client, session)["skill:tests"]["enabled"] is True


async def test_an_mcp_toggle_the_provider_refuses_is_put_back(
    start_bridge: StartBridge, settings: Settings, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refuse(self: FakeConversation, name: str, enabled: bool) -> None:
        raise agentapi.AgentAPIError("the server cannot be switched")

    monkeypatch.setattr(FakeConversation, "set_mcp_server_enabled", refuse)
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, _ = await create(client, work)
    await client.wait_for(lambda: "mcp:github" in by_id(client, session))
    before = by_id(client, session)["mcp:github"].get("enablement")
    await client.dispatch(session, toggle(client, "mcp:github", False))
    await client.wait_for(lambda: len(toggles(client, session)) == 2)
    assert by_id(client, session)["mcp:github"].get("enablement") == before
    assert by_id(client, session)["mcp:github"]["state"] == {"kind": "ready"}


# -- 5. which call a start makes -----------------------------------------------------------------


async def test_starting_a_running_server_restarts_it_and_a_stopped_one_is_enabled(
    start_bridge: StartBridge, settings: Settings, work: Path, watched: Calls
) -> None:
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=V1)
    session, _ = await create(client, work)
    await client.wait_for(lambda: "mcp:github" in by_id(client, session))

    def state() -> str:
        return str(by_id(client, session)["mcp:github"]["state"]["kind"])

    start = {"type": "session/mcpServerStartRequested", "id": "mcp:github"}
    stop = {"type": "session/mcpServerStopRequested", "id": "mcp:github"}
    assert state() == "ready"
    await client.dispatch(session, start)
    assert await watched.next() == ("restart_mcp_server", "github")
    await client.wait_for(lambda: state() == "ready")
    await client.dispatch(session, stop)
    assert await watched.next() == ("set_mcp_server_enabled", "github", False)
    await client.wait_for(lambda: state() == "stopped")
    await client.dispatch(session, start)
    assert await watched.next() == ("set_mcp_server_enabled", "github", True)
    await client.wait_for(lambda: state() == "ready")
    assert [c[0] for c in watched.seen] == [
        "restart_mcp_server",
        "set_mcp_server_enabled",
        "set_mcp_server_enabled",
    ]


# -- 6. a 0.7 client's toggle, lifted --------------------------------------------------------------


async def test_a_0_7_toggle_reaches_1_0_peers_and_the_provider_as_a_session_decision(
    start_bridge: StartBridge, settings: Settings, work: Path, watched: Calls
) -> None:
    bridge = await start_bridge(settings)
    old = await bridge.client("old")
    new = await bridge.client("new", versions=V1)
    session, _ = await create(new, work)
    await old.subscribe(session)
    await new.wait_for(lambda: "mcp:github" in by_id(new, session))

    seq = await old.dispatch(session, toggle(old, "skill:legacy", True))
    assert "rejectionReason" not in await old.echo_of(seq)
    assert await watched.next() == ("set_skill_globally_disabled", "legacy", False)
    await new.wait_for(lambda: toggles(new, session))
    (env,) = [e for e in new.envelopes if e["action"]["type"] == "session/customizationToggled"]
    assert env["origin"] == {"clientId": "old", "clientSeq": seq}
    assert env["action"] == {
        "type": "session/customizationToggled",
        "id": "skill:legacy",
        "enablement": [{"kind": "session", "enabled": True}],
    }

    seq = await old.dispatch(session, toggle(old, "mcp:github", False))
    assert "rejectionReason" not in await old.echo_of(seq)
    assert await watched.next() == ("set_mcp_server_enabled", "github", False)
    await new.wait_for(lambda: by_id(new, session)["mcp:github"]["state"]["kind"] == "stopped")
    assert by_id(new, session)["mcp:github"]["enablement"] == [
        {"kind": "session", "enabled": False}
    ]
    assert by_id(old, session)["mcp:github"]["enabled"] is False
