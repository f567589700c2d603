"""agentapi Models -> AHP ``SessionModelInfo``, with the config schema the planner reads back.

A client renders ``configSchema`` as a form and sends the values in ``ModelSelection.config``;
``commands.plan_command`` turns ``config["effort"]`` and ``config["contextSize"]`` into the
``set_model`` effort and context size. Keeping both directions in this package keeps the keys
and the allowed values in step. Prices, cost tier and discount ride in ``_meta``.
"""

from __future__ import annotations

from typing import Any

from ahp_bridge.agentapi import Model

from ._wire import META_PREFIX
from .commands import MODEL_CONFIG_CONTEXT_SIZE, MODEL_CONFIG_EFFORT

__all__ = ["model_info"]


def model_info(provider: str, model: Model) -> dict[str, Any]:
    """The ``SessionModelInfo`` advertising ``model`` of ``provider`` (an ``AgentInfo`` entry)."""
    info: dict[str, Any] = {"id": model.id, "provider": provider, "name": model.name or model.id}
    if model.context_sizes:
        info["maxContextWindow"] = max(size.tokens for size in model.context_sizes)
    if model.media is not None:
        info["supportsVision"] = model.media.images
    properties: dict[str, Any] = {}
    if model.efforts:
        properties[MODEL_CONFIG_EFFORT] = {
            "type": "string",
            "title": "Reasoning effort",
            "enum": list(model.efforts),
        }
    if len(model.context_sizes) > 1:
        properties[MODEL_CONFIG_CONTEXT_SIZE] = {
            "type": "string",
            "title": "Context size",
            "enum": [size.id for size in model.context_sizes],
            "enumLabels": [_tokens(size.tokens) or size.id for size in model.context_sizes],
        }
    if properties:
        info["configSchema"] = {"type": "object", "properties": properties}
    meta = {
        f"{META_PREFIX}costTier": model.cost_tier or None,
        f"{META_PREFIX}discountPercent": model.discount_percent or None,
        f"{META_PREFIX}prices": model.prices.to_json() if model.prices is not None else None,
        f"{META_PREFIX}media": model.media.to_json() if model.media is not None else None,
    }
    meta = {key: value for key, value in meta.items() if value is not None}
    if meta:
        info["_meta"] = meta
    return info


def _tokens(tokens: int) -> str:
    if tokens <= 0:
        return ""
    if tokens >= 1_000_000 and tokens % 1_000_000 == 0:
        return f"{tokens // 1_000_000}M tokens"
    if tokens >= 1000 and tokens % 1000 == 0:
        return f"{tokens // 1000}K tokens"
    return f"{tokens} tokens"
