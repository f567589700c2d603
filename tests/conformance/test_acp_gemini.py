"""The ACP provider against every conformance check with a real coding agent: Gemini CLI.

``gemini --acp`` (npm ``@google/gemini-cli``, pinned by scripts/install-acp-agents.sh) runs
offline against the scripted Gemini API server on 127.0.0.1. The server turns the suite's
prompts into a plain answer, a turn held open until it is cancelled, a ``run_shell_command``
call (which Gemini CLI asks permission for, then runs itself), and a ``write_file`` of a file the
working directory already holds (Gemini CLI writes it through the bridge's
``fs/write_text_file``; a new file it cannot create that way, see docs/acp.md).
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
from tests.support.acp_agents import gemini_options, requires_gemini
from tests.support.gemini_server import GeminiServer
from tests.support.model_server import Hold, Text, ToolCall

pytestmark = requires_gemini

PROMPTS = Prompts(
    answer="conformance answer",
    long="conformance long",
    permission="conformance permission",
    edit="conformance edit",
)
EDITED = "notes.txt"


@pytest.fixture(scope="module")
def gemini_api() -> Iterator[GeminiServer]:
    never = threading.Event()  # the long turn's model call waits until Gemini CLI aborts it
    with GeminiServer() as srv:
        srv.script("conformance answer", [Text("Hello from the scripted model.")])
        srv.script("conformance long", [Text("Working on it"), Hold(never, timeout=60.0)])
        srv.script(
            "conformance permission",
            # A command that changes something: Gemini CLI runs read-only ones (echo, ls, ...)
            # without asking.
            [ToolCall("run_shell_command", {"command": "touch ran.txt", "description": "Touch"})],
            [Text("done")],
        )
        yield srv
        never.set()


@pytest.fixture
def gemini(gemini_api: GeminiServer, tmp_path: Path) -> Target:
    options = gemini_options(gemini_api.base_url, tmp_path / "home")
    workdir = tmp_path / "work"
    workdir.mkdir()
    (workdir / EDITED).write_text("before\n")
    gemini_api.script(
        "conformance edit",
        [ToolCall("write_file", {"file_path": str(workdir / EDITED), "content": "after\n"})],
        [Text("edited")],
    )

    def factory() -> AbstractAsyncContextManager[Provider]:
        provider: Provider = create_provider(options)
        return provider

    request = OpenRequest(workdir=str(workdir), title="AHP conformance")
    return Target("acp(gemini-cli)", factory, request, PROMPTS, timeout=60.0)


@pytest.mark.parametrize("check", CHECKS, ids=[c.name for c in CHECKS])
async def test_gemini_cli_over_acp_keeps_the_contract(gemini: Target, check: Check) -> None:
    result = await run_check(gemini, check)
    # Not applicable only where the suite allows it: no prompt makes Gemini CLI exit (an
    # optional scenario), and optional protocols the adapter does not implement.
    assert result.outcome is not Outcome.FAIL, result.line()
