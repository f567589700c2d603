"""The limits on what clients make the host keep, over real WebSockets: at each limit, one over.

Every refusal names its config key; nothing already kept is lost (a second client's state and a
fresh snapshot still hold what was there). Small limits are configured so the tests stay fast;
the rules are the ones the defaults run (tests/unit/test_limits.py has them as tables). At the
end, the regressions the property-based suite (test_fuzz.py) found, as plain examples.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import trio
from ahp_bridge_fake import CONFORMANCE_SCRIPT
from ahp_bridge_fake.conversation import FakeConversation

from ahp_bridge.config import LimitSettings, Settings
from ahp_bridge.state.limits import size_of
from tests.e2e.conftest import Bridge, StartBridge
from tests.e2e.test_host_core import comparable, new_session_uri, ready_session
from tests.support.ahp_client import AhpClient, RpcFailure

ROOT = "ahp-root://"
V1 = ("1.0.0", "0.9.0")


def user(text: str) -> dict[str, Any]:
    return {"text": text, "origin": {"kind": "user"}}


def draft(text: str) -> dict[str, Any]:
    return {"type": "chat/draftChanged", "draft": user(text)}


def draft_of_size(size: int) -> dict[str, Any]:
    action = draft("x" * (size - size_of(draft(""))))
    assert size_of(action) == size
    return action


async def limited(start_bridge: StartBridge, make_settings: Any, **limits: Any) -> Bridge:
    settings: Settings = make_settings()
    settings.limits = LimitSettings(**limits)
    settings.providers = {"fake": {"script": str(CONFORMANCE_SCRIPT), "time_scale": 0.0}}
    return await start_bridge(settings)  # type: ignore[no-any-return]


async def echo(client: AhpClient, channel: str, action: dict[str, Any]) -> dict[str, Any]:
    return await client.echo_of(await client.dispatch(channel, action))


@pytest.mark.parametrize("versions", [("0.7.0",), V1], ids=["0.7", "1.0"])
async def test_an_action_over_max_action_bytes_is_refused_and_loses_nothing(
    start_bridge: StartBridge, make_settings: Any, versions: tuple[str, ...]
) -> None:
    bridge = await limited(start_bridge, make_settings, max_action_bytes=4096)
    client = await bridge.client("writer", versions=versions)
    _, chat = await ready_session(client)
    other = await bridge.client("reader", versions=V1)
    await other.subscribe(chat)
    at_limit = draft_of_size(4096)
    assert "rejectionReason" not in await echo(client, chat, at_limit)
    over = await echo(client, chat, draft_of_size(4097))
    assert "limits.max_action_bytes" in over["rejectionReason"]
    assert "4,097 bytes" in over["rejectionReason"]
    await other.request("ping", {"channel": ROOT})
    fresh = await other.request("subscribe", {"channel": chat})
    assert fresh["snapshot"]["state"]["draft"] == at_limit["draft"]
    assert comparable(other.states[chat]) == comparable(fresh["snapshot"]["state"])


async def test_a_title_over_max_title_bytes_is_refused(
    start_bridge: StartBridge, make_settings: Any
) -> None:
    bridge = await limited(start_bridge, make_settings, max_title_bytes=32)
    client = await bridge.client("c", versions=V1)
    session, _ = await ready_session(client)
    ok = await echo(client, session, {"type": "session/titleChanged", "title": "ü" * 16})
    assert "rejectionReason" not in ok
    await client.wait_for(lambda: client.states[session]["title"] == "ü" * 16)
    over = await echo(client, session, {"type": "session/titleChanged", "title": "ü" * 16 + "!"})
    assert "limits.max_title_bytes" in over["rejectionReason"]
    snapshot = await client.request("subscribe", {"channel": session})
    assert snapshot["snapshot"]["state"]["title"] == "ü" * 16


async def test_queued_messages_stop_at_max_queued_messages(
    start_bridge: StartBridge, make_settings: Any
) -> None:
    bridge = await limited(start_bridge, make_settings, max_queued_messages=2)
    client = await bridge.client("c", versions=V1)
    session, chat = await ready_session(client)
    turn = {
        "type": "chat/turnStarted",
        "turnId": str(uuid.uuid4()),
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": user("conformance: permission"),
    }
    assert "rejectionReason" not in await echo(client, chat, turn)
    await client.wait_for(lambda: client.states[session].get("inputNeeded"))  # the turn waits

    def queued(i: int) -> dict[str, Any]:
        return {
            "type": "chat/pendingMessageSet",
            "kind": "queued",
            "id": f"q{i}",
            "message": user(f"m{i}"),
        }

    for i in (1, 2):
        assert "rejectionReason" not in await echo(client, chat, queued(i))
    third = await echo(client, chat, queued(3))
    assert "limits.max_queued_messages" in third["rejectionReason"]
    replaced = await echo(client, chat, {**queued(2), "message": user("m2 changed")})
    assert "rejectionReason" not in replaced
    state = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    assert [(m["id"], m["message"]["text"]) for m in state["queuedMessages"]] == [
        ("q1", "m1"),
        ("q2", "m2 changed"),
    ]


async def test_sessions_stop_at_the_per_client_and_the_host_limit(
    start_bridge: StartBridge, make_settings: Any
) -> None:
    bridge = await limited(start_bridge, make_settings, max_sessions=3, max_sessions_per_client=2)
    first = await bridge.client("first", versions=V1)
    for _ in range(2):
        await first.request("createSession", {"channel": new_session_uri()})
    with pytest.raises(RpcFailure) as err:
        await first.request("createSession", {"channel": new_session_uri()})
    assert err.value.code == -32009
    assert "limits.max_sessions_per_client" in str(err.value.message)
    second = await bridge.client("second")  # 0.7: the same answer in its version
    await second.request("createSession", {"channel": new_session_uri()})  # the host's 3rd
    with pytest.raises(RpcFailure) as err:
        await second.request("createSession", {"channel": new_session_uri()})
    assert err.value.code == -32009
    assert "limits.max_sessions" in str(err.value.message)
    listed = await second.request("listSessions", {"channel": ROOT})
    assert len(listed["items"]) == 3  # nothing refused was kept, nothing kept was lost
    # disposing of one makes room again
    await first.request("disposeSession", {"channel": listed["items"][0]["resource"]})
    await second.request("createSession", {"channel": new_session_uri()})


async def test_chats_stop_at_max_chats_per_session(
    start_bridge: StartBridge, make_settings: Any
) -> None:
    bridge = await limited(start_bridge, make_settings, max_chats_per_session=2)
    client = await bridge.client("c", versions=V1)
    session, _ = await ready_session(client)
    chat = f"ahp-chat:/{uuid.uuid4()}"
    await client.request("createChat", {"channel": session, "chat": chat})  # the 2nd of 2
    with pytest.raises(RpcFailure) as err:
        await client.request(
            "createChat", {"channel": session, "chat": f"ahp-chat:/{uuid.uuid4()}"}
        )
    assert err.value.code == -32009
    assert "limits.max_chats_per_session" in str(err.value.message)
    await client.wait_for(lambda: len(client.states[session]["chats"]) == 2)


async def test_a_creation_request_carrying_too_much_text_is_invalid_params(
    start_bridge: StartBridge, make_settings: Any
) -> None:
    bridge = await limited(start_bridge, make_settings, max_action_bytes=2048)
    client = await bridge.client("c", versions=V1)
    session, _ = await ready_session(client)
    with pytest.raises(RpcFailure) as err:
        await client.request(
            "createChat",
            {
                "channel": session,
                "chat": f"ahp-chat:/{uuid.uuid4()}",
                "initialMessage": user("x" * 3000),
            },
        )
    assert err.value.code == -32602
    assert "initialMessage" in str(err.value.message)
    assert "limits.max_action_bytes" in str(err.value.message)
    assert len(client.states[session]["chats"]) == 1


async def test_a_reconnect_past_the_replay_logs_byte_budget_gets_snapshots(
    start_bridge: StartBridge, make_settings: Any
) -> None:
    settings: Settings = make_settings(replay_log_bytes=64 * 1024)
    bridge = await start_bridge(settings)
    client = await bridge.client("c", versions=V1)
    _, chat = await ready_session(client)
    start = client.last_seq
    for i in range(3):  # 3 x ~30 KiB: the log keeps the last two
        assert "rejectionReason" not in await echo(client, chat, draft(str(i) * 30_000))
    late = await bridge.client("late", initialize=False, versions=V1)
    result = await late.request(
        "reconnect", {"clientId": "c", "lastSeenServerSeq": start, "subscriptions": [chat]}
    )
    assert result["type"] == "snapshot"
    assert result["snapshots"][0]["state"]["draft"]["text"] == "2" * 30_000
    again = await bridge.client("again", initialize=False, versions=V1)
    recent = await again.request(
        "reconnect",
        {"clientId": "c", "lastSeenServerSeq": client.last_seq - 1, "subscriptions": [chat]},
    )
    assert recent["type"] == "replay"
    assert [a["action"]["draft"]["text"][:1] for a in recent["actions"]] == ["2"]


async def test_an_action_whose_type_is_not_a_string_is_refused_with_a_reason(
    bridge: Bridge,
) -> None:
    # Found by tests/e2e/test_fuzz.py: `"type": []` used to fail inside the host, unanswered.
    client = await bridge.client("c", versions=V1)
    session, _ = await ready_session(client)
    for bad in ([], {}, 7, None):
        refused = await echo(client, session, {"type": bad, "directory": "file:///x"})
        assert refused["rejectionReason"] == "action.type: expected a string"


async def test_fields_an_action_type_does_not_define_reach_no_one(bridge: Bridge) -> None:
    # Found by tests/e2e/test_fuzz.py: made-up keys were applied and relayed to every peer.
    client = await bridge.client("c", versions=V1)
    _, chat = await ready_session(client)
    other = await bridge.client("other")  # 0.7, strict: it fails on any field 0.7 lacks
    await other.subscribe(chat)
    sent = {**draft("hello"), "madeUp": [1], "draft": {**draft("hello")["draft"], "x": {}}}
    accepted = await echo(client, chat, sent)
    assert "rejectionReason" not in accepted
    assert accepted["action"] == draft("hello")
    await other.wait_for(lambda: (other.states[chat].get("draft") or {}).get("text") == "hello")


async def test_actions_past_max_pending_calls_are_refused_and_the_queue_drains(
    start_bridge: StartBridge, make_settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A provider stuck on one call: two more wait (the limit), the next is refused naming the
    key, and once the provider answers, what waited reaches it in order."""
    entered, release = trio.Event(), trio.Event()
    titles: list[str] = []
    real_set_title = FakeConversation.set_title

    async def stuck_set_title(self: FakeConversation, title: str) -> None:
        entered.set()
        await release.wait()
        titles.append(title)
        await real_set_title(self, title)

    monkeypatch.setattr(FakeConversation, "set_title", stuck_set_title)
    bridge = await limited(start_bridge, make_settings, max_pending_calls=2)
    client = await bridge.client("c", versions=V1)
    session, _ = await ready_session(client)

    def title(text: str) -> dict[str, Any]:
        return {"type": "session/titleChanged", "title": text}

    assert "rejectionReason" not in await echo(client, session, title("one"))
    await entered.wait()  # the worker holds "one"; the queue is empty
    for text in ("two", "three"):
        assert "rejectionReason" not in await echo(client, session, title(text))
    over = await echo(client, session, title("four"))
    assert over["rejectionReason"] == (
        "2 operations already wait for this chat's provider, the most it holds "
        "(limits.max_pending_calls): try again when they are done"
    )
    assert client.states[session]["title"] == "three"  # the refused one changed nothing
    release.set()
    with trio.fail_after(10):
        while len(titles) < 3:
            await trio.sleep(0.01)
    assert titles == ["one", "two", "three"]
    assert "rejectionReason" not in await echo(client, session, title("five"))
