"""``async with provider:`` for a provider: start, own a nursery for its turns, shut down, stop.

An agentapi Provider is an async context manager whose entry opens the nursery its turns run in
(so cancelling a caller never cancels a turn) and whose exit closes its conversations and stops
its runtime. ``ProviderLifetime`` is that enter/exit once; a provider subclasses it and says only
what it starts and stops:

- ``_on_start()``: runs on entry, inside the open nursery. If it fails, the nursery closes,
  ``_on_stop()`` runs and the error propagates.
- ``shutdown()`` (agentapi): runs on exit, shielded from the cancellation that may be ending the
  provider (closing must not be torn in half), for at most ``_shutdown_timeout`` seconds.
- ``_on_stop()``: runs on exit after the nursery closed (its turns are cancelled and done), also
  when shutdown failed.

The provider is *started* from the end of a successful entry to the start of its exit:
``_require_started()`` and ``_turn_nursery()`` raise Closed outside that (new work is refused
while it shuts down). The exception that ends the body is passed to the nursery, as ``async with
trio.open_nursery():`` would: a Cancelled raised by the nursery's own scope (a task of it
crashed) is absorbed there and the crash propagates.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from types import TracebackType
from typing import ClassVar, Self

import trio

from ahp_bridge.agentapi import AgentAPIError, Closed, Conversation


class ProviderLifetime:
    """Base class giving a provider its ``__aenter__``/``__aexit__`` (see the module)."""

    _lifetime_name: ClassVar[str] = "the provider"
    """How errors name the provider ("the fake provider")."""
    _owns_nursery: ClassVar[bool] = True
    """False for a provider whose work runs elsewhere (ACP: all on its asyncio thread): then no
    nursery is opened, so the body of ``async with`` is not inside one."""
    _shutdown_timeout: float = math.inf
    """Seconds the exit waits for shutdown() (a provider may set it per instance)."""

    _lifetime_cm: AbstractAsyncContextManager[trio.Nursery] | None = None
    _lifetime_nursery: trio.Nursery | None = None
    _lifetime_started = False
    _lifetime_entered = False

    # -- what a provider overrides ----------------------------------------------------------

    async def _on_start(self) -> None:
        """Start what the provider needs on entry (its nursery is open)."""

    async def _on_stop(self) -> None:
        """Stop what ``_on_start`` started, once the nursery is closed."""

    async def shutdown(self) -> None:
        """Close every conversation and stop the runtime (each provider says how)."""
        raise NotImplementedError

    # -- for the provider's own methods -----------------------------------------------------

    def _require_started(self) -> None:
        """Raise Closed unless the provider is started."""
        if not self._lifetime_started:
            raise Closed(f"{self._lifetime_name} is not started (use `async with provider:`)")

    def _turn_nursery(self) -> trio.Nursery:
        """The nursery the provider's turns and watches run in (Closed unless started)."""
        self._require_started()
        assert self._lifetime_nursery is not None, "this provider owns no nursery"
        return self._lifetime_nursery

    # -- the context manager ----------------------------------------------------------------

    async def __aenter__(self) -> Self:
        if self._lifetime_entered:
            raise RuntimeError(f"{self._lifetime_name} is already running")
        self._lifetime_entered = True
        try:
            if self._owns_nursery:
                cm = trio.open_nursery()
                self._lifetime_nursery = await cm.__aenter__()
                self._lifetime_cm = cm
            await self._on_start()
        except BaseException:
            await self._end(None)
            raise
        self._lifetime_started = True
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        if not self._lifetime_started:
            return None
        self._lifetime_started = False
        try:
            with trio.CancelScope(shield=True), trio.move_on_after(self._shutdown_timeout):
                await self.shutdown()
        finally:
            result = await self._end(exc)
        return result

    async def _end(self, exc: BaseException | None) -> bool | None:
        """Cancel what still runs in the nursery, wait for it to end (``exc`` is what ends the
        body, None after a failed start), then ``_on_stop``."""
        cm, nursery = self._lifetime_cm, self._lifetime_nursery
        self._lifetime_cm = self._lifetime_nursery = None
        try:
            if cm is None or nursery is None:
                return None
            nursery.cancel_scope.cancel()
            if exc is None:
                return await cm.__aexit__(None, None, None)
            return await cm.__aexit__(type(exc), exc, exc.__traceback__)
        finally:
            try:
                await self._on_stop()
            finally:
                self._lifetime_entered = False


async def close_each(conversations: Iterable[Conversation], log: logging.Logger, who: str) -> None:
    """A shutdown's first step: close each conversation in turn; one that fails (AgentAPIError)
    is logged as ``who`` on the provider's ``log``, and the rest still close."""
    for conversation in conversations:
        try:
            await conversation.close()
        except AgentAPIError as exc:
            log.warning("%s: closing a conversation failed: %s", who, exc)
