"""The features' decisions: session settings (`session/configChanged`) and customization
toggles, each refused with its reason, and put back when the provider call fails."""

from __future__ import annotations

from typing import Any

import pytest

from ahp_bridge import agentapi
from ahp_bridge.engine.jobs import CallChat, ReloadCustomizations, SetSkillDisabled
from ahp_bridge.engine.peers import Peer
from ahp_bridge.translate.commands import SetModel
from tests.support.engine import Harness, fake_provider, turn_event

SESSION = "ahp-session:/s1"


def config_changed(**values: Any) -> dict[str, Any]:
    return {"type": "session/configChanged", "config": values}


def toggled(ident: str, enabled: bool) -> dict[str, Any]:
    return {
        "type": "session/customizationToggled",
        "id": ident,
        "enablement": [{"kind": "global", "enabled": enabled}],
    }


def ready(h: Harness) -> tuple[Peer, str]:
    peer = h.connect()
    chat = h.create_session(peer)
    h.subscribe(peer, SESSION)
    return peer, chat


def reasons(h: Harness, peer: Peer) -> list[str | None]:
    return [e.get("rejectionReason") for e in h.envelopes(peer, SESSION)]


# -- session settings --------------------------------------------------------------------------


def test_a_model_change_is_applied_and_its_call_runs_on_the_default_chat() -> None:
    h = Harness()
    peer, chat = ready(h)
    assert h.store.state(SESSION)["config"]["values"]["model"] == "m1"
    h.dispatch(peer, SESSION, config_changed(model="m2"))
    assert reasons(h, peer) == [None]
    assert h.calls(chat) == [SetModel("m2", "", "")]
    assert h.store.state(SESSION)["config"]["values"]["model"] == "m2"
    assert h.engine.sessions.sessions[SESSION].settings.model == "m2"  # what a reopen asks for


def test_a_model_change_during_a_turn_is_refused() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.start_turn(peer, chat)
    h.provider(chat, turn_event(agentapi.TurnState.WORKING))
    h.frames(peer)
    h.dispatch(peer, SESSION, config_changed(model="m2"), 2)
    assert reasons(h, peer) == ["a turn is running; change the model or agent when it has ended"]
    assert not any(isinstance(c, SetModel) for c in h.calls(chat))
    assert h.store.state(SESSION)["config"]["values"]["model"] == "m1"


@pytest.mark.parametrize(
    ("values", "reason"),
    [
        ({"model": "m9"}, "config.model: 'm9' is not one of 'm1', 'm2'"),
        ({"colour": "red"}, "config.colour: not a setting of this session"),
        ({"workingDirectory": "file:///elsewhere"}, "config.workingDirectory: cannot be changed"),
    ],
)
def test_a_setting_that_does_not_fit_the_schema_is_refused(
    values: dict[str, Any], reason: str
) -> None:
    h = Harness()
    peer, _ = ready(h)
    h.dispatch(peer, SESSION, config_changed(**values))
    [refused] = reasons(h, peer)
    assert refused is not None and refused.startswith(reason)


def test_a_model_change_the_provider_refuses_is_put_back() -> None:
    h = Harness()
    peer, chat = ready(h)
    h.fail(SetModel, agentapi.Unsupported("no such model here"))
    h.dispatch(peer, SESSION, config_changed(model="m2"))
    applied, put_back = h.actions(peer, SESSION)
    assert applied["config"] == {"model": "m2"}
    assert put_back == {
        "type": "session/configChanged",
        "config": {"model": "m1", "effort": "", "workingDirectory": "file:///work/project"},
        "replace": True,
    }
    assert h.store.state(SESSION)["config"]["values"]["model"] == "m1"
    assert h.engine.sessions.sessions[SESSION].settings.model == "m1"
    assert h.calls(chat) == [SetModel("m2", "", "")]


# -- customizations ----------------------------------------------------------------------------


def with_skill(h: Harness) -> tuple[Peer, str]:
    """A session whose provider can turn skills on and off, with one skill `x` (enabled)."""
    h.providers[0].skill_setter = True
    peer, chat = ready(h)
    session = h.engine.sessions.sessions[SESSION]
    skill = agentapi.ConfigurationDefinition(id="x", name="x", path="/skills/x.md", enabled=True)
    h.engine.customizations.read(
        session, {"skill": agentapi.ConfigurationCatalog(definitions=[skill])}, [], None
    )
    h.feed_all(h.engine.take_effects())
    h.frames(peer)
    return peer, chat


