"""What the provider adapters share, so no adapter carries a copy of another's code.

Adapters (``ahp_bridge_fake``, ``_copilot``, ``_remote``, ``_acp``) import ``ahp_bridge.agentapi``,
this package and their own SDKs, never each other. The rule for this package: it imports only
``ahp_bridge.agentapi``, trio, asyncio and the standard library; never AHP (protocol, state,
translate), never the host, never an adapter or an SDK.

- ``asyncio_thread``: an asyncio loop on a dedicated thread, awaited from trio (the Copilot and
  ACP SDKs run on one each).
- ``lifetime``: ``async with provider:`` for a provider, with the trio nursery it owns for its
  turns; ``close_each`` for a shutdown.
- ``imports``: an SDK imported with the cyclic garbage collector off (``import_without_gc``).
"""

from __future__ import annotations

from .asyncio_thread import AsyncioThread, LoopStopped
from .imports import import_without_gc
from .lifetime import ProviderLifetime, close_each

__all__ = ["AsyncioThread", "LoopStopped", "ProviderLifetime", "close_each", "import_without_gc"]
