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

A runtime can also lose its sign-in while the bridge runs (a token expires or is revoked).
`SignInWatch` notices it at the next failed turn, or when opening or sending raises `SignedOut`:
it asks the runtime's `AccountManager.account()` (bounded, one check per provider at a time; a
check that fails or times out changes nothing), and when that says signed out and `check()`
agrees with `SignedOut` (a runtime that works without an account, such as Copilot with its own
model, passes `check()`), the agent is marked signed out again: announced with
`protectedResources`, `createSession` answers -32007, and every connection hears
`auth/required {channel, resource, reason: "expired"}` in its wire line (0.7 has no such
notification: its peers learn it from `root/agentsChanged`). `authenticate` then works as above.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.host.hub import Subscriber, notify_each
from ahp_bridge.host.timeouts import gave_up
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.notifications import AUTH_REQUIRED
from ahp_bridge.protocol.uris import ROOT

if TYPE_CHECKING:
    from ahp_bridge.host.connection import Connection
    from ahp_bridge.host.sessions import ProviderEntry, SessionManager

log = structlog.get_logger(__name__)

GITHUB_RESOURCE = "https://api.github.com"

#: Why a runtime is signed out when neither it nor the failure says so.
LOST_SIGN_IN = "the runtime's sign-in expired or was revoked"


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
            with trio.fail_after(self.sessions.timeouts.sign_in):
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
                f"{name} did not finish signing in within "
                f"{self.sessions.timeouts.sign_in:g} s (timeouts.sign_in); try again",
                data,
            ) from None
        except agentapi.AgentAPIError as exc:
            raise RpcError(E.AUTH_REQUIRED, f"{name} could not sign in: {exc}", data) from None
        log.info("signed in", provider=entry.name, login=account.login or None)
        await self.sessions.refresh_agent(entry)


class SignInWatch:
    """Notices a runtime that lost its sign-in while the bridge runs (see the module docstring).

    `peers` are the host's initialized connections (the RPC handler hands them over).
    """

    def __init__(self, sessions: SessionManager) -> None:
        self.sessions = sessions
        self.peers: Collection[Subscriber] = ()
        self._checking: set[str] = set()
        #: Providers suspected again while their check ran: checked once more after it.
        self._again: set[str] = set()

    def suspect(self, entry: ProviderEntry) -> None:
        """A turn failed, or a call raised `SignedOut`: check the runtime's sign-in, unless it
        is known lost or not the runtime's to manage (no AccountManager). One check runs per
        provider at a time; a suspicion meanwhile makes one more check after it."""
        if entry.signed_out or not can_sign_in(entry):
            return
        if entry.name in self._checking:
            self._again.add(entry.name)
            return
        self._checking.add(entry.name)
        self.sessions.nursery.start_soon(self._check, entry)

    async def _check(self, entry: ProviderEntry) -> None:
        try:
            reason = await self._lost(entry)
            while reason is None and entry.name in self._again and not entry.signed_out:
                self._again.discard(entry.name)
                reason = await self._lost(entry)
        finally:
            self._checking.discard(entry.name)
            self._again.discard(entry.name)
        if reason is None or entry.signed_out:
            return
        entry.signed_out = reason
        log.warning("provider lost its sign-in", provider=entry.name, fix=reason)
        self.sessions.announce_agents()
        params = {"channel": ROOT, "resource": protected_resources(entry)[0], "reason": "expired"}
        notify_each(tuple(self.peers), AUTH_REQUIRED, params)

    async def _lost(self, entry: ProviderEntry) -> str | None:
        """Why the runtime is signed out now, or None: still signed in, working without a
        sign-in (its own model), or it could not say in time."""
        provider = entry.provider
        assert isinstance(provider, agentapi.AccountManager)
        try:
            with trio.fail_after(self.sessions.timeouts.provider_read):
                account = await provider.account()
                if account.signed_in:
                    return None
                try:
                    await entry.provider.check()
                except agentapi.SignedOut as exc:
                    return str(exc) or account.message or LOST_SIGN_IN
        except Exception as exc:
            error = gave_up(exc, self.sessions.timeouts, "provider_read")
            log.debug("sign-in check failed", provider=entry.name, error=error)
        return None
