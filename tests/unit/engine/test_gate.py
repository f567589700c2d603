"""The gate: what every frame becomes (an error for its sender, or a routed call), by rule."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from ahp_bridge.engine.effects import Flush, Serve
from ahp_bridge.engine.inputs import Answered
from ahp_bridge.protocol.errors import RpcError
from tests.support.engine import ROOT, Harness, config


def only_frame(h: Harness, peer: Any) -> dict[str, Any]:
    [frame] = h.frames(peer)
    return frame


def ping(request_id: int | str, **params: Any) -> str:
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "ping",
            "params": {"channel": ROOT, **params},
        }
    ).decode()


@pytest.mark.parametrize(
    ("text", "request_id", "code", "message"),
    [
        ("{not json", None, -32700, "Parse error: "),
        ('[{"jsonrpc":"2.0","id":1,"method":"ping"}]', None, -32600, "Invalid request: batches"),
        ('"just a string"', None, -32600, "Invalid request: expected a JSON object"),
        ('{"jsonrpc":"1.0","id":1,"method":"ping"}', 1, -32600, 'Invalid request: "jsonrpc"'),
        ('{"jsonrpc":"2.0","id":1}', 1, -32600, 'Invalid request: "method" is missing'),
        ('{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}', None, -32600, 'Invalid request: "id"'),
        ('{"jsonrpc":"2.0","id":1,"method":"ping","params":7}', 1, -32600, 'Invalid request: "par'),
    ],
    ids=["not-json", "batch", "scalar", "wrong-version", "no-method", "object-id", "scalar-params"],
)
def test_a_malformed_frame_gets_its_error_and_the_peer_is_served_on(
    text: str, request_id: int | None, code: int, message: str
) -> None:
    h = Harness()
    peer = h.connect()
    effects = h.send_raw(peer, text)
    assert effects == [Flush((peer,))]
    frame = only_frame(h, peer)
    assert frame["id"] == request_id
    assert frame["error"]["code"] == code
    assert frame["error"]["message"].startswith(message)
    assert h.result(peer, "ping") is None


def test_a_binary_frame_is_refused_with_a_null_id() -> None:
    h = Harness()
    peer = h.connect()
    h.send_raw(peer, None)
    assert only_frame(h, peer) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid request: binary frames are not accepted"},
    }
    assert not peer.closed


def test_json_deeper_than_max_json_depth_is_refused_naming_the_key_and_echoing_the_id() -> None:
    h = Harness(config=config(max_json_depth=8))
    peer = h.connect()

    def nested(levels: int) -> dict[str, Any]:
        value: dict[str, Any] = {}
        for _ in range(levels - 3):  # the frame and its params are two levels
            value = {"x": value}
        return value

    h.send_raw(peer, ping("at", futureField=nested(8)))
    h.send_raw(peer, ping("over", futureField=nested(9)))
    at, over = h.frames(peer)
    assert at == {"jsonrpc": "2.0", "id": "at", "result": None}
    assert over["id"] == "over"
    assert over["error"] == {
        "code": -32600,
        "message": "Invalid request: JSON nested deeper than 8 levels (server.max_json_depth)",
    }


def test_brackets_in_strings_or_side_by_side_are_not_depth() -> None:
    """Depth is nesting, not the number of brackets: many objects side by side, and brackets
    inside strings, are accepted at any count (the frame's text is only a first hint)."""
    h = Harness(config=config(max_json_depth=8))
    peer = h.connect()
    h.send_raw(peer, ping("wide", futureField=[{"a": {}} for _ in range(50)]))
    h.send_raw(peer, ping("text", futureField="{[" * 100))
    assert h.frames(peer) == [
        {"jsonrpc": "2.0", "id": "wide", "result": None},
        {"jsonrpc": "2.0", "id": "text", "result": None},
    ]


def test_a_duplicate_request_id_is_refused_and_the_first_answer_stands() -> None:
    h = Harness()
    peer = h.connect()
    h.send_raw(peer, ping("dup"))
    h.send_raw(peer, ping("dup"))
    first, second = h.frames(peer)
    assert first == {"jsonrpc": "2.0", "id": "dup", "result": None}
    assert second["id"] == "dup"
    assert second["error"]["code"] == -32600
    assert second["error"]["message"] == (
        "Invalid request: duplicate id 'dup'; use a new id for each request (the last "
        "server.remembered_request_ids are remembered)"
    )


def test_request_ids_are_per_peer() -> None:
    h = Harness()
    a, b = h.connect("a"), h.connect("b")
    h.send_raw(a, ping(7))
    h.send_raw(b, ping(7))
    assert only_frame(h, a)["result"] is None
    assert only_frame(h, b)["result"] is None


def test_only_the_last_remembered_request_ids_are_kept() -> None:
    h = Harness(config=config(remembered_request_ids=2))
    peer = h.peer()
    for request_id in ("a", "b", "c"):
        h.send_raw(peer, ping(request_id))
    assert list(peer.seen_ids) == ["b", "c"]  # bounded: the oldest went
    h.send_raw(peer, ping("c"))  # still remembered: refused
    h.send_raw(peer, ping("a"))  # forgotten: a new request again
    answers = h.frames(peer)
    assert [f["id"] for f in answers] == ["a", "b", "c", "c", "a"]
    assert "error" in answers[3] and "result" in answers[4]
    assert list(peer.seen_ids) == ["c", "a"]


def test_an_unknown_method_is_method_not_found() -> None:
    h = Harness()
    peer = h.connect()
    assert h.error(peer, "session/teleport") == {
        "code": -32601,
        "message": "Method not found: session/teleport",
    }


def test_a_notification_sent_with_an_id_is_an_invalid_request() -> None:
    h = Harness()
    peer = h.connect()
    h.send(peer, "dispatchAction", {"channel": ROOT, "clientSeq": 1, "action": {}}, id=5)
    assert only_frame(h, peer) == {
        "jsonrpc": "2.0",
        "id": 5,
        "error": {"code": -32600, "message": "Invalid request: dispatchAction is a notification"},
    }


def test_a_request_sent_as_a_notification_gets_an_error_with_a_null_id() -> None:
    h = Harness()
    peer = h.connect()
    h.send(peer, "ping", {"channel": ROOT}, notify=True)
    h.send(peer, "session/teleport", {"channel": ROOT}, notify=True)
    needs_id, unknown = h.frames(peer)
    assert needs_id == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": "Invalid request: ping needs an id"},
    }
    assert unknown["id"] is None
    assert unknown["error"] == {"code": -32601, "message": "Method not found: session/teleport"}


