"""The ACP provider against every conformance check, with a real ACP agent subprocess.

The agent is ``tests/support/acp_agent.py``, built on the official SDK's agent side; every check
starts its own provider, and so its own agent process. The same checks also run through the
gRPC hop (serve-provider + remote), as the other real providers do.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from pathlib import Path

import pytest
from ahp_bridge_acp import create_provider

from ahp_bridge.agentapi import OpenRequest, Provider
from ahp_bridge.conformance import CHECKS, Check, Outcome, Prompts, Target, run_check
from tests.conformance.test_remote import served
from tests.support.acp_agents import sdk_agent_options

PROMPTS = Prompts(answer="answer", long="long", permission="permission", exit="exit")


def acp_target(tmp_path: Path) -> Target:
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    options = sdk_agent_options(tmp_path / "store")
    # The test agent writes through fs/write_text_file and shows the diff on its tool call.
    prompts = replace(PROMPTS, edit=f"write {workdir / 'edited.txt'} written by the suite")

    def factory() -> AbstractAsyncContextManager[Provider]:
        provider: Provider = create_provider(options)
        return provider

    request = OpenRequest(workdir=str(workdir), title="AHP conformance")
    return Target("acp", factory, request, prompts, timeout=30.0)


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
async def test_acp_keeps_the_contract(tmp_path: Path, check: Check) -> None:
    result = await run_check(acp_target(tmp_path), check)
    # Not applicable only where the suite allows it (optional protocols the adapter lacks).
    assert result.outcome is not Outcome.FAIL, result.line()


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
async def test_acp_served_over_grpc_keeps_the_contract(tmp_path: Path, check: Check) -> None:
    result = await run_check(served(acp_target(tmp_path)), check)
    assert result.outcome is not Outcome.FAIL, result.line()
