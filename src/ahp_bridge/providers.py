"""Finding providers: each adapter registers a factory in the `ahp_bridge.providers` group."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from ahp_bridge.agentapi import Provider

GROUP = "ahp_bridge.providers"

ProviderFactory = Callable[[Mapping[str, Any]], Provider]


class UnknownProvider(LookupError):
    def __init__(self, name: str) -> None:
        known = ", ".join(sorted(available())) or "none"
        super().__init__(f"unknown provider {name!r} (installed: {known})")
        self.name = name


def available() -> list[str]:
    return sorted({ep.name for ep in entry_points(group=GROUP)})


def factory(name: str) -> ProviderFactory:
    for ep in entry_points(group=GROUP):
        if ep.name == name:
            loaded: ProviderFactory = ep.load()
            return loaded
    raise UnknownProvider(name)


def create(name: str, options: Mapping[str, Any] | None = None) -> Provider:
    return factory(name)(dict(options or {}))
