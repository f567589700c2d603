"""ahp-bridge provider for GitHub Copilot, over github-copilot-sdk and the Copilot CLI.

The SDK is asyncio-based; it runs on one dedicated thread bridged to trio (``bridge``). Session
events are mapped to agentapi Events by the pure ``mapping`` module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .options import ByokOptions, CopilotOptions, OptionsError
from .provider import CopilotProvider

__all__ = ["OPTION_KEYS", "CopilotOptions", "CopilotProvider", "OptionsError", "create_provider"]

#: The keys `[providers.NAME]` may hold (None: any value; a mapping: a table with those keys),
#: which the bridge checks when it loads its configuration.
OPTION_KEYS: Mapping[str, Any] = {
    **dict.fromkeys(CopilotOptions.model_fields),
    "byok": dict.fromkeys(ByokOptions.model_fields),
}


def create_provider(options: Mapping[str, Any]) -> CopilotProvider:
    """The entry point (group ``ahp_bridge.providers``, name ``copilot``)."""
    return CopilotProvider(CopilotOptions.parse(options))
