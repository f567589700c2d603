"""Fixtures that run a real bridge in-process on 127.0.0.1 with an ephemeral port."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio
from ahp_bridge_fake.record import RecordingProvider

from ahp_bridge import providers
from ahp_bridge.config import Settings
from ahp_bridge.host.app import run_bridge
from tests.support.ahp_client import AhpClient, open_client


class Bridge:
    def __init__(self, nursery: trio.Nursery, port: int, settings: Settings) -> None:
        self.nursery = nursery
        self.port = port
        self.settings = settings
        self.url = bridge_url(port, settings)
        self.clients: list[AhpClient] = []

    async def client(
        self, client_id: str = "client-1", *, initialize: bool = True, **kw: Any
    ) -> AhpClient:
        client = await open_client(self.nursery, self.url, client_id, **kw)
        self.clients.append(client)
        if initialize:
            await client.initialize(["ahp-root://"])
        return client


StartBridge = Callable[..., Any]


def bridge_url(port: int, settings: Settings) -> str:
    """The URL a client connects with: the bridge's port and its connection token."""
    token = settings.server.token
    return f"ws://127.0.0.1:{port}/" + (f"?tkn={token}" if token else "")


_Where = TypeVar("_Where", Path, Callable[[], Path])


def record_provider_calls(monkeypatch: pytest.MonkeyPatch, path: _Where) -> _Where:
    """Wrap every provider the bridge creates in the fake's RecordingProvider, writing to
    `path` (or, given a function, to the path it returns when the provider is created)."""
    real = providers.create

    def recorded(name: str, options: Any = None) -> Any:
        return RecordingProvider(real(name, options), path() if callable(path) else path)

    monkeypatch.setattr(providers, "create", recorded)
    return path


@pytest.fixture
def make_settings(tmp_path: Path) -> Callable[..., Settings]:
    def make(**server: Any) -> Settings:
        settings = Settings()
        settings.server.host = "127.0.0.1"
        settings.server.port = 0
        for key, value in server.items():
            setattr(settings.server, key, value)
        settings.bridge.data_dir = tmp_path / "data"
        settings.bridge.workdir = tmp_path
        # Tests make their projects anywhere under tmp_path (the default would be workdir + home).
        settings.bridge.allowed_directories = [tmp_path]
        settings.providers = {"fake": {"time_scale": 0.0}}
        if "token" not in server and settings.server.require_token:
            settings.server.token = f"test-{secrets.token_hex(8)}"  # as every bridge has one
        return settings

    return make


@pytest.fixture
async def start_bridge(
    nursery: trio.Nursery, make_settings: Callable[..., Settings]
) -> AsyncIterator[StartBridge]:
    bridges: list[Bridge] = []

    async def start(settings: Settings | None = None, **server: Any) -> Bridge:
        settings = settings or make_settings(**server)
        port = await nursery.start(run_bridge, settings)
        bridges.append(Bridge(nursery, port, settings))
        return bridges[-1]

    yield start
    for started in bridges:
        for client in started.clients:
            await client.close()


@pytest.fixture
async def bridge(start_bridge: StartBridge) -> Bridge:
    return await start_bridge()  # type: ignore[no-any-return]


@pytest.fixture
def recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every provider call of the bridge's fake, recorded (calls with their arguments)."""
    return record_provider_calls(monkeypatch, tmp_path / "calls.jsonl")
