"""ahp-bridge remote provider: agentapi over gRPC (proto/agentapi/v1/agentapi.proto).

``create_provider({"address": "unix:/path.sock", "token": ...})`` is the ``remote`` entry
point: a Provider whose runtime is another process. ``ahp_bridge_remote.server.serve``
serves any Provider for it to reach.
"""

from __future__ import annotations

from .client import OPTION_KEYS, RemoteProvider, create_provider
from .conversation import RemoteConversation
from .errors import RemoteAuthError, RemoteError, RemoteNotConnected, RemoteUnavailable

__all__ = [
    "OPTION_KEYS",
    "RemoteAuthError",
    "RemoteConversation",
    "RemoteError",
    "RemoteNotConnected",
    "RemoteProvider",
    "RemoteUnavailable",
    "create_provider",
]