def test_before_initialize_only_ping_initialize_and_reconnect_are_served() -> None:
    h = Harness()
    peer = h.peer()
    assert h.result(peer, "ping") is None
    assert h.error(peer, "listSessions") == {
        "code": -32600,
        "message": "Invalid request: call initialize before listSessions",
    }
    h.send(peer, "dispatchAction", {"channel": ROOT, "clientSeq": 1, "action": {}}, notify=True)
    assert only_frame(h, peer)["error"] == {
        "code": -32600,
        "message": "Invalid request: call initialize before dispatchAction",
    }
    h.send(peer, "unsubscribe", {"channel": ROOT}, notify=True)
    assert only_frame(h, peer)["error"]["message"] == (
        "Invalid request: call initialize before unsubscribe"
    )
    assert h.engine.fanout.subscribers(ROOT) == ()


def test_wrong_params_are_invalid_params_naming_the_field() -> None:
    h = Harness()
    peer = h.connect()
    error = h.error(peer, "listSessions", {"limit": "ten"})
    assert error["code"] == -32602
    assert error["message"].startswith("Invalid params: params.limit: ")
    h.send(peer, "subscribe", {}, id="no-channel")
    assert only_frame(h, peer)["error"] == {
        "code": -32602,
        "message": "Invalid params: params.channel: Field required",
    }


def test_unknown_fields_in_params_are_tolerated() -> None:
    h = Harness()
    peer = h.connect()
    assert h.result(peer, "ping", {"futureField": {"x": 1}}) is None


@pytest.mark.parametrize(
    ("version", "answer"),
    [
        (
            "1.0.0",
            {
                "code": -32602,
                "message": "Invalid params: params._meta: Input should be a valid dictionary",
            },
        ),
        (
            "0.9.0",
            {
                "code": -32602,
                "message": "Invalid params: params._meta: Input should be a valid dictionary",
            },
        ),
        ("0.7.0", None),  # 0.7 defines no `_meta` on params: an unknown field, tolerated
    ],
)
def test_params_are_checked_against_the_peers_line(
    version: str, answer: dict[str, Any] | None
) -> None:
    h = Harness()
    peer = h.connect(version=version)
    frame = h.request(peer, "ping", {"_meta": 5})
    assert frame.get("error") == answer
    assert ("result" in frame) is (answer is None)


@pytest.mark.parametrize(
    ("version", "message"),
    [
        ("1.0.0", "Method not found: automations are not offered by this host"),
        ("0.7.0", "Method not found: fetchAutomationRuns"),  # not a method of the 0.7 line
    ],
)
def test_a_method_of_another_line_is_not_found_and_each_line_says_why(
    version: str, message: str
) -> None:
    h = Harness()
    peer = h.connect(version=version)
    params = {"channel": "ahp-automations://", "automation": "a"}
    assert h.error(peer, "fetchAutomationRuns", params) == {"code": -32601, "message": message}


@pytest.mark.parametrize(
    ("version", "code"), [("1.0.0", -32008), ("0.9.0", -32008), ("0.7.0", -32006)]
)
def test_a_served_answer_is_mapped_to_the_peers_error_codes(version: str, code: int) -> None:
    """1.0 removed ContentNotFound (-32006): its peers get NotFound for it; 0.7 keeps it."""
    h = Harness(config=config(served=frozenset({"resourceRead"})))
    peer = h.connect(version=version)
    effects = h.send(peer, "resourceRead", {"channel": ROOT, "uri": "file:///gone"}, id="read")
    assert effects == [
        Serve(peer, "read", "resourceRead", {"channel": ROOT, "uri": "file:///gone"})
    ]
    assert h.frames(peer) == []  # answered only once the shell has
    h.feed(Answered(peer, "read", error=RpcError(-32006, "No such file: /gone")))
    assert only_frame(h, peer) == {
        "jsonrpc": "2.0",
        "id": "read",
        "error": {"code": code, "message": "No such file: /gone"},
    }


def test_a_filesystem_method_is_refused_by_a_host_that_serves_none() -> None:
    h = Harness()
    peer = h.connect()
    assert h.error(peer, "resourceRead", {"uri": "file:///x"}) == {
        "code": -32009,
        "message": "This host does not expose a filesystem",
    }


def test_a_response_from_the_peer_is_ignored() -> None:
    h = Harness()
    peer = h.connect()
    assert h.send_raw(peer, '{"jsonrpc":"2.0","id":3,"result":null}') == []
    assert h.frames(peer) == []
