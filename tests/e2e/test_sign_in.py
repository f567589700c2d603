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


# -- a sign-in lost while the bridge runs ------------------------------------------------------

EXPIRY_SCRIPT = """
[[prompts]]
text = "expire"
[[prompts.steps]]
kind = "text"
text = "working on it"
[[prompts.steps]]
kind = "sign_out"
message = "your GitHub token expired"

[[prompts]]
text = "break"
[[prompts.steps]]
kind = "error"
message = "model overloaded"

[[prompts]]
pattern = ".*"
[[prompts.steps]]
kind = "text"
text = "done"
"""
V10 = ("1.0.0", "0.9.0")


@pytest.fixture
async def expiring(start_bridge: StartBridge, make_settings: Any, tmp_path: Any) -> Any:
    """A fake runtime that starts signed out, with a script whose "expire" loses the sign-in."""
    script = tmp_path / "expiry.toml"
    script.write_text(EXPIRY_SCRIPT)
    settings = make_settings()
    settings.providers = {
        "fake": {"time_scale": 0.0, "sign_in_token": TOKEN, "script": str(script)}
    }
    settings.bridge.data_dir = settings.data_dir().with_name("expiring")
    return await start_bridge(settings)


def _agents_changed(client: Any) -> list[dict[str, Any]]:
    return [a for a in client.actions(ROOT) if a["type"] == "root/agentsChanged"]


def _auth_required(client: Any) -> list[dict[str, Any]]:
    return [n for n in client.notifications if n.get("method") == "auth/required"]


async def _turn(client: Any, chat: str, turn_id: str, text: str) -> dict[str, Any]:
    """Run one turn to its end; returns its last action (chat/turnComplete or chat/error)."""
    await client.dispatch(
        chat,
        {
            "type": "chat/turnStarted",
            "turnId": turn_id,
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"text": text, "origin": {"kind": "user"}},
        },
    )

    def ended() -> dict[str, Any] | None:
        for action in client.actions(chat):
            if action.get("turnId") == turn_id and action["type"] in (
                "chat/turnComplete",
                "chat/error",
            ):
                return action  # type: ignore[no-any-return]
        return None

    return await client.wait_for(ended, 30)  # type: ignore[no-any-return]


async def _signed_in(expiring: Any) -> tuple[Any, Any, str]:
    """A 1.0 and a 0.7 client, the runtime signed in by the first, and a ready chat."""
    c10 = await expiring.client("one", versions=V10)
    c07 = await expiring.client("seven")
    await c10.request("authenticate", {"channel": ROOT, "resource": GITHUB, "token": TOKEN})
    for client in (c10, c07):
        await client.wait_for(lambda c=client: len(_agents_changed(c)) == 1)
    _, chat = await ready_session(c10)
    return c10, c07, chat


