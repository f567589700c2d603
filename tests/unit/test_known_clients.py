"""The wire line each client negotiated, remembered (bounded) for its `reconnect`."""

from __future__ import annotations

from ahp_bridge.engine.clients import KnownClients


def test_a_client_keeps_its_line_and_an_unknown_one_is_0_7() -> None:
    persisted: list[tuple[str, str]] = []
    clients = KnownClients(persist=lambda c, line: persisted.append((c, line)))
    assert not clients  # empty, and still a registry (falsy must not mean "absent")
    clients.remember("a", "1.0")
    clients.remember("b", "0.9")
    assert (clients.line("a"), clients.line("b"), clients.line("never")) == ("1.0", "0.9", "0.7")
    assert persisted == [("a", "1.0"), ("b", "0.9")]


def test_it_is_bounded_and_keeps_the_most_recently_used() -> None:
    clients = KnownClients(limit=2)
    clients.remember("a", "1.0")
    clients.remember("b", "1.0")
    assert clients.line("a") == "1.0"  # a used again: b is now the oldest
    clients.remember("c", "0.9")
    assert len(clients) == 2
    assert (clients.line("a"), clients.line("b"), clients.line("c")) == ("1.0", "0.7", "0.9")


def test_loading_ignores_lines_it_does_not_know() -> None:
    clients = KnownClients()
    clients.load({"a": "1.0", "b": "2.0", "c": "0.7"})
    assert (clients.line("a"), clients.line("b"), clients.line("c")) == ("1.0", "0.7", "0.7")
    assert len(clients) == 2
