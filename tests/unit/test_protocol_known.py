"""A client's action keeps only the fields its version defines (found by tests/e2e/test_fuzz.py)."""

from __future__ import annotations

from ahp_bridge.protocol.actions import ACTIONS_07
from ahp_bridge.protocol.actions_v1 import ACTIONS_10
from ahp_bridge.protocol.known import known_fields


def test_unknown_fields_go_at_every_depth_and_meta_stays_whole() -> None:
    sent = {
        "type": "chat/turnStarted",
        "turnId": "t",
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": {
            "text": "hi",
            "origin": {"kind": "user", "made-up": 1},
            "attachments": [{"type": "simple", "label": "a", "x": 2}],
            "_meta": {"anything": {"goes": [1]}},
            "also-made-up": True,
        },
        "extra": 3,
    }
    for actions in (ACTIONS_07, ACTIONS_10):
        kept = known_fields(actions.parse(sent), sent)
        assert set(kept) == {"type", "turnId", "startedAt", "message"}
        assert kept["message"]["origin"] == {"kind": "user"}
        assert kept["message"]["_meta"] == {"anything": {"goes": [1]}}
        assert "also-made-up" not in kept["message"]
        assert kept["message"]["attachments"][0].get("x") is None


def test_values_are_kept_as_sent() -> None:
    sent = {"type": "session/isReadChanged", "isRead": True, "junk": [{}]}
    assert known_fields(ACTIONS_10.parse(sent), sent) == {
        "type": "session/isReadChanged",
        "isRead": True,
    }


def test_a_field_sent_as_null_is_absent() -> None:
    sent = {"type": "chat/draftChanged", "draft": None}
    assert known_fields(ACTIONS_10.parse(sent), sent) == {"type": "chat/draftChanged"}
    nested = {
        "type": "chat/draftChanged",
        "draft": {"text": "x", "origin": {"kind": "user"}, "model": None},
    }
    kept = known_fields(ACTIONS_07.parse(nested), nested)
    assert kept["draft"] == {"text": "x", "origin": {"kind": "user"}}
    meta = {"type": "chat/draftChanged", "draft": {**nested["draft"], "_meta": {"k": None}}}
    assert known_fields(ACTIONS_10.parse(meta), meta)["draft"]["_meta"] == {"k": None}  # open


def test_kept_fields_are_written_in_the_models_order_not_the_clients() -> None:
    """What the host relays is byte for byte the same whatever order a client wrote its keys
    in: the declared order of each model, at every depth; nulls go like unknown keys."""
    ordered = {
        "type": "chat/turnStarted",
        "turnId": "t",
        "startedAt": "2026-01-01T00:00:00.000Z",
        "message": {"text": "hi", "origin": {"kind": "user"}},
    }
    shuffled = {
        "message": {"origin": {"kind": "user"}, "junk": None, "text": "hi"},
        "startedAt": "2026-01-01T00:00:00.000Z",
        "turnId": "t",
        "type": "chat/turnStarted",
        "queued": None,
    }
    for actions in (ACTIONS_07, ACTIONS_10):
        for sent in (ordered, shuffled):
            kept = known_fields(actions.parse(sent), sent)
            assert list(kept) == ["type", "turnId", "startedAt", "message"]
            assert list(kept["message"]) == ["text", "origin"]
            assert kept == ordered
