"""model_info: the advertised model config schema and the planner agree on keys and values."""

from __future__ import annotations

from ahp_bridge.agentapi import ContextSize, Media, Model, Prices, Prompt
from ahp_bridge.translate import CallPlan, CommandContext, Send, SetModel, plan_command
from ahp_bridge.translate.models import model_info

from .test_translate_support import strict_type, user_turn

RICH = Model(
    id="gpt-x",
    name="GPT X",
    efforts=["low", "medium", "high"],
    context_sizes=[ContextSize(id="default", tokens=200_000), ContextSize(id="1m", tokens=1 << 20)],
    media=Media(images=True, pdf=False),
    cost_tier="high",
    prices=Prices(batch_size=1_000_000),
)


def test_rich_model_advertises_effort_and_context_size() -> None:
    info = model_info("copilot", RICH)
    strict_type("SessionModelInfo", info)
    assert info == {
        "id": "gpt-x",
        "provider": "copilot",
        "name": "GPT X",
        "maxContextWindow": 1 << 20,
        "supportsVision": True,
        "configSchema": {
            "type": "object",
            "properties": {
                "effort": {
                    "type": "string",
                    "title": "Reasoning effort",
                    "enum": ["low", "medium", "high"],
                },
                "contextSize": {
                    "type": "string",
                    "title": "Context size",
                    "enum": ["default", "1m"],
                    "enumLabels": ["200K tokens", "1048576 tokens"],
                },
            },
        },
        "_meta": {
            "ahpBridge.costTier": "high",
            "ahpBridge.prices": {"batch_size": 1_000_000},
            "ahpBridge.media": {"images": True, "pdf": False},
        },
    }


def test_plain_model_has_no_config_schema() -> None:
    info = model_info("fake", Model(id="auto"))
    strict_type("SessionModelInfo", info)
    assert info == {"id": "auto", "provider": "fake", "name": "auto"}


def test_every_advertised_choice_is_accepted_by_the_planner() -> None:
    schema = model_info("copilot", RICH)["configSchema"]["properties"]
    ctx = CommandContext(models=[RICH])
    for effort in schema["effort"]["enum"]:
        for size in schema["contextSize"]["enum"]:
            config = {"effort": effort, "contextSize": size}
            action = user_turn("t1", "hi", model={"id": "gpt-x", "config": config})
            assert plan_command(action, ctx) == CallPlan(
                (SetModel("gpt-x", effort, size), Send(Prompt(text="hi")))
            )
