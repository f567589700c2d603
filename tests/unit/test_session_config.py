"""translate/session_config: the schema from a provider and what a change reaches."""

from __future__ import annotations

import pytest

from ahp_bridge.agentapi import Capabilities, ConfigurationDefinition, ContextSize, Model
from ahp_bridge.translate.session_config import (
    ConfigError,
    change_settings,
    complete_setting,
    resolve,
)

MODELS = [
    Model(id="a", name="A", efforts=["low", "high"], context_sizes=[ContextSize(id="1m")]),
    Model(id="b", name="B"),
]
CAPS = Capabilities(context_size=True, custom_agents=True, execution_modes=True)
AGENTS = [ConfigurationDefinition(id="rev", name="Reviewer")]


def state(**values: str) -> dict:
    schema, resolved = resolve(
        values, models=MODELS, capabilities=CAPS, agents=AGENTS, working_directory="file:///w"
    )
    return {"schema": schema, "values": resolved}


def test_the_schema_has_what_the_provider_offers() -> None:
    props = state()["schema"]["properties"]
    assert list(props) == ["model", "effort", "contextSize", "agent", "mode", "workingDirectory"]
    assert props["mode"]["readOnly"] is True and props["mode"]["sessionMutable"] is False
    bare, _ = resolve({}, models=[], capabilities=Capabilities(), agents=[], working_directory="")
    assert list(bare["properties"]) == ["workingDirectory"]  # nothing else to choose


def test_strict_values_are_checked_against_the_chosen_model() -> None:
    with pytest.raises(ConfigError, match="model 'b' has no effort 'high'"):
        resolve(
            {"model": "b", "effort": "high"},
            models=MODELS,
            capabilities=CAPS,
            agents=AGENTS,
            working_directory="",
            strict=True,
        )


def test_a_model_change_resets_what_the_new_model_lacks() -> None:
    current = state(model="a", effort="high", contextSize="1m")
    change = change_settings(current, {"model": "b"}, replace=False, models=MODELS, busy=False)
    assert change.set_model == ("b", "", "")
    assert change.values["effort"] == "" and change.values["contextSize"] == ""
    same = change_settings(current, {"effort": "low"}, replace=False, models=MODELS, busy=False)
    assert same.set_model == ("a", "low", "1m") and same.select_agent is None
    agent = change_settings(current, {"agent": "rev"}, replace=False, models=MODELS, busy=False)
    assert agent.set_model is None and agent.select_agent == "rev"
    with pytest.raises(ConfigError, match="a turn is running"):
        change_settings(current, {"agent": "rev"}, replace=False, models=MODELS, busy=True)
    unchanged = change_settings(current, {"model": "a"}, replace=False, models=MODELS, busy=True)
    assert unchanged.set_model is None  # nothing to switch, so a running turn does not matter
    with pytest.raises(ConfigError, match="cannot be changed"):
        change_settings(current, {"mode": "autopilot"}, replace=False, models=MODELS, busy=False)


def test_replace_keeps_the_fixed_settings() -> None:
    current = state(model="a", effort="high")
    change = change_settings(current, {"model": "a"}, replace=True, models=MODELS, busy=False)
    assert change.values["workingDirectory"] == "file:///w"
    assert change.set_model == ("a", "", "")  # replacing dropped the effort


def test_completions_filter_by_value_or_label() -> None:
    schema = state()["schema"]
    assert complete_setting(schema, "model", "B") == [{"value": "b", "label": "B"}]
    assert complete_setting(schema, "nope", "") is None
    assert [i["value"] for i in complete_setting(schema, "agent", "") or []] == ["", "rev"]
