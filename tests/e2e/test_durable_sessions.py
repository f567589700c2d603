"""Durable sessions in-process: recorded before announced, restored lazily, imported.

Bridges run in-process on 127.0.0.1 (`run_bridge`), stopped and started again on the same
data directory; the fake provider keeps its conversation records under that directory.
"""

from __future__ import annotations

import argparse
import io
import threading
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_fake import FakeProvider, load_script
from ahp_bridge_fake.testing import EventLog
from ahp_bridge_fake.transcript import Transcript

from ahp_bridge import agentapi, providers
from ahp_bridge.config import Settings, TimeoutSettings
from ahp_bridge.engine.sessions import Sessions
from ahp_bridge.host.app import run_bridge
from ahp_bridge.host.durable import sessions as durable
from ahp_bridge.host.durable.catalog import Catalog, CatalogError
from ahp_bridge.host.durable.catalog_cli import run_sessions_command
from ahp_bridge.protocol.models import wire_adapter
from tests.e2e.conftest import bridge_url
from tests.support.ahp_client import AhpClient, RpcFailure, open_client

ROOT = "ahp-root://"

SCRIPT = """
display_name = "Durable sessions"

[defaults]
chunk_size = 64
delay = 0

[[prompts]]
[[prompts.steps]]
kind = "text"
text = "Answered."
"""


@pytest.fixture
def settings(make_settings: Callable[..., Settings], tmp_path: Path) -> Settings:
    script = tmp_path / "script.toml"
    script.write_text(SCRIPT)
    made = make_settings()
    made.providers = {"fake": {"script": str(script), "time_scale": 0.0}}
    return made


class Running:
    def __init__(self, url: str, nursery: trio.Nursery) -> None:
        self.url = url
        self.nursery = nursery
        self.clients: list[AhpClient] = []

    async def client(self, name: str = "client") -> AhpClient:
        client = await open_client(self.nursery, self.url, name)
        self.clients.append(client)
        await client.initialize([ROOT])
        return client


@asynccontextmanager
async def bridge(settings: Settings) -> AsyncIterator[Running]:
    """One bridge for the block; leaving it stops the bridge (and its clients)."""
    async with trio.open_nursery() as nursery:
        port = await nursery.start(run_bridge, settings)
        running = Running(bridge_url(port, settings), nursery)
        try:
            yield running
        finally:
            for client in running.clients:
                await client.close()
            nursery.cancel_scope.cancel()


async def create_session(client: AhpClient, **params: Any) -> tuple[str, str]:
    uri = f"ahp-session:/{uuid.uuid4()}"
    await client.request("createSession", {"channel": uri, "provider": "fake", **params})
    await client.subscribe(uri)
    await client.wait_for(lambda: client.states[uri].get("lifecycle") == "ready")
    chat = client.states[uri]["defaultChat"]
    await client.subscribe(chat)
    return uri, chat


async def prompt(client: AhpClient, chat: str, text: str) -> dict[str, Any]:
    turn_id = await client.start_turn(chat, text)

    def ended() -> dict[str, Any] | None:
        return next((t for t in client.states[chat]["turns"] if t["id"] == turn_id), None)

    turn: dict[str, Any] = await client.wait_for(ended)
    return turn


def session_added(client: AhpClient, uri: str) -> bool:
    return any(
        n["method"] == "root/sessionAdded" and n["params"]["summary"]["resource"] == uri
        for n in client.notifications
    )


def texts(turns: list[dict[str, Any]]) -> list[str]:
    return [t["message"]["text"] for t in turns]


# -- recorded before announced -----------------------------------------------------------------


