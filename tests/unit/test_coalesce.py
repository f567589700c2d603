"""Merging adjacent streamed-text actions: equal reduced state, fewer envelopes."""

from __future__ import annotations

from typing import Any

from ahp_bridge.state import reduce
from ahp_bridge.translate.coalesce import coalesce

CHAT = "ahp-chat:/c"
NOW = "1970-01-01T00:00:00.000Z"


def delta(part: str, text: str, turn: str = "t1", kind: str = "chat/delta") -> tuple[str, dict]:
    return (CHAT, {"type": kind, "turnId": turn, "partId": part, "content": text})


def chat_with_parts() -> dict[str, Any]:
    return {
        "resource": CHAT,
        "title": "",
        "status": 8,
        "modifiedAt": NOW,
        "turns": [],
        "activeTurn": {
            "id": "t1",
            "startedAt": NOW,
            "message": {"text": "hi", "origin": {"kind": "user"}},
            "responseParts": [
                {"kind": "markdown", "id": "m1", "content": ""},
                {"kind": "reasoning", "id": "r1", "content": ""},
                {"kind": "markdown", "id": "m2", "content": ""},
            ],
        },
    }


def reduce_all(emitted: list[tuple[str, dict]]) -> dict[str, Any]:
    state = chat_with_parts()
    for _, action in emitted:
        state = reduce("chat", state, action)
    return state


def test_runs_to_one_part_merge_and_reduce_to_the_same_state() -> None:
    burst = [
        delta("m1", "Hel"),
        delta("m1", "lo"),
        delta("r1", "think", kind="chat/reasoning"),
        delta("r1", "ing", kind="chat/reasoning"),
        delta("m2", "a"),
        delta("m1", "!"),  # back to m1: not adjacent to the first run, kept apart
        delta("m2", "b"),
    ]
    merged = coalesce(burst)
    assert [a["content"] for _, a in merged] == ["Hello", "thinking", "a", "!", "b"]
    assert reduce_all(merged) == reduce_all(burst)


def test_different_turns_channels_kinds_and_meta_are_never_merged() -> None:
    other_channel = ("ahp-chat:/other", delta("m1", "x")[1])
    with_meta = (CHAT, {**delta("m1", "y")[1], "_meta": {"k": 1}})
    burst = [
        delta("m1", "a"),
        delta("m1", "b", turn="t2"),
        other_channel,
        delta("m1", "c"),
        with_meta,
        delta("m1", "d"),
        (CHAT, {"type": "chat/responsePart", "turnId": "t1", "part": {"kind": "markdown"}}),
        delta("m1", "e"),
    ]
    assert coalesce(burst) == burst


def test_nothing_to_merge_is_returned_as_is() -> None:
    assert coalesce([]) == []
    one = [delta("m1", "a")]
    assert coalesce(one) is one
