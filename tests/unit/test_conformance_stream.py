"""The pure stream models the conformance checks judge an event stream with."""

from __future__ import annotations

from ahp_bridge.agentapi import (
    Delta,
    Event,
    EventKind,
    Interaction,
    InteractionKind,
    InteractionState,
    Item,
    ItemKind,
    Turn,
    TurnState,
)
from ahp_bridge.conformance.stream import Transcript, TurnTracker, payload_problem


def item(item_id: str, kind: ItemKind, text: str = "", agent_id: str = "") -> Event:
    return Event(
        kind=EventKind.ITEM, item=Item(id=item_id, kind=kind, text=text, agent_id=agent_id)
    )


def delta(item_id: str, kind: ItemKind, text: str, agent_id: str = "") -> Event:
    return Event(
        kind=EventKind.DELTA,
        delta=Delta(item_id=item_id, kind=kind, text=text, agent_id=agent_id),
    )


def turn(state: TurnState) -> Event:
    return Event(kind=EventKind.TURN, turn=Turn(state=state))


def interaction(
    ia_id: str,
    state: InteractionState,
    kind: InteractionKind = InteractionKind.PERMISSION,
    agent_id: str = "",
) -> Event:
    return Event(
        kind=EventKind.INTERACTION,
        interaction=Interaction(id=ia_id, kind=kind, title="t", state=state, agent_id=agent_id),
    )


def feed(model: Transcript | TurnTracker, *events: Event) -> None:
    for event in events:
        model.feed(event)


def test_deltas_create_then_append_and_items_replace() -> None:
    model = Transcript()
    feed(
        model,
        delta("a1", ItemKind.ASSISTANT, "Hel"),
        delta("a1", ItemKind.ASSISTANT, "lo"),
        item("u1", ItemKind.USER, "hi"),
    )
    assert model.texts(ItemKind.ASSISTANT) == ["Hello"]
    feed(model, item("a1", ItemKind.ASSISTANT, "Hello!"))
    assert model.texts(ItemKind.ASSISTANT) == ["Hello!"]
    assert list(model.items) == [("", "a1"), ("", "u1")]
    assert model.violations == []


def test_items_are_keyed_by_agent_and_id() -> None:
    model = Transcript()
    feed(model, item("x", ItemKind.ASSISTANT, "main"), item("x", ItemKind.TOOL, agent_id="sub1"))
    assert model.violations == []
    assert model.items[("sub1", "x")].kind == ItemKind.TOOL
    assert model.texts(ItemKind.ASSISTANT) == ["main"]
    assert model.texts(ItemKind.ASSISTANT, agent_id="sub1") == []


def test_an_item_id_never_changes_kind() -> None:
    model = Transcript()
    feed(model, item("a1", ItemKind.ASSISTANT, "x"), item("a1", ItemKind.REASONING, "y"))
    assert model.violations == ["event #2: item id='a1' changed kind from assistant to reasoning"]
    assert model.items[("", "a1")].text == "x"


def test_a_delta_kind_must_match_its_item() -> None:
    model = Transcript()
    feed(model, item("a1", ItemKind.ASSISTANT, "x"), delta("a1", ItemKind.REASONING, "y"))
    assert model.violations == ["event #2: delta of kind reasoning for assistant item id='a1'"]


def test_missing_ids_are_violations() -> None:
    model = Transcript()
    feed(model, item("", ItemKind.ASSISTANT), delta("", ItemKind.ASSISTANT, "x"))
    assert len(model.violations) == 2
    assert model.items == {}


def test_interactions_keep_their_kind_and_never_reopen() -> None:
    model = Transcript()
    feed(
        model,
        interaction("p1", InteractionState.PENDING),
        interaction("p1", InteractionState.ANSWERED),
        interaction("p1", InteractionState.PENDING),
        interaction("p1", InteractionState.PENDING, kind=InteractionKind.QUESTION),
    )
    assert model.violations == [
        "event #3: interaction id='p1' back to pending after answered",
        "event #4: interaction id='p1' changed kind from permission to question",
    ]
    assert model.interactions["p1"].states == [
        InteractionState.PENDING,
        InteractionState.ANSWERED,
        InteractionState.PENDING,
    ]


def test_payload_problem_names_a_missing_or_extra_payload() -> None:
    good = item("a", ItemKind.USER)
    assert payload_problem(good) is None
    missing = Event.model_construct(kind=EventKind.TURN, turn=None)
    assert payload_problem(missing) == "turn event without its turn payload"
    extra = Event.model_construct(kind=EventKind.TURN, turn=Turn(state=TurnState.WORKING))
    extra.item = Item(id="a", kind=ItemKind.USER)
    assert payload_problem(extra) == "turn event also carries item"
    model = Transcript()
    model.feed(missing)
    assert model.violations == ["event #1: turn event without its turn payload"]


def test_turns_go_working_then_one_terminal() -> None:
    tracker = TurnTracker()
    feed(
        tracker,
        item("u1", ItemKind.USER),
        turn(TurnState.WORKING),
        delta("a1", ItemKind.ASSISTANT, "x"),
        turn(TurnState.WORKING),  # a repeated working is the same turn
        turn(TurnState.COMPLETED),
        item("u2", ItemKind.USER),
        turn(TurnState.WORKING),
        turn(TurnState.CANCELLED),
    )
    assert tracker.violations == []
    assert [(t.started, t.ended, t.state) for t in tracker.turns] == [
        (2, 5, TurnState.COMPLETED),
        (7, 8, TurnState.CANCELLED),
    ]
    assert not tracker.running


def test_a_second_terminal_state_is_a_violation() -> None:
    tracker = TurnTracker()
    feed(tracker, turn(TurnState.WORKING), turn(TurnState.COMPLETED), turn(TurnState.FAILED))
    assert tracker.violations == [
        "event #3: second terminal state failed for a turn that already ended completed"
    ]


def test_a_terminal_state_without_a_turn_is_a_violation() -> None:
    tracker = TurnTracker()
    feed(tracker, turn(TurnState.COMPLETED))
    assert tracker.violations == ["event #1: terminal state completed without a working turn"]


def test_main_agent_output_outside_a_turn_is_a_violation() -> None:
    tracker = TurnTracker()
    feed(
        tracker,
        delta("a0", ItemKind.ASSISTANT, "early"),
        turn(TurnState.WORKING),
        turn(TurnState.COMPLETED),
        item("a1", ItemKind.ASSISTANT, "late"),
        interaction("p1", InteractionState.PENDING),
    )
    assert tracker.violations == [
        "event #1: main-agent delta assistant item_id='a0' before any turn started",
        "event #4: main-agent item assistant id='a1' after its turn ended",
        "event #5: pending main-agent interaction permission id='p1' state=pending "
        "after its turn ended",
    ]


def test_outside_a_turn_users_notices_subagents_and_expiries_are_fine() -> None:
    tracker = TurnTracker()
    feed(
        tracker,
        turn(TurnState.WORKING),
        interaction("p1", InteractionState.PENDING),
        turn(TurnState.CANCELLED),
        interaction("p1", InteractionState.EXPIRED),
        item("n1", ItemKind.NOTICE, "steer not used"),
        item("u2", ItemKind.USER, "next"),
        delta("s1", ItemKind.ASSISTANT, "sub", agent_id="sub1"),
        item("t1", ItemKind.TOOL, agent_id="sub1"),
        Event(kind=EventKind.TITLE, title="A title"),
    )
    assert tracker.violations == []
    assert tracker.running is False
