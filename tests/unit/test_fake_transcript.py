"""The fake's conversation record: on disk it keeps an index of prompts in memory, not the
text, and answers exactly as the record kept in memory does (history, prompt numbers, rewind,
reload after a restart)."""

from __future__ import annotations

import gc
from pathlib import Path

from ahp_bridge_fake.transcript import Meta, Transcript

from ahp_bridge.agentapi import Delta, Event, EventKind, Item, ItemKind, Usage


def turn(n: int) -> list[Event]:
    """One turn's transcript events: the prompt, an answer streamed in two deltas, usage."""
    return [
        Event(kind=EventKind.ITEM, item=Item(id=f"u{n}", kind=ItemKind.USER, text=f"prompt {n}")),
        Event(
            kind=EventKind.DELTA,
            delta=Delta(item_id=f"a{n}", kind=ItemKind.ASSISTANT, text=f"answer {n}, "),
        ),
        Event(
            kind=EventKind.DELTA,
            delta=Delta(item_id=f"a{n}", kind=ItemKind.ASSISTANT, text="streamed" * 50),
        ),
        Event(kind=EventKind.USAGE, usage=Usage(ai_units=float(n))),
    ]


def both(tmp_path: Path, turns: int) -> tuple[Transcript, Transcript]:
    memory = Transcript(Meta(id="fake-m"))
    disk = Transcript(Meta(id="fake-d"), tmp_path / "fake-d.jsonl")
    disk.save_meta()
    for n in range(turns):
        for event in turn(n):
            memory.record(event)
            disk.record(event)
    return memory, disk


def test_on_disk_the_record_answers_as_in_memory(tmp_path: Path) -> None:
    memory, disk = both(tmp_path, 5)
    assert disk.history() == memory.history()
    first = ["prompt 0", "answer 0, " + "streamed" * 50]
    assert [i.text for i in disk.history().items][:2] == first
    assert disk.prompts == memory.prompts == 5
    assert disk.turn_of("u3") == memory.turn_of("u3") == 4
    assert disk.turn_of("a3") is None and memory.turn_of("nope") is None
    assert disk.history().usage == Usage(ai_units=4.0)
    # A rewind removes the same items, and what is left reads back the same after a restart.
    assert disk.truncate("u3") == memory.truncate("u3") == 4
    assert disk.prompts == memory.prompts == 3
    assert disk.truncate("u9") == 0
    reloaded = Transcript.load(tmp_path / "fake-d.jsonl")
    assert reloaded.history() == memory.history()
    assert reloaded.prompts == 3 and reloaded.turn_of("u2") == 3
    for event in turn(7):
        reloaded.record(event)
    assert reloaded.turn_of("u7") == 4 and reloaded.history().items[-1].id == "a7"


def test_on_disk_a_long_conversation_keeps_no_items_in_memory(tmp_path: Path) -> None:
    memory, disk = both(tmp_path, 200)
    assert items_held(memory) == 400  # the walk finds them where they are kept
    assert items_held(disk) == 0
    assert disk.prompts == 200
    assert len(disk.history().items) == 400
    # Loading a file for a reopen keeps the index only, too.
    loaded = Transcript.load(tmp_path / "fake-d.jsonl")
    assert items_held(loaded) == 0 and loaded.prompts == 200


def items_held(root: object) -> int:
    """How many Items are reachable from `root` (through instances and containers)."""
    seen: set[int] = set()
    todo, found = [root], 0
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, type | str | bytes | int | float | Path):
            continue
        seen.add(id(obj))
        if isinstance(obj, Item):
            found += 1
            continue
        if isinstance(obj, dict | list | tuple | set) or hasattr(obj, "__dict__"):
            todo.extend(gc.get_referents(obj))
    return found