async def test_a_session_is_recorded_before_anyone_hears_of_it(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = threading.Event(), threading.Event()
    real = Catalog.add_session

    def slow_add(catalog: Catalog, record: Any) -> None:
        entered.set()
        release.wait(30)
        real(catalog, record)

    monkeypatch.setattr(Catalog, "add_session", slow_add)
    async with bridge(settings) as running:
        creator = await running.client("creator")
        watcher = await running.client("watcher")
        uri = f"ahp-session:/{uuid.uuid4()}"
        answered = trio.Event()

        async def create() -> None:
            await creator.request("createSession", {"channel": uri, "provider": "fake"})
            answered.set()

        running.nursery.start_soon(create)
        await trio.to_thread.run_sync(entered.wait, 10)
        # The write is in progress: nobody has heard of the session yet.
        assert (await watcher.request("listSessions", {"channel": ROOT}))["items"] == []
        with pytest.raises(RpcFailure):
            await watcher.request("subscribe", {"channel": uri})
        assert not session_added(watcher, uri) and not answered.is_set()
        release.set()
        await answered.wait()
        await watcher.wait_for(lambda: session_added(watcher, uri))
        reader = Catalog.open(settings.data_dir(), read_only=True)
        assert [r.uri for r in reader.sessions()] == [uri]
        reader.close()


async def test_a_failed_catalog_write_fails_create_session_and_creates_nothing(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Catalog.add_session

    def broken(catalog: Catalog, record: Any) -> None:
        raise CatalogError("disk full")

    monkeypatch.setattr(Catalog, "add_session", broken)
    async with bridge(settings) as running:
        client = await running.client()
        uri = f"ahp-session:/{uuid.uuid4()}"
        with pytest.raises(RpcFailure) as err:
            await client.request("createSession", {"channel": uri, "provider": "fake"})
        assert err.value.code == -32603
        assert "could not be recorded: disk full" in str(err.value.message)
        assert (await client.request("listSessions", {"channel": ROOT}))["items"] == []
        assert not session_added(client, uri)
        with pytest.raises(RpcFailure):
            await client.request("subscribe", {"channel": uri})
        # Nothing was reserved: the same URI works once the catalog does.
        monkeypatch.setattr(Catalog, "add_session", real)
        await client.request("createSession", {"channel": uri, "provider": "fake"})
        await client.wait_for(lambda: session_added(client, uri))


# -- restart -----------------------------------------------------------------------------------


async def test_after_a_restart_sessions_are_listed_and_restored_on_subscribe(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The fake is a HistoryPager: its record is read back in windows of 7 items.
    monkeypatch.setattr(durable, "HISTORY_PAGE", 7)
    assert settings.bridge.workdir is not None
    project = settings.bridge.workdir / "project"
    project.mkdir()
    async with bridge(settings) as running:
        client = await running.client()
        uri, chat = await create_session(client, workingDirectories=[project.as_uri()])
        for i in range(60):
            await prompt(client, chat, f"q{i}")
        await client.dispatch(uri, {"type": "session/titleChanged", "title": "Sixty prompts"})
        await client.wait_for(lambda: client.states[uri]["title"] == "Sixty prompts")
        side = "ahp-chat:/side-" + str(uuid.uuid4())
        await client.request("createChat", {"channel": uri, "chat": side})
        await client.wait_for(lambda: len(client.states[uri]["chats"]) == 2)
        await client.subscribe(side)
        await prompt(client, side, "on the side")
        disposed, _ = await create_session(client)
        await client.request("disposeSession", {"channel": disposed})
        before = (await client.request("listSessions", {"channel": ROOT}))["items"]
        assert [s["resource"] for s in before] == [uri]

    async with bridge(settings) as running:
        client = await running.client()
        listed = (await client.request("listSessions", {"channel": ROOT}))["items"]
        assert [s["resource"] for s in listed] == [uri]
        (summary,) = listed
        assert summary["title"] == "Sixty prompts"
        assert summary["workingDirectories"] == [project.as_uri()]
        assert summary["createdAt"] == before[0]["createdAt"]
        # Listed from the catalog only: nothing is open until a client asks for it.
        assert client.states[ROOT]["activeSessions"] == 0

        snap = await client.subscribe(chat, view={"turns": 20})
        await client.wait_for(lambda: client.states[ROOT]["activeSessions"] == 1)
        assert texts(snap["state"]["turns"]) == [f"q{i}" for i in range(40, 60)]
        cursor = snap["state"]["turnsNextCursor"]
        await client.request("fetchTurns", {"channel": chat, "cursor": cursor})
        await client.wait_for(lambda: len(client.states[chat]["turns"]) == 60)
        turns = client.states[chat]["turns"]
        assert texts(turns) == [f"q{i}" for i in range(60)]
        assert "turnsNextCursor" not in client.states[chat]
        for turn in turns:
            wire_adapter("Turn").validate_python(turn)
            assert turn["state"] == "complete"
            assert [p["content"] for p in turn["responseParts"]] == ["Answered."]
        session_state = (await client.subscribe(uri))["state"]
        assert session_state["lifecycle"] == "ready"
        assert session_state["defaultChat"] == chat
        assert {c["resource"] for c in session_state["chats"]} == {chat, side}
        side_state = (await client.subscribe(side))["state"]
        assert texts(side_state["turns"]) == ["on the side"]

        turn = await prompt(client, chat, "after the restart")
        assert turn["state"] == "complete"
        assert [p["content"] for p in turn["responseParts"]] == ["Answered."]


async def test_a_client_reconnecting_after_a_restart_gets_snapshots_not_a_wrong_replay(
    settings: Settings,
) -> None:
    async with bridge(settings) as running:
        client = await running.client("loyal")
        start = client.last_seq
        uri, chat = await create_session(client)
        await prompt(client, chat, "before")
        last_seen = client.last_seq
    async with bridge(settings) as running:
        # As many new actions as the first run made: a store counting again from where the
        # first one started would now have reused `last_seen` for an unrelated action.
        other = await running.client("other")
        start_again = other.last_seq
        assert start_again > last_seen
        _, other_chat = await create_session(other)
        while other.last_seq - start_again <= last_seen - start:
            await prompt(other, other_chat, "filler")
        back = await open_client(running.nursery, running.url, "loyal")
        running.clients.append(back)
        result = await back.request(
            "reconnect",
            {
                "channel": ROOT,
                "clientId": "loyal",
                "lastSeenServerSeq": last_seen,
                "subscriptions": [ROOT, uri, chat],
            },
        )
        assert result["type"] == "snapshot"
        snapshots = {s["resource"]: s for s in result["snapshots"]}
        assert set(snapshots) == {ROOT, uri, chat}
        assert texts(snapshots[chat]["state"]["turns"]) == ["before"]
        assert all(s["fromSeq"] > last_seen for s in snapshots.values())


async def test_initial_subscriptions_restore_what_they_name(settings: Settings) -> None:
    async with bridge(settings) as running:
        client = await running.client()
        _, chat = await create_session(client)
        await prompt(client, chat, "remember me")
    async with bridge(settings) as running:
        client = await open_client(running.nursery, running.url, "fresh")
        running.clients.append(client)
        result = await client.initialize([ROOT, chat, "ahp-chat:/never-existed"])
        snapshots = {s["resource"]: s["state"] for s in result["snapshots"]}
        assert set(snapshots) == {ROOT, chat}
        assert texts(snapshots[chat]["turns"]) == ["remember me"]
        assert snapshots[ROOT]["activeSessions"] == 1


async def test_a_session_that_cannot_be_restored_stays_listed_with_the_reason(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with bridge(settings) as running:
        client = await running.client()
        first, _ = await create_session(client)
        second, _ = await create_session(client)

    async def unreadable(*args: Any) -> Any:
        raise OSError("the record is unreadable")

    def broken(self: Any, record: Any) -> Any:
        if record.uri == second:
            raise RuntimeError("unexpected")
        return real(self, record)

    real = Sessions.restore_problem
    monkeypatch.setattr(durable, "read_history", unreadable)
    monkeypatch.setattr(Sessions, "restore_problem", broken)
    async with bridge(settings) as running:
        client = await running.client()
        one = (await client.subscribe(first))["state"]
        assert one["lifecycle"] == "creationFailed"
        assert one["creationError"]["errorType"] == "OSError"
        assert "the record is unreadable" in one["creationError"]["message"]
        two = (await client.subscribe(second))["state"]
        assert two["lifecycle"] == "creationFailed"
        assert "could not be restored: unexpected" in two["creationError"]["message"]
        listed = (await client.request("listSessions", {"channel": ROOT}))["items"]
        assert {s["resource"] for s in listed} == {first, second}
        assert all(s["status"] & 2 for s in listed)  # SessionStatus.Error


async def test_a_provider_that_never_answers_does_not_hold_the_client_forever(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with bridge(settings) as running:
        client = await running.client()
        uri, _ = await create_session(client)

    async def hanging(*args: Any) -> Any:
        await trio.sleep_forever()

    monkeypatch.setattr(durable, "read_history", hanging)
    impatient = settings.model_copy(update={"timeouts": TimeoutSettings(reopen=0.2)})
    async with bridge(impatient) as running:
        client = await running.client()
        state = (await client.subscribe(uri))["state"]
        assert state["lifecycle"] == "creationFailed"
        assert state["creationError"] == {
            "errorType": "TimeoutError",
            "message": "reopening the provider conversation failed: "
            "the provider did not reopen the conversation within 0.2 s (timeouts.reopen)",
        }


async def test_a_session_never_reopened_can_be_disposed_and_stays_gone(
    settings: Settings,
) -> None:
    async with bridge(settings) as running:
        client = await running.client()
        uri, chat = await create_session(client)
        await prompt(client, chat, "hello")
    async with bridge(settings) as running:
        client = await running.client()
        await client.request("disposeSession", {"channel": uri})
        await client.wait_for(
            lambda: any(n["method"] == "root/sessionRemoved" for n in client.notifications)
        )
        assert (await client.request("listSessions", {"channel": ROOT}))["items"] == []
        with pytest.raises(RpcFailure):
            await client.request("subscribe", {"channel": chat})
    async with bridge(settings) as running:
        client = await running.client()
        assert (await client.request("listSessions", {"channel": ROOT}))["items"] == []


async def test_retention_forgets_old_sessions_at_startup(settings: Settings) -> None:
    async with bridge(settings) as running:
        client = await running.client()
        await create_session(client)
    catalog = Catalog.open(settings.data_dir())
    (record,) = catalog.sessions()
    catalog.update_session(record.uri, modified_at="2000-01-01T00:00:00.000Z")
    for chat in record.chats:
        catalog.update_chat(chat.uri, modified_at="2000-01-01T00:00:00.000Z")
    catalog.close()
    settings.bridge.retention_days = 365
    async with bridge(settings) as running:
        client = await running.client()
        assert (await client.request("listSessions", {"channel": ROOT}))["items"] == []


# -- importing a provider's own conversations --------------------------------------------------


class ImportingFake(FakeProvider):
    """The fake plus agentapi.Importer over its on-disk records (the fake has no Importer)."""

    async def previous(self, workdir: str) -> list[agentapi.PreviousConversation]:
        assert self.data_dir is not None
        found = []
        for file in sorted(self.data_dir.glob("*.jsonl")):
            meta = Transcript.load(file).meta
            if workdir in ("", meta.workdir):
                found.append(
                    agentapi.PreviousConversation(
                        id=meta.id, title=meta.title, workdir=meta.workdir
                    )
                )
        await trio.lowlevel.checkpoint()
        return found

    async def in_use(self, ids: list[str]) -> list[str]:
        await trio.lowlevel.checkpoint()
        return []


@pytest.fixture
def importing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[..., ImportingFake]:
    script = tmp_path / "script.toml"
    script.write_text(SCRIPT)

    def create(name: str, options: Mapping[str, Any] | None = None) -> ImportingFake:
        assert name == "fake"
        return ImportingFake(load_script(script), data_dir=(options or {}).get("data_dir"))

    monkeypatch.setattr(providers, "create", create)
    return create


async def earlier_conversation(data_dir: Path, workdir: Path, text: str, title: str) -> str:
    """A conversation the provider had before the bridge knew it (one finished turn)."""
    script = data_dir.parent / "script.toml"
    provider = FakeProvider(load_script(script), data_dir=data_dir / "providers" / "fake")
    events = EventLog()
    async with provider:
        conversation = await provider.open(
            agentapi.OpenRequest(workdir=str(workdir), title=title, events=events)
        )
        await conversation.send(agentapi.Prompt(text=text))
        await events.turn_end()
        await conversation.close()
    return conversation.id()


async def test_import_lists_and_opens_a_providers_earlier_conversations(
    settings: Settings, importing: Callable[..., ImportingFake], tmp_path: Path
) -> None:
    data_dir = settings.data_dir()
    project = tmp_path / "project"
    project.mkdir()
    conv = await earlier_conversation(data_dir, project, "from before the bridge", "Old work")
    await earlier_conversation(data_dir, tmp_path, "another project", "Elsewhere")
    assert isinstance(importing("fake", {"data_dir": str(data_dir)}), agentapi.Importer)

    args = argparse.Namespace(
        sessions_command="import", provider="fake", workdir=project, conversation=None
    )
    out = io.StringIO()
    code = await trio.to_thread.run_sync(lambda: run_sessions_command(args, settings, out=out))
    assert code == 0, out.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0] == "imported 1 conversation"
    assert lines[1].endswith(f" <- {conv}  Old work")
    # Importing again adds nothing: the conversation is already a session.
    out = io.StringIO()
    assert await trio.to_thread.run_sync(lambda: run_sessions_command(args, settings, out=out)) == 0
    assert out.getvalue().startswith(f"skipped {conv}: already a session\n")

    async with bridge(settings) as running:
        client = await running.client()
        (summary,) = (await client.request("listSessions", {"channel": ROOT}))["items"]
        assert summary["title"] == "Old work"
        assert summary["workingDirectories"] == [project.as_uri()]
        state = (await client.subscribe(summary["resource"]))["state"]
        assert state["lifecycle"] == "ready"
        chat = state["defaultChat"]
        snap = await client.subscribe(chat)
        assert texts(snap["state"]["turns"]) == ["from before the bridge"]
        turn = await prompt(client, chat, "continued through the bridge")
        assert turn["state"] == "complete"


async def test_create_session_can_import_a_conversation_by_id(
    settings: Settings, importing: Callable[..., ImportingFake], tmp_path: Path
) -> None:
    conv = await earlier_conversation(settings.data_dir(), tmp_path, "imported prompt", "Old")
    here = {"channel": ROOT, "provider": "fake", "workingDirectory": tmp_path.as_uri()}
    async with bridge(settings) as running:
        client = await running.client()
        # resolveSessionConfig offers the provider's conversations for that directory.
        offer = await client.request("resolveSessionConfig", here)
        wire_adapter("ResolveSessionConfigResult").validate_python(offer)
        prop = offer["schema"]["properties"]["ahpBridge.importConversation"]
        assert (prop["type"], prop["enum"], prop["enumLabels"]) == ("string", [conv], ["Old"])
        elsewhere = {**here, "workingDirectory": (tmp_path / "other").as_uri()}
        none = await client.request("resolveSessionConfig", elsewhere)
        assert "ahpBridge.importConversation" not in none["schema"]["properties"]
        uri, chat = await create_session(
            client,
            workingDirectories=[tmp_path.as_uri()],
            config={"ahpBridge.importConversation": prop["enum"][0]},
        )
        # Once it is a session it is no longer offered.
        again = await client.request("resolveSessionConfig", here)
        assert "ahpBridge.importConversation" not in again["schema"]["properties"]
        assert texts(client.states[chat]["turns"]) == ["imported prompt"]
        await prompt(client, chat, "next")
        assert texts(client.states[chat]["turns"]) == ["imported prompt", "next"]
        bad = f"ahp-session:/{uuid.uuid4()}"
        await client.request(
            "createSession",
            {
                "channel": bad,
                "provider": "fake",
                "config": {"ahpBridge.importConversation": "nope"},
            },
        )
        await client.subscribe(bad)
        await client.wait_for(lambda: client.states[bad].get("lifecycle") == "creationFailed")
        assert "nope" in client.states[bad]["creationError"]["message"]
    async with bridge(settings) as running:
        client = await running.client()
        listed = (await client.request("listSessions", {"channel": ROOT}))["items"]
        assert {s["resource"] for s in listed} == {uri, bad}
        snap = await client.subscribe(chat)
        assert texts(snap["state"]["turns"]) == ["imported prompt", "next"]
        failed = (await client.subscribe(bad))["state"]
        assert failed["lifecycle"] == "creationFailed"
        assert "nope" in failed["creationError"]["message"]


async def test_a_client_reconnecting_after_a_restart_keeps_its_wire_version(
    settings: Settings,
) -> None:
    """`reconnect` names no version: the catalog remembers each client's line across runs."""
    async with bridge(settings) as running:
        modern = await open_client(
            running.nursery, running.url, "modern", versions=("1.0.0", "0.9.0")
        )
        running.clients.append(modern)
        await modern.initialize([ROOT])
        uri, chat = await create_session(modern)
        await prompt(modern, chat, "before")
    async with bridge(settings) as running:
        for name, line in (("modern", "1.0"), ("never-seen", "0.7")):
            back = await open_client(
                running.nursery, running.url, name, versions=("1.0.0", "0.9.0")
            )
            back.line = line  # the check runs in the line the host remembers
            running.clients.append(back)
            result = await back.request(
                "reconnect",
                {"clientId": name, "lastSeenServerSeq": 0, "subscriptions": [ROOT, uri]},
            )
            assert result["type"] == "snapshot"
            [_root, session] = result["snapshots"]
            # 1.0 summaries carry `defaultChat`; a line the host never saw is served as 0.7
            listed = await back.request("listSessions", {"channel": ROOT})
            [item] = [i for i in listed["items"] if i["resource"] == uri]
            assert ("defaultChat" in item) is (line == "1.0")
            assert session["state"]["defaultChat"] == chat