def skill_enabled(h: Harness) -> Any:
    [directory] = h.store.state(SESSION)["customizations"]
    [skill] = directory["children"]
    return skill["enabled"]


def test_a_skill_toggle_reaches_the_provider_then_the_customizations_are_read_again() -> None:
    h = Harness(providers=[fake_provider()])
    peer, chat = with_skill(h)
    h.dispatch(peer, SESSION, toggled("skill:x", False))
    assert reasons(h, peer) == [None]
    assert skill_enabled(h) is False
    assert h.calls(chat) == [SetSkillDisabled("x", True), ReloadCustomizations(SESSION)]


def test_a_skill_toggle_the_provider_fails_is_put_back() -> None:
    h = Harness(providers=[fake_provider()])
    peer, chat = with_skill(h)
    h.fail(SetSkillDisabled, agentapi.Unsupported("read-only settings"))
    h.dispatch(peer, SESSION, toggled("skill:x", False))
    assert h.actions(peer, SESSION) == [
        toggled("skill:x", False),
        toggled("skill:x", True),  # the state it claimed, put back
    ]
    assert skill_enabled(h) is True
    assert h.calls(chat) == [SetSkillDisabled("x", True)]  # no reading after a failure


@pytest.mark.parametrize(
    ("ident", "skill_setter", "reason"),
    [
        ("skill:x", False, "this provider cannot turn skills on or off"),
        ("agent:reviewer", True, "this provider cannot turn custom agents on or off"),
        ("zzz", True, "no customization 'zzz' in this session"),
        ("mcp:github", True, "this provider's MCP servers cannot be controlled through agentapi"),
    ],
)
def test_a_toggle_the_provider_cannot_honour_is_refused(
    ident: str, skill_setter: bool, reason: str
) -> None:
    h = Harness()
    h.providers[0].skill_setter = skill_setter
    peer, chat = ready(h)
    h.dispatch(peer, SESSION, toggled(ident, False))
    assert reasons(h, peer) == [reason]
    assert h.calls(chat) == []


def read_skill(h: Harness, enabled: bool, *, settling: bool) -> None:
    """The shell's reading of the session's customizations: skill `x` as the provider has it."""
    session = h.engine.sessions.sessions[SESSION]
    skill = agentapi.ConfigurationDefinition(id="x", name="x", path="/skills/x.md", enabled=enabled)
    catalogs = {"skill": agentapi.ConfigurationCatalog(definitions=[skill])}
    h.engine.customizations.read(session, catalogs, [], None, settling=settling)
    h.feed_all(h.engine.take_effects())


def test_a_reading_taken_before_a_later_change_reached_the_provider_does_not_put_it_back() -> None:
    """Two toggles in a row: the first one's reading-again (the provider has x off) comes back
    while the second (x on) is applied but not yet at the provider; it would flip x back off
    for every client until the second reading came. It is not published; the second is."""
    h = Harness(providers=[fake_provider()])
    peer, _ = with_skill(h)
    h.hold(CallChat)
    h.dispatch(peer, SESSION, toggled("skill:x", False))
    h.dispatch(peer, SESSION, toggled("skill:x", True), 2)
    assert skill_enabled(h) is True  # both applied at once, in order
    read_skill(h, enabled=False, settling=True)  # the first change's reading-again
    assert skill_enabled(h) is True
    assert h.actions(peer, SESSION) == [toggled("skill:x", False), toggled("skill:x", True)]
    read_skill(h, enabled=True, settling=True)  # the second's: the provider has x on
    assert skill_enabled(h) is True
    read_skill(h, enabled=False, settling=False)  # settled: any later reading is published
    assert skill_enabled(h) is False


def test_a_change_that_failed_no_longer_holds_the_readings_back() -> None:
    h = Harness(providers=[fake_provider()])
    peer, _ = with_skill(h)
    h.fail(SetSkillDisabled, agentapi.Unsupported("read-only settings"))
    h.dispatch(peer, SESSION, toggled("skill:x", False))
    assert skill_enabled(h) is True  # put back; its reading-again will never come
    read_skill(h, enabled=False, settling=False)
    assert skill_enabled(h) is False
