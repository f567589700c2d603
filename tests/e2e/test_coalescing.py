"""A burst of provider deltas reaches clients as one merged delta, with the same final text.

The provider here is the real fake behind a sink wrapper that holds deltas back and releases
them in one burst when the next non-delta event comes, the way a fast runtime on another thread
outpaces the host. The bridge must then merge the burst (fewer envelopes) without changing
what any client's reduced state says.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge import agentapi, providers
from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge
from tests.e2e.test_host_core import comparable

SCRIPT = Path(__file__).parent / "scripts" / "bridge.toml"


class BurstSink:
    """Holds deltas back; releases them, then the event that ended the burst, all at once."""

    def __init__(self, inner: agentapi.EventSink, counts: dict[str, int]) -> None:
        self.inner = inner
        self.held: list[agentapi.Event] = []
        self.counts = counts

    def emit(self, event: agentapi.Event) -> None:
        if event.kind == agentapi.EventKind.DELTA:
            self.counts["deltas"] += 1
            self.held.append(event)
            return
        for held in self.held:
            self.inner.emit(held)
        self.held.clear()
        self.inner.emit(event)


class BurstProvider:
    """The fake, with every conversation's events passed through a BurstSink."""

    def __init__(self, inner: Any, counts: dict[str, int]) -> None:
        self.inner = inner
        self.counts = counts

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def __aenter__(self) -> BurstProvider:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.inner.__aexit__(*exc)

    async def open(self, req: agentapi.OpenRequest) -> agentapi.Conversation:
        assert req.events is not None
        sink = BurstSink(req.events, self.counts)
        conversation: agentapi.Conversation = await self.inner.open(
            req.model_copy(update={"events": sink})
        )
        return conversation


async def test_a_burst_of_deltas_is_one_envelope_with_the_same_text(
    start_bridge: StartBridge,
    make_settings: Callable[..., Settings],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counts = {"deltas": 0}
    real = providers.create
    monkeypatch.setattr(
        providers, "create", lambda name, options=None: BurstProvider(real(name, options), counts)
    )
    settings = make_settings()
    settings.providers = {"fake": {"script": str(SCRIPT), "time_scale": 0.0}}
    bridge = await start_bridge(settings)
    client = await bridge.client("burst")
    session = f"ahp-session:/{uuid.uuid4()}"
    await client.request("createSession", {"channel": session, "provider": "fake"})
    await client.subscribe(session)
    await client.wait_for(lambda: client.states[session].get("lifecycle") == "ready")
    chat = client.states[session]["defaultChat"]
    await client.subscribe(chat)
    await client.dispatch(
        chat,
        {
            "type": "chat/turnStarted",
            "turnId": "t1",
            "startedAt": "2026-01-01T00:00:00.000Z",
            "message": {"text": "stream", "origin": {"kind": "user"}},
        },
    )
    await client.wait_for(lambda: "chat/turnComplete" in client.action_types(chat))
    [turn] = client.states[chat]["turns"]
    markdown = [p["content"] for p in turn["responseParts"] if p["kind"] == "markdown"]
    assert markdown == ["Hello from the fake, streamed in chunks."]
    assert counts["deltas"] > 1  # the fake streamed it in several chunks ...
    deltas = [a for a in client.actions(chat) if a["type"] == "chat/delta"]
    assert len(deltas) <= 1  # ... and the bridge sent the burst as one (or folded it in the part)
    host = (await client.request("subscribe", {"channel": chat}))["snapshot"]["state"]
    assert comparable(client.states[chat]) == comparable(host)