async def test_a_sign_in_that_expires_mid_use_is_announced_and_a_new_sign_in_resumes(
    expiring: Any,
) -> None:
    c10, c07, chat = await _signed_in(expiring)
    c09 = await expiring.client("nine", versions=("0.9.0",))  # joined after the sign-in
    c08 = await expiring.client("eight", versions=("0.8.0",))
    c06 = await expiring.client("six", versions=("0.6.0",))
    seen = {c10: 1, c07: 1, c09: 0, c08: 0, c06: 0}  # agentsChanged each has heard so far
    end = await _turn(c10, chat, "t1", "expire")
    # The turn fails with the script's message: the runtime says why it stopped.
    assert end["type"] == "chat/error"
    assert end["part"]["error"]["message"] == "your GitHub token expired"
    # Everyone hears it through root state: the agent needs a sign-in again.
    for client in (c10, c07, c09, c08, c06):
        await client.wait_for(lambda c=client: len(_agents_changed(c)) == seen[c] + 1)
        [agent] = _agents_changed(client)[-1]["agents"]
        assert agent["protectedResources"] == [dict(RESOURCE, resource_name=agent["displayName"])]
        assert client.states[ROOT]["agents"] == [agent]
    resource = c10.states[ROOT]["agents"][0]["protectedResources"][0]
    # 1.0 and 0.9 peers get exactly one auth/required, complete (their schema checks it).
    expected = {
        "jsonrpc": "2.0",
        "method": "auth/required",
        "params": {"channel": ROOT, "resource": resource, "reason": "expired"},
    }
    for client in (c10, c09, c08):  # 0.8.0 made `resource` the whole metadata
        await client.wait_for(lambda c=client: _auth_required(c))
        assert _auth_required(client) == [expected]
    # A 0.6 peer: its auth/required names the resource by its identifier (a string).
    await c06.wait_for(lambda: _auth_required(c06))
    params06 = {**expected["params"], "resource": resource["resource"]}
    assert _auth_required(c06) == [{**expected, "params": params06}]
    # A 0.7 peer: our 0.7.0 has no auth/required, so nothing but the agentsChanged above
    # (every frame it got validated against both 0.7.0 schemas, strictly).
    assert _auth_required(c07) == []
    # No new session until a sign-in: -32007 with the resource, saying what to do.
    with pytest.raises(RpcFailure) as err:
        await c07.request("createSession", {"channel": new_session_uri(), "provider": "fake"})
    assert err.value.code == -32007
    name = resource["resource_name"]
    assert err.value.message == f"Authentication required for {name}: {HINT}"
    assert err.value.data == {"resources": [resource]}
    # The open chat's next prompt fails for want of a sign-in, and is not announced again.
    end = await _turn(c10, chat, "t2", "hello")
    assert end["part"]["error"]["message"] == HINT
    await _turn(c10, chat, "t3", "hello again")
    assert len(_auth_required(c10)) == 1 and len(_agents_changed(c10)) == 2
    # A new sign-in clears it: announced without protectedResources, and turns run again.
    await c09.request("authenticate", {"channel": ROOT, "resource": GITHUB, "token": TOKEN})
    for client in (c10, c07, c09, c08, c06):
        await client.wait_for(lambda c=client: len(_agents_changed(c)) == seen[c] + 2)
        [agent] = _agents_changed(client)[-1]["agents"]
        assert "protectedResources" not in agent and agent["models"]
    end = await _turn(c10, chat, "t4", "hello")
    assert end["type"] == "chat/turnComplete"
    _, chat07 = await ready_session(c07)
    assert (await _turn(c07, chat07, "t5", "hi"))["type"] == "chat/turnComplete"
    # And it can expire again, announced again.
    await _turn(c10, chat, "t6", "expire")
    await c10.wait_for(lambda: len(_auth_required(c10)) == 2)
    assert _auth_required(c10)[-1] == expected
    assert _auth_required(c07) == []


async def test_a_turn_that_fails_for_another_reason_announces_nothing(expiring: Any) -> None:
    c10, c07, chat = await _signed_in(expiring)
    end = await _turn(c10, chat, "t1", "break")
    assert end["part"]["error"]["message"] == "model overloaded"
    # The runtime was asked and is still signed in: the next turn (a full round trip of its
    # own, after that check) runs, and nothing was announced.
    assert (await _turn(c10, chat, "t2", "hello"))["type"] == "chat/turnComplete"
    for client in (c10, c07):
        assert _auth_required(client) == []
        assert len(_agents_changed(client)) == 1
        assert "protectedResources" not in client.states[ROOT]["agents"][0]
    _, other = await ready_session(c07)  # sessions are still created
    assert other


async def test_sign_out_without_a_sign_in_token_fails_the_turn_saying_so(
    start_bridge: StartBridge, make_settings: Any, tmp_path: Any
) -> None:
    script = tmp_path / "expiry.toml"
    script.write_text(EXPIRY_SCRIPT)
    settings = make_settings()
    settings.providers = {"fake": {"time_scale": 0.0, "script": str(script)}}
    started = await start_bridge(settings)
    client = await started.client("one", versions=V10)
    _, chat = await ready_session(client)
    end = await _turn(client, chat, "t1", "expire")
    assert end["part"]["error"]["message"] == (
        "sign_out: this fake runtime has no sign-in to lose; configure the fake provider with "
        "sign_in_token"
    )
    assert (await _turn(client, chat, "t2", "hello"))["type"] == "chat/turnComplete"
    assert _auth_required(client) == [] and _agents_changed(client) == []
