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
from ahp_bridge_fake.conversation import FakeConversation

from ahp_bridge import agentapi, providers
from ahp_bridge.agentapi import ConfigurationCatalog, OpenRequest
from ahp_bridge.config import LimitSettings, Settings
from ahp_bridge.host.durable.catalog import Catalog
from ahp_bridge.state.limits import size_of
from tests.e2e.conftest import Bridge, StartBridge
from tests.e2e.test_client_tools import USAGES, ToolSession
from tests.e2e.test_host_core import new_session_uri
from tests.support.ahp_client import AhpClient, RpcFailure, ready_chat

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


# -- 2. createSession's working directories: how many, how large -------------------------------


def directories(base: Path, count: int) -> list[str]:
    out = []
    for i in range(count):
        path = base / f"dir{i}"
        path.mkdir(parents=True, exist_ok=True)
        out.append(path.as_uri())
    return out


def directory_of_size(base: Path, target: int) -> list[str]:
    """One existing directory whose `workingDirectories` list is `target` bytes of JSON."""
    remaining = target - size_of([base.as_uri() + "/"])
    parts: list[str] = []
    while remaining > 0:
        take = min(200, remaining)
        if remaining - take == 1:  # a last part needs its "/" and one character
            take -= 1
        parts.append("d" * take)
        remaining -= take + 1
    path = base.joinpath(*parts)
    path.mkdir(parents=True)
    dirs = [path.as_uri()]
    assert size_of(dirs) == target
    return dirs


async def create_on(client: AhpClient, dirs: list[str]) -> str:
    uri = new_session_uri()
    await client.request(
        "createSession", {"channel": uri, "provider": "fake", "workingDirectories": dirs}
    )
    return uri


async def test_create_session_takes_max_working_directories_and_not_one_more(
    start_bridge: StartBridge, make_settings: Any, tmp_path: Path
) -> None:
    bridge = await limited(start_bridge, make_settings(), max_working_directories=2)
    client = await bridge.client("c", versions=V1)
    at_limit = directories(tmp_path / "two", 2)
    session, _ = await ready_chat(client, "fake", 10, await create_on(client, at_limit))
    assert client.states[session]["workingDirectories"] == at_limit
    with pytest.raises(RpcFailure) as err:
        await create_on(client, directories(tmp_path / "three", 3))
    assert err.value.code == -32602
    assert str(err.value.message) == (
        "Invalid params: workingDirectories: 3 directories; a session has at most 2 "
        "(limits.max_working_directories)"
    )
    assert await listed(client) == [session]


async def test_create_session_working_directories_may_be_max_action_bytes_and_not_one_more(
    start_bridge: StartBridge, make_settings: Any, tmp_path: Path
) -> None:
    bridge = await limited(start_bridge, make_settings(), max_action_bytes=1024)
    client = await bridge.client("c", versions=V1)
    at_limit = directory_of_size(tmp_path / "at", 1024)
    session, _ = await ready_chat(client, "fake", 10, await create_on(client, at_limit))
    assert client.states[session]["workingDirectories"] == at_limit
    with pytest.raises(RpcFailure) as err:
        await create_on(client, directory_of_size(tmp_path / "over", 1025))
    assert err.value.code == -32602
    assert str(err.value.message) == (
        "Invalid params: workingDirectories: 1,025 bytes; the host keeps at most 1,024 "
        "(limits.max_action_bytes): send less"
    )
    assert await listed(client) == [session]


# -- 3. mention results across several working directories -------------------------------------


async def complete(client: AhpClient, chat: str, text: str) -> list[str]:
    units = len(text.encode("utf-16-le")) // 2
    params = {"channel": chat, "kind": "userMessage", "text": text, "offset": units}
    return [i["insertText"] for i in (await client.request("completions", params))["items"]]


async def test_mention_results_bound_the_total_across_working_directories(
    start_bridge: StartBridge, make_settings: Any, tmp_path: Path
) -> None:
    """Two directories take turns; `workspace.mention_results` bounds what they give together,
    and a directory with fewer matches leaves its turns to the other."""
    few, many = tmp_path / "few", tmp_path / "many"
    for root, count in ((few, 2), (many, 10)):
        root.mkdir()
        for i in range(count):
            (root / f"{root.name}{i}.txt").write_text("")
    settings: Settings = make_settings()
    settings.workspace.mention_results = 7
    bridge = await start_bridge(settings)
    client = await bridge.client("c", versions=V1)
    uri = await create_on(client, [few.as_uri(), many.as_uri()])
    _, chat = await ready_chat(client, "fake", 10, uri)
    assert await complete(client, chat, "@.txt") == [
        "@few0.txt ",
        "@many0.txt ",
        "@few1.txt ",
        "@many1.txt ",
        "@many2.txt ",
        "@many3.txt ",
        "@many4.txt ",
    ]
    only_one_matches = await complete(client, chat, "@many")
    assert only_one_matches == [f"@many{i}.txt " for i in range(7)]


