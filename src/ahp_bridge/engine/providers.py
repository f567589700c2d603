"""The engine's view of each configured provider: facts read once, and what can change.

The shell starts the providers and reads these; the engine decides with them (which models a
message may name, whether the provider titles, keeps diffs, registers host tools, can sign in)
and never holds the provider object itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ahp_bridge import agentapi
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.translate.models import model_info

__all__ = ["GITHUB_RESOURCE", "ProviderInfo", "agent_info", "protected_resources"]

GITHUB_RESOURCE = "https://api.github.com"


@dataclass
class ProviderInfo:
    """One provider as the engine knows it."""

    name: str
    display_name: str
    capabilities: agentapi.Capabilities = field(default_factory=agentapi.Capabilities)
    models: list[agentapi.Model] = field(default_factory=list)
    #: Why the runtime needs a sign-in (its SignedOut message); "" when it needs none.
    signed_out: str = ""
    #: The provider implements AccountManager and says it manages an account.
    can_sign_in: bool = False
    #: The provider implements SkillGlobalSetter (its skills can be turned on and off).
    skill_setter: bool = False

    def require_signed_in(self) -> None:
        """`-32007 AuthRequired` for an agent that cannot work until it is signed in."""
        if self.signed_out:
            raise RpcError(
                E.AUTH_REQUIRED,
                f"Authentication required for {self.display_name}: {self.signed_out}",
                {"resources": protected_resources(self)},
            )


def protected_resources(info: ProviderInfo) -> list[dict[str, Any]]:
    """The agent's `protectedResources`: GitHub while its runtime is signed out, else none."""
    if not info.signed_out:
        return []
    return [
        {
            "resource": GITHUB_RESOURCE,
            "resource_name": info.display_name,
            "authorization_servers": ["https://github.com/login/oauth"],
            "scopes_supported": ["read:user", "user:email"],
            "required": True,
        }
    ]


def agent_info(info: ProviderInfo) -> dict[str, Any]:
    """The provider's `AgentInfo` as `root/agentsChanged` and the root state carry it."""
    agent: dict[str, Any] = {
        "provider": info.name,
        "displayName": info.display_name,
        "description": f"{info.display_name} through ahp-bridge",
        "models": [model_info(info.name, m) for m in info.models],
        # Each chat is its own provider conversation, so any provider can have several;
        # forks and side chats need provider support the contract lacks.
        "capabilities": {"multipleChats": {}},
    }
    resources = protected_resources(info)
    if resources:
        agent["protectedResources"] = resources
    return agent
