"""Signing an agent in from a client: protectedResources, -32007, `authenticate` -> sign_in.

The fake provider with `sign_in_token` is a runtime that starts signed out and implements
agentapi.AccountManager (it accepts exactly that token), so the host's whole path runs for
real: discovery in root state, AuthRequired on createSession, the token reaching sign_in, the
agent announced again with its models, and a turn that runs afterwards.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import StartBridge
from tests.e2e.test_host_core import new_session_uri, ready_session
from tests.support.ahp_client import RpcFailure

ROOT = "ahp-root://"
GITHUB = "https://api.github.com"
TOKEN = "gho_fake-sign-in-token"

RESOURCE = {
    "resource": GITHUB,
    "resource_name": "Fake agent",
    "authorization_servers": ["https://github.com/login/oauth"],
    "scopes_supported": ["read:user", "user:email"],
    "required": True,
}
HINT = (
    "the fake runtime is signed out: sign in from your client with the token configured as "
    "sign_in_token"
)


@pytest.fixture
async def signed_out(start_bridge: StartBridge, make_settings: Any) -> Any:
    settings = make_settings()
    settings.providers = {"fake": {"time_scale": 0.0, "sign_in_token": TOKEN}}
    settings.bridge.data_dir = settings.data_dir().with_name("signed-out")
    return await start_bridge(settings)


async def test_a_signed_out_agent_shows_it_and_refuses_sessions(signed_out: Any) -> None:
    client = await signed_out.client()
    [agent] = client.states[ROOT]["agents"]
    resource = dict(RESOURCE, resource_name=agent["displayName"])
    assert agent["protectedResources"] == [resource]
    assert agent["models"] == []  # none until signed in
    with pytest.raises(RpcFailure) as err:
        await client.request("createSession", {"channel": new_session_uri(), "provider": "fake"})
    assert err.value.code == -32007
    assert err.value.message == f"Authentication required for {agent['displayName']}: {HINT}"
    assert err.value.data == {"resources": [resource]}


async def test_authenticate_signs_the_runtime_in_and_the_agent_is_announced_again(
    signed_out: Any,
) -> None:
    client = await signed_out.client()
    watcher = await signed_out.client("watcher")
    assert (
        await client.request(
            "authenticate", {"channel": ROOT, "resource": GITHUB, "token": f" {TOKEN} "}
        )
        == {}
    )
    changed = [a for a in watcher.actions(ROOT) if a["type"] == "root/agentsChanged"]
    assert len(changed) == 1  # everyone hears of it, through the replayable root channel
    [agent] = changed[0]["agents"]
    assert "protectedResources" not in agent
    assert [m["id"] for m in agent["models"]] == ["fake-fast", "fake-deep"]
    assert watcher.states[ROOT]["agents"] == [agent]
    # The agent works now: a session and a turn.
    _, chat = await ready_session(client)
    await client.subscribe(chat)
    await client.dispatch(
        chat,
        {
            "type": "chat/turnStarted",
            "turnId": "t1",
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"text": "show me", "origin": {"kind": "user"}},
        },
    )
    # The demo's turn streams its reasoning (and later asks a permission): it runs.
    await client.wait_for(lambda: "chat/reasoning" in client.action_types(chat), 30)
    assert "chat/error" not in client.action_types(chat)
    # Pushing a token again changes nothing (the runtime is signed in already).
    assert (
        await client.request(
            "authenticate", {"channel": ROOT, "resource": GITHUB, "token": "whatever"}
        )
        == {}
    )
    assert [a["type"] for a in watcher.actions(ROOT)].count("root/agentsChanged") == 1


async def test_a_bad_token_is_a_clear_error_and_nothing_changes(signed_out: Any) -> None:
    client = await signed_out.client()
    with pytest.raises(RpcFailure) as err:
        await client.request("authenticate", {"channel": ROOT, "resource": GITHUB, "token": "no"})
    agent = client.states[ROOT]["agents"][0]
    assert err.value.code == -32007
    assert err.value.message == (
        f"{agent['displayName']} did not sign in with that token: the fake runtime does not "
        "accept that token"
    )
    assert err.value.data == {"resources": agent["protectedResources"]}
    assert "root/agentsChanged" not in client.action_types(ROOT)
    with pytest.raises(RpcFailure) as blank:
        await client.request("authenticate", {"channel": ROOT, "resource": GITHUB, "token": " "})
    assert (blank.value.code, blank.value.message) == (-32602, "Invalid params: token: empty")


async def test_an_unknown_resource_is_invalid_params(signed_out: Any, bridge: Any) -> None:
    for started in (signed_out, bridge):
        client = await started.client(f"c{started.port}")
        with pytest.raises(RpcFailure) as err:
            await client.request(
                "authenticate", {"channel": ROOT, "resource": "https://x.example", "token": "t"}
            )
        assert (err.value.code, err.value.message) == (
            -32602,
            "Invalid params: resource: 'https://x.example' is not protected by this host",
        )


async def test_an_agent_that_needs_no_sign_in_advertises_nothing(bridge: Any) -> None:
    client = await bridge.client()
    [agent] = client.states[ROOT]["agents"]
    assert "protectedResources" not in agent
    # It has no AccountManager either: a GitHub token is not for any of its agents.
    with pytest.raises(RpcFailure) as err:
        await client.request("authenticate", {"channel": ROOT, "resource": GITHUB, "token": "t"})
    assert err.value.code == -32602
