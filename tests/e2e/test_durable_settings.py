"""Session settings survive a restart (in-process bridges on 127.0.0.1, one data directory).

Each bridge serves the fake provider wrapped in a RecordingProvider, one recording per run, so a
test reads the OpenRequest each reopen made and every SetModel; the fake keeps its conversation
records under the data directory, so the second bridge reopens the first one's conversations.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio
from ahp_bridge_fake.conversation import FakeConversation

from ahp_bridge.config import Settings
from ahp_bridge.host.app import run_bridge
from ahp_bridge.host.durable.catalog import DB_NAME, Catalog
from tests.e2e.conftest import bridge_url, record_provider_calls
from tests.e2e.test_commands import turn_reply
from tests.support.ahp_client import AhpClient, open_client

ROOT = "ahp-root://"
V1 = ("1.0.0", "0.9.0")

MODELS = """
[[models]]
id = "fast"
name = "Fast"
efforts = ["low", "high"]

[[models]]
id = "deep"
name = "Deep"
efforts = ["low", "high"]
context_sizes = [{ id = "default", tokens = 128000 }, { id = "long", tokens = 1000000 }]

[[models]]
id = "plain"
name = "Plain"
"""
#: The same provider after an upgrade: "deep" is gone and so is the custom agent.
MODELS_LATER = """
[[models]]
id = "fast"
name = "Fast"
efforts = ["low", "high"]
"""
AGENTS = """
[[agents]]
id = "reviewer"
name = "Reviewer"
description = "Reviews diffs"
"""
PROMPTS = """
[defaults]
chunk_size = 64
delay = 0

