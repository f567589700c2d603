"""Limits and host features whose bugs only show under load or with more than one of a thing.

Over real WebSockets against an in-process bridge: creations counted against
`limits.max_sessions` while earlier ones are still in flight (two clients at once), the working
directories of a `createSession` counted and sized (at each limit, one over), mention results
bounded across several working directories, and the client-tool calls of two subagents that use
the same call id at once.
"""

from __future__ import annotations

import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_fake import FakeProvider

from ahp_bridge.agentapi import ConfigurationCatalog
from ahp_bridge.config import LimitSettings, Settings
from ahp_bridge.host.catalog import Catalog
from tests.e2e.conftest import Bridge, StartBridge
from tests.e2e.test_host_core import new_session_uri
from tests.support.ahp_client import AhpClient, RpcFailure

ROOT = "ahp-root://"
V1 = ("1.0.0", "0.9.0")


def write_script(tmp_path: Path, text: str) -> str:
    path = tmp_path / f"script-{uuid.uuid4().hex[:8]}.toml"
    path.write_text(text)
    return str(path)


async def limited(
    start_bridge: StartBridge, settings: Settings, script: str | None = None, **limits: Any
) -> Bridge:
    settings.limits = LimitSettings(**limits)
    if script is not None:
        settings.providers = {"fake": {"script": script, "time_scale": 0.0}}
    return await start_bridge(settings)


async def listed(client: AhpClient) -> list[str]:
    return [
        s["resource"] for s in (await client.request("listSessions", {"channel": ROOT}))["items"]
    ]


# -- 1. max_sessions counts creations still in flight ------------------------------------------


async def test_a_creation_still_being_recorded_counts_against_max_sessions(
    start_bridge: StartBridge, make_settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first creation's durable write is held; the second client's creation arrives while it
    is in flight and is refused; releasing the write lets the first one finish."""
    entered, release = threading.Event(), threading.Event()
    real = Catalog.add_session
    calls = 0

    def held_add(catalog: Catalog, record: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:  # only the first write waits: a second one would show at once
            entered.set()
            release.wait(30)
        real(catalog, record)

    monkeypatch.setattr(Catalog, "add_session", held_add)
    bridge = await limited(start_bridge, make_settings(), max_sessions=1)
    first = await bridge.client("first", versions=V1)
    second = await bridge.client("second", versions=V1)
    uri = new_session_uri()
    answered = trio.Event()

    async def create_first() -> None:
        await first.request("createSession", {"channel": uri, "provider": "fake"})
        answered.set()

    bridge.nursery.start_soon(create_first)
    await trio.to_thread.run_sync(entered.wait, 10)
    try:
        with pytest.raises(RpcFailure) as err:
            await second.request(
                "createSession", {"channel": new_session_uri(), "provider": "fake"}
            )
        assert not answered.is_set()  # it was refused while the first was still in flight
    finally:
        release.set()
    assert err.value.code == -32009
    assert "limits.max_sessions)" in str(err.value.message)
    assert "already keeps 1 sessions" in str(err.value.message)
    await answered.wait()
    assert await listed(second) == [uri]
    assert calls == 1  # the refused creation recorded nothing


AGENTS_SCRIPT = """
display_name = "Fake agent (custom agents)"

[[agents]]
id = "reviewer"
name = "Reviewer"

[[prompts]]
[[prompts.steps]]
kind = "text"
text = "ok"
"""


async def test_a_creation_still_asking_the_provider_counts_against_max_sessions(
    start_bridge: StartBridge,
    make_settings: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A provider with custom agents is asked for them while the session's settings are
    resolved, before anything is recorded: a creation waiting there is in flight too."""
    entered, release = trio.Event(), trio.Event()
    real = FakeProvider.discover_agents
    calls = 0

    async def slow_agents(provider: FakeProvider, paths: list[str]) -> ConfigurationCatalog:
        nonlocal calls
        calls += 1
        if calls == 1:
            entered.set()
            await release.wait()
        return await real(provider, paths)

    monkeypatch.setattr(FakeProvider, "discover_agents", slow_agents)
    script = write_script(tmp_path, AGENTS_SCRIPT)
    bridge = await limited(start_bridge, make_settings(), script, max_sessions=1)
    first = await bridge.client("first", versions=V1)
    second = await bridge.client("second", versions=V1)
    uri = new_session_uri()
    answered = trio.Event()

    async def create_first() -> None:
        await first.request("createSession", {"channel": uri, "provider": "fake"})
        answered.set()

    bridge.nursery.start_soon(create_first)
    await entered.wait()
    with pytest.raises(RpcFailure) as err:
        await second.request("createSession", {"channel": new_session_uri(), "provider": "fake"})
    assert err.value.code == -32009
    assert "limits.max_sessions)" in str(err.value.message)
    release.set()
    await answered.wait()
    assert await listed(second) == [uri]


async def test_a_creation_refused_after_it_was_counted_frees_its_place(
    start_bridge: StartBridge,
    make_settings: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A creation refused after it was counted (a setting that does not fit) frees its place."""
    script = write_script(tmp_path, AGENTS_SCRIPT)
    bridge = await limited(start_bridge, make_settings(), script, max_sessions=1)
    client = await bridge.client("c", versions=V1)
    with pytest.raises(RpcFailure) as err:
        await client.request(
            "createSession",
            {"channel": new_session_uri(), "provider": "fake", "config": {"agent": "nobody"}},
        )
    assert err.value.code == -32602
    uri = new_session_uri()
    await client.request("createSession", {"channel": uri, "provider": "fake"})
    assert await listed(client) == [uri]
