"""The byte ledger over real WebSockets (limits.max_client_bytes, set small here): a client at
its budget is refused, naming the key, and loses nothing it had; another client is unaffected;
disposing of its sessions gives the client its budget back."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from ahp_bridge.state.limits import KIB, size_of
from tests.e2e.conftest import StartBridge
from tests.e2e.test_host_core import new_session_uri, ready_session
from tests.e2e.test_limits import V1, draft_of_size, echo, limited
from tests.support.ahp_client import RpcFailure

#: A session's charge: its default chat's turn history (limits.max_live_turn_bytes) and the
#: createSession params (under 1 KiB), so 8 KiB are left for the client's texts.
BUDGET = 256 * KIB + 1 * KIB + 8 * KIB

REFUSED = re.compile(
    r"^annotations/set needs 6,144 bytes and client 'greedy' already has the host keep "
    r"[\d,]+ of the 271,360 one client may \(limits\.max_client_bytes\): remove drafts, queued "
    r"messages, chats or sessions you no longer need$"
)


def annotation(session: str, size: int) -> dict[str, Any]:
    def make(pad: str) -> dict[str, Any]:
        return {
            "type": "annotations/set",
            "annotation": {
                "id": "a1",
                "origin": {"session": session},
                "resource": "file:///x",
                "resolved": False,
                "entries": [{"id": "e1", "text": pad}],
            },
        }

    action = make("x" * (size - size_of(make(""))))
    assert size_of(action) == size
    return action


async def test_a_client_at_max_client_bytes_is_refused_and_loses_nothing(
    start_bridge: StartBridge, make_settings: Any
) -> None:
    bridge = await limited(start_bridge, make_settings, max_client_bytes=BUDGET)
    greedy = await bridge.client("greedy", versions=V1)
    session, chat = await ready_session(greedy)
    notes = session + "/annotations"
    await greedy.subscribe(notes)
    kept = draft_of_size(4 * KIB)
    for _ in range(3):  # a draft replaces the last: three fit where two would not
        assert "rejectionReason" not in await echo(greedy, chat, kept)

    over = await echo(greedy, notes, annotation(session, 6 * KIB))
    assert REFUSED.match(over["rejectionReason"]), over["rejectionReason"]
    with pytest.raises(RpcFailure, match=r"limits\.max_client_bytes") as err:
        await greedy.request(
            "createChat", {"channel": session, "chat": f"ahp-chat:/{uuid.uuid4()}"}
        )
    assert err.value.code == -32009
    with pytest.raises(RpcFailure, match=r"limits\.max_client_bytes") as err:
        await greedy.request("createSession", {"channel": new_session_uri(), "provider": "fake"})
    assert err.value.code == -32009

    # Nothing it had is lost: a fresh snapshot holds the draft, and no annotation was added.
    fresh = await greedy.request("subscribe", {"channel": chat})
    assert fresh["snapshot"]["state"]["draft"] == kept["draft"]
    fresh = await greedy.request("subscribe", {"channel": notes})
    assert fresh["snapshot"]["state"]["annotations"] == []

    # Another client id has a budget of its own.
    modest = await bridge.client("modest", versions=V1)
    other_session, other_chat = await ready_session(modest)
    assert "rejectionReason" not in await echo(modest, other_chat, draft_of_size(4 * KIB))
    other_notes = other_session + "/annotations"
    await modest.subscribe(other_notes)
    assert "rejectionReason" not in await echo(
        modest, other_notes, annotation(other_session, 2 * KIB)
    )

    # Disposing of its session gives the greedy client its budget back.
    await greedy.request("disposeSession", {"channel": session})
    again, again_chat = await ready_session(greedy)
    assert "rejectionReason" not in await echo(greedy, again_chat, kept)
    await greedy.subscribe(again + "/annotations")
    assert "rejectionReason" not in await echo(
        greedy, again + "/annotations", annotation(again, 2 * KIB)
    )
