"""Signing an agent's runtime in from a client: AHP protected resources and `authenticate`.

A provider whose runtime is signed out (its `models()` said `SignedOut` at start) is announced
with `AgentInfo.protectedResources`: one RFC 9728 entry for GitHub (the only account agentapi's
`AccountManager` knows), `required: true`, so a client knows to push a GitHub token before using
it. Until then `createSession` for that agent answers `-32007 AuthRequired` with the resources in
`data.resources` (docs/specification/authentication.md in microsoft/agent-host-protocol: "The
server SHOULD return AuthRequired (-32007) if the client attempts to use the agent
unauthenticated"; the data shape is AHP 0.7.0's `AuthRequiredErrorData`).

`authenticate {resource, token}` hands the token to the provider's `AccountManager.sign_in`
(it goes to the runtime only: never logged, never kept here), then re-reads the agent's models
and announces the agent again (`root/agentsChanged`), without `protectedResources`. The sign-in is
the runtime's, shared by every client, as agentapi defines it; AHP's per-connection auth state
has nothing else to hold. A token pushed for an agent already signed in changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError

if TYPE_CHECKING:
    from ahp_bridge.host.connection import Connection
    from ahp_bridge.host.sessions import ProviderEntry, SessionManager

log = structlog.get_logger(__name__)

GITHUB_RESOURCE = "https://api.github.com"

#: How long a runtime may take to validate and store a token.
SIGN_IN_TIMEOUT = 60.0


def can_sign_in(entry: ProviderEntry) -> bool:
    return entry.capabilities.account and isinstance(entry.provider, agentapi.AccountManager)


def protected_resources(entry: ProviderEntry) -> list[dict[str, Any]]:
    """The agent's `protectedResources`: GitHub while its runtime is signed out, else none."""
    if not entry.signed_out:
        return []
    return [
        {
            "resource": GITHUB_RESOURCE,
            "resource_name": entry.provider.display_name(),
            "authorization_servers": ["https://github.com/login/oauth"],
            "scopes_supported": ["read:user", "user:email"],
            "required": True,
        }
    ]


def agent_fields(entry: ProviderEntry) -> dict[str, Any]:
    """What sign-in adds to an agent's `AgentInfo`."""
    resources = protected_resources(entry)
    return {"protectedResources": resources} if resources else {}


def require_signed_in(entry: ProviderEntry) -> None:
    """`-32007 AuthRequired` for an agent that cannot work until it is signed in."""
    if entry.signed_out:
        raise RpcError(
            E.AUTH_REQUIRED,
            f"Authentication required for {entry.provider.display_name()}: {entry.signed_out}",
            {"resources": protected_resources(entry)},
        )


class SignIn:
    """The `authenticate` request."""

    def __init__(self, sessions: SessionManager) -> None:
        self.sessions = sessions

    async def authenticate(self, conn: Connection, params: dict[str, Any]) -> dict[str, Any]:
        resource = params["resource"]
        token = params["token"]
        entries = [
            e
            for e in self.sessions.providers.values()
            if (resource == GITHUB_RESOURCE and can_sign_in(e))
            or any(r["resource"] == resource for r in protected_resources(e))
        ]
        if not entries:
            raise RpcError(
                E.INVALID_PARAMS,
                f"Invalid params: resource: {resource!r} is not protected by this host",
            )
        if not isinstance(token, str) or not token.strip():
            raise RpcError(E.INVALID_PARAMS, "Invalid params: token: empty")
        for entry in entries:
            if entry.signed_out:
                await self._sign_in(entry, token.strip())
        return {}

    async def _sign_in(self, entry: ProviderEntry, token: str) -> None:
        name = entry.provider.display_name()
        data = {"resources": protected_resources(entry)}
        if not can_sign_in(entry):
            raise RpcError(
                E.AUTH_REQUIRED,
                f"{name} cannot be signed in from a client: {entry.signed_out}",
                data,
            )
        assert isinstance(entry.provider, agentapi.AccountManager)
        try:
            with trio.fail_after(SIGN_IN_TIMEOUT):
                account = await entry.provider.sign_in(token)
        except agentapi.SignInRejected as exc:
            log.warning("sign-in refused", provider=entry.name)
            raise RpcError(
                E.AUTH_REQUIRED, f"{name} did not sign in with that token: {exc}", data
            ) from None
        except agentapi.EnvAccount as exc:
            raise RpcError(
                E.AUTH_REQUIRED, f"{name} cannot be signed in here: {exc}", data
            ) from None
        except trio.TooSlowError:
            raise RpcError(
                E.AUTH_REQUIRED,
                f"{name} did not finish signing in within {SIGN_IN_TIMEOUT:g}s; try again",
                data,
            ) from None
        except agentapi.AgentAPIError as exc:
            raise RpcError(E.AUTH_REQUIRED, f"{name} could not sign in: {exc}", data) from None
        log.info("signed in", provider=entry.name, login=account.login or None)
        await self.sessions.refresh_agent(entry)
