"""A chat longer than the host keeps live (limits.max_live_turns): its oldest turns leave for
the catalog, a 1.0 client pages back through every one of them with fetchTurns (also after a
restart), and a 0.7 client sees the retained tail."""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from ahp_bridge.config import Settings
from ahp_bridge.host.durable.catalog import DB_NAME
from tests.e2e.test_durable_sessions import (
    SCRIPT,
    Running,
    bridge,
    create_session,
    prompt,
    texts,
)
from tests.support.ahp_client import AhpClient, RpcFailure, open_client

ROOT = "ahp-root://"
LIVE = 5
TURNS = 60  # more than one page (the store's page is 50)


@pytest.fixture
def settings(make_settings: Callable[..., Settings], tmp_path: Path) -> Settings:
    """A fake that answers at once, and a host that keeps LIVE turns of a chat live."""
    script = tmp_path / "script.toml"
    script.write_text(SCRIPT)
    made = make_settings()
    made.providers = {"fake": {"script": str(script), "time_scale": 0.0}}
    made.limits.max_live_turns = LIVE
    return made


async def client_of(running: Running, name: str, version: str = "1.0.0") -> AhpClient:
    """A client of `version`, closed with the bridge."""
    client = await open_client(running.nursery, running.url, name, versions=(version,))
    running.clients.append(client)
    await client.initialize([ROOT])
    return client


async def page_back(client: AhpClient, chat: str, cursor: str | None) -> list[str]:
    """fetchTurns until no cursor is left; the texts of every turn loaded, in order."""
    loaded: list[str] = []
    while cursor:
        before = len(client.frames)
        assert await client.request("fetchTurns", {"channel": chat, "cursor": cursor}) == {}
        [action] = [
            f["params"]["action"]
            for f in client.frames[before:]
            if f.get("method") == "action" and f["params"]["action"]["type"] == "chat/turnsLoaded"
        ]
        loaded[:0] = texts(action["turns"])
        cursor = action.get("turnsNextCursor")
        assert client.states[chat].get("turnsNextCursor") == cursor
    return loaded


async def long_chat(client: AhpClient, turns: int) -> tuple[str, str]:
    uri, chat = await create_session(client)
    for i in range(turns):
        await prompt(client, chat, f"q{i}")
    return uri, chat


async def test_a_1_0_client_pages_back_through_every_turn_exactly_once(settings: Settings) -> None:
    async with bridge(settings) as running:
        writer = await client_of(running, "writer")
        _, chat = await long_chat(writer, TURNS)
        everything = [f"q{i}" for i in range(TURNS)]
        assert texts(writer.states[chat]["turns"]) == everything  # a client keeps what it got

        reader = await client_of(running, "reader")
        snap = await reader.subscribe(chat, view={"turns": 3})
        assert texts(snap["state"]["turns"]) == everything[-3:]
        loaded = await page_back(reader, chat, snap["state"]["turnsNextCursor"])
        assert loaded == everything[:-3]
        assert texts(reader.states[chat]["turns"]) == everything
        assert "turnsNextCursor" not in reader.states[chat]

        # without a view a 1.0 client gets the turns the host keeps live, and the cursor
        full = await client_of(running, "full")
        state = (await full.subscribe(chat))["state"]
        assert texts(state["turns"]) == everything[-LIVE:]
        assert await page_back(full, chat, state["turnsNextCursor"]) == everything[:-LIVE]

        # a cursor of no page of this chat is refused
        with pytest.raises(RpcFailure, match="unrecognised turns cursor") as err:
            await full.request("fetchTurns", {"channel": chat, "cursor": f"1~{TURNS + 1}"})
        assert err.value.code == -32602
        # what was loaded back left again: the next snapshot holds what is live
        later = await client_of(running, "later")
        assert texts((await later.subscribe(chat))["state"]["turns"]) == everything[-LIVE:]


async def test_a_0_7_client_sees_the_retained_tail(settings: Settings) -> None:
    async with bridge(settings) as running:
        writer = await client_of(running, "writer")
        uri, chat = await long_chat(writer, 12)
        old = await client_of(running, "old", "0.7.0")
        await old.subscribe(uri)
        state = (await old.subscribe(chat))["state"]
        assert texts(state["turns"]) == [f"q{i}" for i in range(12 - LIVE, 12)]
        await prompt(writer, chat, "one more")
        await old.wait_for(lambda: len(old.states[chat]["turns"]) == LIVE + 1)
        assert texts(old.states[chat]["turns"])[-1] == "one more"


async def test_after_a_restart_a_client_pages_back_through_every_turn(settings: Settings) -> None:
    async with bridge(settings) as running:
        writer = await client_of(running, "writer")
        uri, chat = await long_chat(writer, TURNS)
    everything = [f"q{i}" for i in range(TURNS)]
    database = settings.data_dir() / DB_NAME
    with sqlite3.connect(database) as conn:
        rows = conn.execute("SELECT idx FROM turns WHERE chat_uri = ? ORDER BY idx", (chat,))
        assert [r[0] for r in rows] == list(range(TURNS - LIVE))

    async with bridge(settings) as running:
        reader = await client_of(running, "reader")
        snap = await reader.subscribe(chat, view={"turns": 2})
        assert texts(snap["state"]["turns"]) == everything[-2:]
        assert await page_back(reader, chat, snap["state"]["turnsNextCursor"]) == everything[:-2]
        assert texts(reader.states[chat]["turns"]) == everything
        session = (await reader.subscribe(uri))["state"]
        assert session["defaultChat"] == chat


def held(module: str, name: str) -> int:
    """How many objects of class `name` from `module` are alive in this (the bridge's)
    process, after a collection: what a long chat leaves behind, not what a turn passes."""
    gc.collect()
    return sum(
        1
        for obj in gc.get_objects()
        if type(obj).__name__ == name and type(obj).__module__ == module
    )


async def test_a_long_chat_keeps_records_per_live_turn_not_per_turn_it_ran(
    settings: Settings,
) -> None:
    """Neither the host (the changesets room's record of each turn) nor the fake provider
    (its transcript, on disk in the data directory) keeps something per turn once the turn left
    the live state: 40 more turns leave the count of kept turn records and items unchanged."""
    counted = [
        ("ahp_bridge.host.features.changesets", "_Turn"),
        ("ahp_bridge.agentapi.items", "Item"),
    ]
    async with bridge(settings) as running:
        writer = await client_of(running, "writer")
        _, chat = await long_chat(writer, 2 * LIVE)
        before = [held(*kind) for kind in counted]
        for i in range(40):
            await prompt(writer, chat, f"more {i}")
        after = [held(*kind) for kind in counted]
        assert after[0] <= before[0] and after[0] <= LIVE + 1, (before, after)
        assert after[1] <= before[1] + 2, (before, after)  # 80 more items were written
        assert len(writer.states[chat]["turns"]) == 2 * LIVE + 40  # the client has them all
