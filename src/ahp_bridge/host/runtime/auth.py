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

from typing import Any

import structlog
import trio

from ahp_bridge import agentapi
from ahp_bridge.engine.jobs import ShellJob
from ahp_bridge.engine.peers import Peer
from ahp_bridge.engine.providers import GITHUB_RESOURCE, ProviderInfo, protected_resources
from ahp_bridge.host.runtime.providers import Providers
from ahp_bridge.host.runtime.timeouts import gave_up
from ahp_bridge.host.shell import Shell
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError
from ahp_bridge.protocol.notifications import AUTH_REQUIRED
from ahp_bridge.protocol.uris import ROOT

__all__ = ["CHECK", "GITHUB_RESOURCE", "LOST_SIGN_IN", "SignIn", "SignInWatch"]

log = structlog.get_logger(__name__)

#: Why a runtime is signed out when neither it nor the failure says so.
LOST_SIGN_IN = "the runtime's sign-in expired or was revoked"
#: The shell job the engine asks for when a runtime may have lost its sign-in.
CHECK = "auth.check"


class SignIn:
    """The `authenticate` request."""

    def __init__(self, shell: Shell, providers: Providers) -> None:
        self.shell = shell
        self.providers = providers

    async def authenticate(self, peer: Peer, params: dict[str, Any]) -> dict[str, Any]:
        resource = params["resource"]
        token = params["token"]
        entries = [
            e
            for e in self.providers.infos.values()
            if (resource == GITHUB_RESOURCE and e.can_sign_in)
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

    async def _sign_in(self, entry: ProviderInfo, token: str) -> None:
        name = entry.display_name
        data = {"resources": protected_resources(entry)}
        if not entry.can_sign_in:
            raise RpcError(
                E.AUTH_REQUIRED,
                f"{name} cannot be signed in from a client: {entry.signed_out}",
                data,
            )
        provider = self.providers.providers[entry.name]
        assert isinstance(provider, agentapi.AccountManager)
        timeouts = self.providers.timeouts
        try:
            with trio.fail_after(timeouts.sign_in):
                account = await provider.sign_in(token)
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
                f"{timeouts.sign_in:g} s (timeouts.sign_in); try again",
                data,
            ) from None
        except agentapi.AgentAPIError as exc:
            raise RpcError(E.AUTH_REQUIRED, f"{name} could not sign in: {exc}", data) from None
        log.info("signed in", provider=entry.name, login=account.login or None)
        await self.providers.read_models(entry.name)
        self.shell.settle_with(lambda engine: engine.sessions.announce_agents())


class SignInWatch:
    """Notices a runtime that lost its sign-in while the bridge runs (see the module docstring).

    The engine asks for a check (`auth.check`) when a turn failed or a call raised `SignedOut`;
    one check runs per provider at a time, and a suspicion meanwhile makes one more after it.
    """

    def __init__(self, shell: Shell, providers: Providers) -> None:
        self.shell = shell
        self.providers = providers
        self._checking: set[str] = set()
        #: Providers suspected again while their check ran: checked once more after it.
        self._again: set[str] = set()

    async def check(self, job: ShellJob) -> None:
        name = str(job.data)
        entry = self.providers.infos.get(name)
        if entry is None or entry.signed_out or not entry.can_sign_in:
            return
        if name in self._checking:
            self._again.add(name)
            return
        self._checking.add(name)
        try:
            reason = await self._lost(entry)
            while reason is None and name in self._again and not entry.signed_out:
                self._again.discard(name)
                reason = await self._lost(entry)
        finally:
            self._checking.discard(name)
            self._again.discard(name)
        if reason is None or entry.signed_out:
            return
        entry.signed_out = reason
        log.warning("provider lost its sign-in", provider=name, fix=reason)
        params = {"channel": ROOT, "resource": protected_resources(entry)[0], "reason": "expired"}

        def lost(engine: Any) -> None:
            engine.sessions.announce_agents()
            engine.fanout.notify_each(tuple(engine.peers), AUTH_REQUIRED, params)

        self.shell.settle_with(lost)

    async def _lost(self, entry: ProviderInfo) -> str | None:
        """Why the runtime is signed out now, or None: still signed in, working without a
        sign-in (its own model), or it could not say in time."""
        provider = self.providers.providers[entry.name]
        assert isinstance(provider, agentapi.AccountManager)
        timeouts = self.providers.timeouts
        try:
            with trio.fail_after(timeouts.provider_read):
                account = await provider.account()
                if account.signed_in:
                    return None
                try:
                    await provider.check()
                except agentapi.SignedOut as exc:
                    return str(exc) or account.message or LOST_SIGN_IN
        except Exception as exc:
            error = gave_up(exc, timeouts, "provider_read")
            log.debug("sign-in check failed", provider=entry.name, error=error)
        return None