# -- 4. two subagents' client-tool calls with the same call id ---------------------------------


HOLD_SCRIPT = """
display_name = "Fake agent (a turn that waits)"

[[prompts]]
text = "hold"
[[prompts.steps]]
kind = "permission"
title = "Go on"
tool = { name = "shell", input = "true", output = "", exit_code = 0 }
[[prompts.steps.on.default]]
kind = "text"
text = "done"
"""


async def test_two_subagents_calling_with_the_same_call_id_each_get_their_own_result(
    start_bridge: StartBridge,
    make_settings: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The fake runs subagents one after another, so the two concurrent calls are made the way a
    runtime makes them: through the conversation's `OpenRequest.call_tool`, during a turn (held
    open by a permission request), from two subagents at once, both with call id `c1`."""
    opened: list[OpenRequest] = []

    class Capturing(FakeProvider):
        async def open(self, req: OpenRequest) -> FakeConversation:
            opened.append(req)
            return await super().open(req)

    real = providers.create

    def create(name: str, options: Any = None) -> Any:
        fake = real(name, options)
        assert isinstance(fake, FakeProvider)
        return Capturing(fake.script, time_scale=0.0)

    monkeypatch.setattr(providers, "create", create)
    settings: Settings = make_settings()
    settings.providers = {
        "fake": {"script": write_script(tmp_path, HOLD_SCRIPT), "time_scale": 0.0}
    }
    bridge = await start_bridge(settings)
    owner = await bridge.client("editor", versions=V1)
    flow = ToolSession(owner)
    await flow.open([USAGES])
    call_tool = opened[-1].call_tool
    assert call_tool is not None
    turn_id = await flow.start("hold")
    await owner.wait_for(lambda: owner.states[flow.session].get("inputNeeded"))

    results: dict[str, agentapi.HostToolResult] = {}
    both = trio.Event()

    def usages(agent: str) -> agentapi.HostToolCall:
        arguments = b'{"symbol": "main", "lineContent": "def main():"}'
        return agentapi.HostToolCall(
            name="usages", call_id="c1", agent_id=agent, arguments=arguments
        )

    async def call(agent: str) -> None:
        results[agent] = await call_tool(usages(agent))
        if len(results) == 2:
            both.set()

    async def answer(agent: str) -> None:
        result = {
            "success": True,
            "pastTenseMessage": f"Answered {agent}",
            "content": [{"type": "text", "text": f"answer for {agent}"}],
        }
        echo = await flow.complete(owner, turn_id, f"{agent}/c1", result)
        assert "rejectionReason" not in echo

    def executions() -> dict[str, dict[str, Any]]:
        requests = owner.states[flow.session].get("inputNeeded") or []
        return {
            r["toolCall"]["toolCallId"]: r for r in requests if r["kind"] == "toolClientExecution"
        }

    async with trio.open_nursery() as nursery:
        nursery.start_soon(call, "sa-1")
        nursery.start_soon(call, "sa-2")
        waiting = await owner.wait_for(lambda: len(executions()) == 2 and executions())
        assert set(waiting) == {"sa-1/c1", "sa-2/c1"}
        for agent in ("sa-2", "sa-1"):  # answered in the other order than asked
            await answer(agent)
        with trio.fail_after(10):  # a hang guard: both answers are in, neither may wait
            await both.wait()
    assert {a: (r.text, r.failed) for a, r in results.items()} == {
        "sa-1": ("answer for sa-1", False),
        "sa-2": ("answer for sa-2", False),
    }
    await owner.wait_for(lambda: not executions())
    # Remembered per subagent too: sa-1 repeating its call gets its own answer without asking
    # again, and a third subagent's `c1` is a call of its own.
    assert (await call_tool(usages("sa-1"))).text == "answer for sa-1"
    assert not executions()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(call, "sa-3")
        assert set(await owner.wait_for(executions)) == {"sa-3/c1"}
        await answer("sa-3")
    assert results["sa-3"].text == "answer for sa-3"
