"""The ACP provider and the agent's own model, through the real bridge with the SDK test agent.

A new session runs on the model the agent chose (its configuration's), shown as the default of
the session's settings; the bridge switches the model only when a client chooses another one.
And the scratch session the provider reads models from makes no noise in the log.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.config import Settings
from tests.e2e.conftest import StartBridge
from tests.e2e.test_acp_provider import started
from tests.support.acp_agents import sdk_agent_options
from tests.support.ahp_client import ready_chat

ROOT = "ahp-root://"


def agent_options(store: Path, **env: str) -> dict[str, Any]:
    options = sdk_agent_options(store)
    options["env"] = {**options["env"], **env}  # type: ignore[dict-item]
    return options


def acp_settings(make_settings: Callable[..., Settings], store: Path, **env: str) -> Settings:
    settings = make_settings()
    settings.providers = {"acp": agent_options(store, **env)}
    settings.bridge.providers = ["acp"]
    return settings


def switches(store: Path) -> list[str]:
    log = store / "switched.log"
    return [line.split()[1] for line in log.read_text().splitlines()] if log.exists() else []


async def test_a_new_session_keeps_the_agents_own_model(
    start_bridge: StartBridge, make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    # The agent runs model-b (its own configuration), the second of the models it lists.
    store = tmp_path / "store"
    bridge = await start_bridge(acp_settings(make_settings, store, ACP_TEST_MODEL="model-b"))
    client = await bridge.client()
    resolved = await client.request("resolveSessionConfig", {"channel": ROOT, "provider": "acp"})
    model = resolved["schema"]["properties"]["model"]
    assert (model["default"], model["enum"]) == ("model-b", ["model-b", "model-a"])
    assert resolved["values"]["model"] == "model-b"
    session, chat = await ready_chat(client, "acp", 15)
    assert client.states[session]["config"]["values"]["model"] == "model-b"
    turn = await client.start_turn(chat, "answer")
    await client.wait_for(
        lambda: any(t["id"] == turn for t in client.states[chat].get("turns", [])), 15
    )
    assert switches(store) == []  # nothing was switched: no client chose a model


async def test_a_model_a_client_chooses_is_set(
    start_bridge: StartBridge, make_settings: Callable[..., Settings], tmp_path: Path
) -> None:
    store = tmp_path / "store"
    bridge = await start_bridge(acp_settings(make_settings, store, ACP_TEST_MODEL="model-b"))
    client = await bridge.client()
    session = f"ahp-session:/{uuid.uuid4()}"
    await client.request(
        "createSession", {"channel": session, "provider": "acp", "config": {"model": "model-a"}}
    )
    await ready_chat(client, "acp", 15, session)
    assert switches(store) == ["model-a"]
    assert client.states[session]["config"]["values"]["model"] == "model-a"


async def test_the_model_probe_makes_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The scratch session's updates (here its commands, reported before its session/new
    answer) are the bridge's own session's: no "does not hold" warning at every start."""
    caplog.set_level(logging.DEBUG, logger="ahp_bridge_acp")
    async with started(
        tmp_path, env=agent_options(tmp_path, ACP_TEST_EARLY_UPDATE="1")["env"]
    ) as p:
        assert [m.id for m in await p.models()] == ["model-a", "model-b"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == []
    probed = [r.getMessage() for r in caplog.records if "does not hold" in r.getMessage()]
    assert probed == []
