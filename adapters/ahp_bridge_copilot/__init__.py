"""ahp-bridge provider for GitHub Copilot, over github-copilot-sdk and the Copilot CLI.

The SDK is asyncio-based; it runs on one dedicated thread bridged to trio (``bridge``). Session
events are mapped to agentapi Events by the pure ``mapping`` module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .options import CopilotOptions, OptionsError
from .provider import CopilotProvider

__all__ = ["CopilotOptions", "CopilotProvider", "OptionsError", "create_provider"]


def create_provider(options: Mapping[str, Any]) -> CopilotProvider:
    """The entry point (group ``ahp_bridge.providers``, name ``copilot``)."""
    return CopilotProvider(CopilotOptions.parse(options))
