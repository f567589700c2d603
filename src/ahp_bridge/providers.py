"""Finding providers: each adapter registers a factory in the `ahp_bridge.providers` group.

A configured provider is named by its `[providers.NAME]` table; `kind` in that table picks the
entry point (`[providers.claude] kind = "acp"`), so several instances of one adapter can run side
by side, each its own agent. Without `kind` the name is the entry point.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from ahp_bridge.agentapi import Provider

GROUP = "ahp_bridge.providers"

ProviderFactory = Callable[[Mapping[str, Any]], Provider]


@runtime_checkable
class StartupChecker(Protocol):
    """A provider that can tell, at start, what will keep it from working (a model server that
    does not answer, a credential that is not set) before a client's first turn finds out.

    The bridge asks once, after the provider started, without holding up the start, and logs
    each problem as one warning with its fix. Not part of agentapi: a host's concern, so an
    adapter implements it structurally, importing nothing.
    """

    async def startup_problems(self) -> list[tuple[str, str]]:
        """Each problem found, as (what is wrong, how to fix it); [] when all is well."""
        ...


class UnknownProvider(LookupError):
    def __init__(self, name: str, instance: str = "") -> None:
        known = ", ".join(sorted(available())) or "none"
        if instance and instance != name:
            message = f"provider {instance!r} has kind {name!r}, which is not installed"
        else:
            message = f"unknown provider {name!r}"
        super().__init__(f"{message} (installed: {known})")
        self.name = name


def available() -> list[str]:
    return sorted({ep.name for ep in entry_points(group=GROUP)})


def factory(name: str) -> ProviderFactory:
    for ep in entry_points(group=GROUP):
        if ep.name == name:
            loaded: ProviderFactory = ep.load()
            return loaded
    raise UnknownProvider(name)


#: Keys every `[providers.NAME]` table may hold, whatever its adapter: the host's own.
HOST_KEYS = ("kind", "data_dir")


def option_keys(kind: str) -> Mapping[str, Any] | None:
    """The option keys the adapter installed as `kind` declares (its package's `OPTION_KEYS`:
    None for any value, a mapping for a table of those keys), or None when it declares none or
    is not installed (its own factory then checks what it is given)."""
    import importlib

    for ep in entry_points(group=GROUP):
        if ep.name == kind:
            module = importlib.import_module(ep.module)
            keys: Mapping[str, Any] | None = getattr(module, "OPTION_KEYS", None)
            return keys
    return None


def kind_of(name: str, options: Mapping[str, Any] | None = None) -> str:
    """The entry point a configured provider runs: its `kind` option, else its own name."""
    kind = (options or {}).get("kind")
    return kind if isinstance(kind, str) and kind else name


def create(name: str, options: Mapping[str, Any] | None = None) -> Provider:
    """Create the provider configured as `name`; its options go to the factory without `kind`."""
    opts = dict(options or {})
    kind = kind_of(name, opts)
    opts.pop("kind", None)
    try:
        make = factory(kind)
    except UnknownProvider:
        raise UnknownProvider(kind, instance=name) from None
    return make(opts)