[[prompts]]
[[prompts.steps]]
kind = "text"
text = "Answered."
"""


class Runs:
    """Where the current bridge run records its provider calls (one file per run)."""

    def __init__(self, tmp_path: Path) -> None:
        self.dir = tmp_path
        self.number = 0

    @property
    def path(self) -> Path:
        return self.dir / f"calls-{self.number}.jsonl"

    def calls(self, name: str, run: int | None = None) -> list[dict[str, Any]]:
        path = self.dir / f"calls-{self.number if run is None else run}.jsonl"
        lines = [json.loads(line) for line in path.read_text().splitlines()[1:]]
        return [line["args"] for line in lines if line.get("call") == name]


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Runs:
    recorded = Runs(tmp_path)
    record_provider_calls(monkeypatch, lambda: recorded.path)  # the current run's file
    return recorded


def script(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.fixture
def settings(make_settings: Any, tmp_path: Path) -> Settings:
    made: Settings = make_settings()
    made.providers = {
        "fake": {"script": script(tmp_path, "a.toml", MODELS + AGENTS + PROMPTS), "time_scale": 0}
    }
    return made


@asynccontextmanager
async def bridge(settings: Settings, runs: Runs) -> AsyncIterator[AhpClient]:
    """One bridge run with a 1.0 client; leaving the block stops the bridge."""
    runs.number += 1
    async with trio.open_nursery() as nursery:
        port = await nursery.start(run_bridge, settings)
        client = await open_client(nursery, bridge_url(port, settings), "client", versions=V1)
        await client.initialize([ROOT])
        try:
            yield client
        finally:
            await client.close()
            nursery.cancel_scope.cancel()


async def create(client: AhpClient, tmp_path: Path, **config: Any) -> tuple[str, str]:
    session = f"ahp-session:/{uuid.uuid4()}"
    params = {
        "channel": session,
        "provider": "fake",
        "workingDirectories": [tmp_path.as_uri()],
        "config": config,
    }
    await client.request("createSession", params)
    await client.subscribe(session)
    await client.wait_for(lambda: client.states[session].get("lifecycle") == "ready")
    chat: str = client.states[session]["defaultChat"]
    await client.subscribe(chat)
    return session, chat


async def restored(client: AhpClient, session: str) -> str:
    await client.subscribe(session)  # names the dormant session: it is restored
    state = client.states[session]
    assert state["lifecycle"] == "ready", state.get("creationError")
    chat: str = state["defaultChat"]
    await client.subscribe(chat)
    return chat


async def change(client: AhpClient, session: str, **config: Any) -> None:
    seq = await client.dispatch(session, {"type": "session/configChanged", "config": config})
    echo = await client.echo_of(seq)
    assert "rejectionReason" not in echo, echo


def models_of_turns(client: AhpClient, chat: str) -> list[str]:
    ends = [a for a in client.actions(chat) if a["type"] == "chat/turnComplete"]
    return [e["_meta"]["ahpBridge.model"] for e in ends]


def recorded_settings(data_dir: Path, session: str) -> dict[str, Any] | None:
    catalog = Catalog.open(data_dir)  # the bridge has stopped: its writes are all in
    try:
        record = catalog.get(session)
        assert record is not None
        return record.settings
    finally:
        catalog.close()


@pytest.fixture
def logged() -> Iterator[list[dict[str, Any]]]:
    with structlog.testing.capture_logs() as entries:
        yield entries


async def test_settings_changed_mid_session_survive_a_restart(
    settings: Settings, runs: Runs, tmp_path: Path
) -> None:
    workdir = tmp_path.as_uri()
    async with bridge(settings, runs) as client:
        session, chat = await create(client, tmp_path, model="fast", effort="low", agent="reviewer")
        assert (await turn_reply(client, chat, {"text": "one"})) == "Answered."
        await change(client, session, model="deep", effort="high", contextSize="long")
        await client.wait_for(lambda: runs.calls("set_model"))
        assert runs.calls("set_model") == [
            {"model": "deep", "effort": "high", "context_size": "long"}
        ]
    chosen = {
        "model": "deep",
        "effort": "high",
        "contextSize": "long",
        "agent": "reviewer",
        "workingDirectory": workdir,
    }
    assert recorded_settings(settings.data_dir(), session) == chosen

    async with bridge(settings, runs) as client:
        chat = await restored(client, session)
        config = client.states[session]["config"]
        assert config["values"] == chosen
        assert config["schema"]["properties"]["model"]["enum"] == ["fast", "deep", "plain"]
        (opened,) = [c["request"] for c in runs.calls("open")]
        assert opened["ConversationID"]  # a reopen, by id
        assert (opened["Model"], opened["Effort"], opened["ContextSize"], opened["Agent"]) == (
            "deep",
            "high",
            "long",
            "reviewer",
        )
        assert runs.calls("set_model") == []  # the conversation still has its model
        await turn_reply(client, chat, {"text": "two"})
        assert models_of_turns(client, chat) == ["deep"]
        # Settings can be changed again after the restart, and the change is recorded.
        await change(client, session, model="plain")
        await client.wait_for(lambda: runs.calls("set_model"))
        assert runs.calls("set_model") == [{"model": "plain", "effort": "", "context_size": ""}]
        await client.wait_for(
            lambda: client.states[session]["config"]["values"]["model"] == "plain"
        )
        await turn_reply(client, chat, {"text": "three"})
        assert models_of_turns(client, chat) == ["deep", "plain"]
        # A new chat of the restored session opens a new conversation with its settings.
        second = "ahp-chat:/" + str(uuid.uuid4())
        await client.request("createChat", {"channel": session, "chat": second})
        await client.wait_for(lambda: len(runs.calls("open")) == 2)
        new = runs.calls("open")[1]["request"]
        assert (new["ConversationID"], new["Model"], new["Agent"]) == ("", "plain", "reviewer")
    assert recorded_settings(settings.data_dir(), session) == {
        **chosen,
        "model": "plain",
        "effort": "",
        "contextSize": "",
    }


async def test_a_change_the_provider_refused_is_recorded_as_put_back(
    settings: Settings, runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = FakeConversation.set_model

    async def refuse(self: FakeConversation, model: str, effort: str, context_size: str) -> None:
        raise RuntimeError("the runtime refused the model")

    async with bridge(settings, runs) as client:
        session, _ = await create(client, tmp_path, model="plain")
        await change(client, session, model="fast", effort="high")  # taken, and recorded
        await client.wait_for(lambda: runs.calls("set_model"))
        monkeypatch.setattr(FakeConversation, "set_model", refuse)
        await change(client, session, model="deep", effort="low")

        def changes() -> list[Any]:
            kind = "session/configChanged"
            return [a["config"].get("model") for a in client.actions(session) if a["type"] == kind]

        await client.wait_for(lambda: len(changes()) == 3)
        assert changes() == ["fast", "deep", "fast"]  # put back when the provider refused
        values = client.states[session]["config"]["values"]
        assert (values["model"], values["effort"]) == ("fast", "high")
    monkeypatch.setattr(FakeConversation, "set_model", original)
    recorded = recorded_settings(settings.data_dir(), session)
    assert recorded is not None
    assert (recorded["model"], recorded["effort"]) == ("fast", "high")

    async with bridge(settings, runs) as client:
        await restored(client, session)
        values = client.states[session]["config"]["values"]
        assert (values["model"], values["effort"]) == ("fast", "high")
        (opened,) = [c["request"] for c in runs.calls("open")]
        assert (opened["Model"], opened["Effort"]) == ("fast", "high")


async def test_a_setting_the_provider_no_longer_offers_falls_back_to_the_default(
    settings: Settings, runs: Runs, tmp_path: Path, logged: list[dict[str, Any]]
) -> None:
    async with bridge(settings, runs) as client:
        session, chat = await create(
            client, tmp_path, model="deep", effort="high", contextSize="long", agent="reviewer"
        )
        await turn_reply(client, chat, {"text": "one"})
        assert models_of_turns(client, chat) == ["deep"]
    # The provider is upgraded: the model and the custom agent are gone.
    settings.providers["fake"]["script"] = script(tmp_path, "b.toml", MODELS_LATER + PROMPTS)

    async with bridge(settings, runs) as client:
        chat = await restored(client, session)  # restored, not failed
        config = client.states[session]["config"]
        workdir = tmp_path.as_uri()
        # What is still offered is kept: "fast" has the effort chosen for "deep".
        assert config["values"] == {"model": "fast", "effort": "high", "workingDirectory": workdir}
        assert set(config["schema"]["properties"]) == {"model", "effort", "workingDirectory"}
        (opened,) = [c["request"] for c in runs.calls("open")]
        assert (opened["Model"], opened["Agent"]) == ("fast", "")  # an agent gone fails an open
        # The reopened conversation kept the old model: it is switched to the one shown.
        await client.wait_for(lambda: runs.calls("set_model"))
        assert runs.calls("set_model") == [{"model": "fast", "effort": "high", "context_size": ""}]
        await turn_reply(client, chat, {"text": "two"})
        assert models_of_turns(client, chat) == ["fast"]
        await change(client, session, effort="low")  # and settings work from there on
        await client.wait_for(lambda: len(runs.calls("set_model")) == 2)
    (note,) = [e for e in logged if e["event"] == "settings no longer offered, defaults used"]
    assert note["log_level"] == "info" and note["session"] == session
    assert note["recorded"] == {"model": "deep", "contextSize": "long", "agent": "reviewer"}
    assert note["now"] == {"model": "fast", "contextSize": None, "agent": None}
    recorded = recorded_settings(settings.data_dir(), session)
    assert recorded == {"model": "fast", "effort": "low", "workingDirectory": workdir}


async def test_a_session_recorded_without_settings_gets_the_defaults(
    settings: Settings, runs: Runs, tmp_path: Path
) -> None:
    """A session from a catalog written before settings were kept (none recorded) is restored
    with the provider's defaults, and its settings can be changed."""
    async with bridge(settings, runs) as client:
        session, _ = await create(client, tmp_path)
    with sqlite3.connect(settings.data_dir() / DB_NAME) as conn:
        # What migration 4 leaves for a session recorded before it.
        conn.execute("UPDATE sessions SET settings = ''")
    assert recorded_settings(settings.data_dir(), session) is None

    async with bridge(settings, runs) as client:
        await restored(client, session)
        values = client.states[session]["config"]["values"]
        assert (values["model"], values["effort"], values["agent"]) == ("fast", "", "")
        await change(client, session, agent="reviewer")
        await client.wait_for(lambda: client.states[session]["config"]["values"]["agent"])
    recorded = recorded_settings(settings.data_dir(), session)
    assert recorded is not None and recorded["agent"] == "reviewer"
