"""The ACP provider against every conformance check with a real coding agent: Claude Code.

``claude-code-acp`` (npm, pinned by scripts/install-acp-agents.sh) runs offline against the
scripted Anthropic server on 127.0.0.1. The server turns the suite's prompts into a plain
answer, a turn held open until it is cancelled, and a Bash tool call, which Claude Code asks
permission for and then runs through the bridge's ``terminal/create``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from ahp_bridge_acp import create_provider

from ahp_bridge.agentapi import OpenRequest, Provider
from ahp_bridge.conformance import CHECKS, Check, Outcome, Prompts, Target, run_check
from tests.support.acp_agents import claude_options, requires_claude
from tests.support.anthropic_server import AnthropicServer
from tests.support.model_server import Hold, Text, ToolCall

pytestmark = requires_claude

PROMPTS = Prompts(
    answer="conformance answer",
    long="conformance long",
    permission="conformance permission",
    edit="conformance edit",
)


@pytest.fixture(scope="module")
def anthropic() -> Iterator[AnthropicServer]:
    never = threading.Event()  # the long turn's model call waits until Claude Code aborts it
    with AnthropicServer() as srv:
        srv.script("conformance answer", [Text("Hello from the scripted model.")])
        srv.script("conformance long", [Text("Working on it"), Hold(never, timeout=60.0)])
        srv.script(
            "conformance permission",
            [
                ToolCall(
                    "mcp__acp__Bash",
                    {"command": "echo conformance", "description": "Echo", "timeout": 60000},
                )
            ],
            [Text("done")],
        )
        yield srv


@pytest.fixture
def claude(anthropic: AnthropicServer, tmp_path: Path) -> Target:
    options = claude_options(anthropic.base_url, tmp_path / "home")
    workdir = tmp_path / "work"
    workdir.mkdir()
    # Re-scripted per check: Claude Code writes the absolute path, in this check's workdir.
    anthropic.script(
        "conformance edit",
        [
            ToolCall(
                "mcp__acp__Write",
                {"file_path": str(workdir / "edited.txt"), "content": "written by the suite\n"},
            )
        ],
        [Text("written")],
    )

    def factory() -> AbstractAsyncContextManager[Provider]:
        provider: Provider = create_provider(options)
        return provider

    request = OpenRequest(workdir=str(workdir), title="AHP conformance")
    return Target("acp(claude-code)", factory, request, PROMPTS, timeout=60.0)


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
async def test_claude_code_over_acp_keeps_the_contract(claude: Target, check: Check) -> None:
    result = await run_check(claude, check)
    # Not applicable only where the suite allows it: no prompt makes Claude Code exit (an
    # optional scenario), and optional protocols the adapter does not implement.
    assert result.outcome is not Outcome.FAIL, result.line()
