"""The configured providers: started for the bridge's lifetime, their models read, their facts.

Each provider is an async context manager (agentapi: turns run in a nursery it owns). It is
entered once at start; its models are read then (bounded by `timeouts.models`) and again after a
sign-in. What the engine decides with is handed over as an `engine.providers.ProviderInfo`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import structlog
import trio

from ahp_bridge import agentapi, providers
from ahp_bridge.engine.providers import ProviderInfo
from ahp_bridge.engine.timeouts import Timeouts
from ahp_bridge.host.runtime.timeouts import gave_up

__all__ = ["Providers"]

log = structlog.get_logger(__name__)


class Providers:
    """The running providers, by name, and what the engine knows of each."""

    def __init__(
        self,
        names: list[str],
        options: Mapping[str, Mapping[str, Any]],
        *,
        instances: Mapping[str, agentapi.Provider] | None = None,
        timeouts: Timeouts,
    ) -> None:
        self.names = list(dict.fromkeys(names))
        self._options = {k: dict(v) for k, v in options.items()}
        self._instances = dict(instances or {})
        self.timeouts = timeouts
        self.providers: dict[str, agentapi.Provider] = {}
        self.infos: dict[str, ProviderInfo] = {}

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Providers]:
        """Start every configured provider and read its models; stop them all at exit."""
        async with AsyncExitStack() as stack:
            for name in self.names:
                provider = self._instances.get(name) or providers.create(
                    name, self._options.get(name, {})
                )
                await stack.enter_async_context(provider)
                self.providers[name] = provider
                capabilities = provider.capabilities()
                self.infos[name] = ProviderInfo(
                    name,
                    provider.display_name(),
                    capabilities,
                    can_sign_in=capabilities.account
                    and isinstance(provider, agentapi.AccountManager),
                    skill_setter=isinstance(provider, agentapi.SkillGlobalSetter),
                )
            for name in self.names:
                await self.read_models(name)
            yield self

    async def warn_at_start(self) -> None:
        """Every provider's start-up problems (`providers.StartupChecker`), each one warning
        with its fix; run beside the bridge, so a slow check holds up nothing. A check that
        fails or runs out of time (`timeouts.models`) is itself worth a warning."""

        async def check(name: str, provider: providers.StartupChecker) -> None:
            found: list[tuple[str, str]] = []
            try:
                with trio.fail_after(self.timeouts.models):
                    found = await provider.startup_problems()
            except Exception as exc:
                slow = isinstance(exc, trio.TooSlowError)
                error = gave_up(exc, self.timeouts, "models") if slow else str(exc)
                log.warning("provider start-up check failed", provider=name, error=error)
            for problem, fix in found:
                log.warning(problem, provider=name, fix=fix)

        async with trio.open_nursery() as nursery:
            for name, provider in self.providers.items():
                if isinstance(provider, providers.StartupChecker):
                    nursery.start_soon(check, name, provider)

    async def read_models(self, name: str) -> None:
        """Read a provider's models and whether its runtime is signed in (into its info)."""
        info = self.infos[name]
        info.signed_out = ""
        info.models = []
        try:
            with trio.fail_after(self.timeouts.models):
                info.models = list(await self.providers[name].models())
        except agentapi.SignedOut as exc:
            info.signed_out = str(exc)
            log.warning("provider is signed out", provider=name, fix=str(exc))
        except agentapi.Unsupported as exc:
            log.info("provider lists no models", provider=name, reason=type(exc).__name__)
        except Exception as exc:
            slow = isinstance(exc, trio.TooSlowError)
            error = gave_up(exc, self.timeouts, "models") if slow else str(exc)
            log.warning("provider models failed", provider=name, error=error)
