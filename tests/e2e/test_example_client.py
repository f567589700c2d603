"""examples/ahp_client.py against the real bridge: the example a newcomer starts from connects,
lists the agents, creates a session, streams the demo tour, approves (or denies) its tool call
and answers its question; and the README's dozen lines, as printed there, do the same."""

from __future__ import annotations

import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from tests.e2e.test_cli import start_cli, stop

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


@pytest.fixture
async def url(tmp_path: Path) -> AsyncIterator[str]:
    process, url = await start_cli(
        "--provider",
        "fake",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        str(tmp_path / "data"),
        env={"AHP_BRIDGE__PROVIDERS__FAKE__TIME_SCALE": "0"},
    )
    yield url
    code, err = await stop(process, signal.SIGTERM)
    assert code == 0, err.decode()


async def python(*args: str) -> tuple[int, str, str]:
    with trio.fail_after(60):
        result = await trio.run_process(
            [sys.executable, *args],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env={**os.environ, "PYTHONPATH": str(EXAMPLES)},
        )
    return result.returncode, result.stdout.decode(), result.stderr.decode()


async def test_the_example_client_runs_the_tour_approving_and_answering(url: str) -> None:
    code, out, err = await python(str(EXAMPLES / "ahp_client.py"), url, "show me", "--answer", "Go")
    assert code == 0, err
    lines = [line for line in out.splitlines() if line]
    assert lines[0] == "agents: fake"
    assert lines[1] == "## Hello from the fake agent"  # streamed text, deltas joined
    events = [line for line in lines if line.startswith("[")]
    assert events == [
        "[tool] List the project: running",
        "[tool] List the project: done",
        "[tool] Write NOTES.md: running",
        "[permission] Write NOTES.md: approved",
        "[tool] Write NOTES.md: done",
        "[question] Which language should the examples use? -> Go",
        "[turn complete]",
    ]
    assert "Thanks, I wrote `NOTES.md`." in out  # the approval reached the agent
    assert "That is the whole tour." in out  # and so did the answer


async def test_the_example_client_denies_and_answers_in_free_text(url: str) -> None:
    code, out, err = await python(
        str(EXAMPLES / "ahp_client.py"), url, "show me", "--deny", "--answer", "Rust, please"
    )
    assert code == 0, err
    assert "[permission] Write NOTES.md: denied" in out
    assert "Understood, I left the files alone." in out
    assert "[question] Which language should the examples use? -> Rust, please" in out
    assert out.splitlines()[-1] == "[turn complete]"


async def test_a_wrong_url_is_one_line(tmp_path: Path) -> None:
    code, out, err = await python(str(EXAMPLES / "ahp_client.py"), "ws://127.0.0.1:9", "hi")
    assert (code, out) == (1, "")
    assert err.startswith("ahp_client: ") and len(err.splitlines()) == 1, err


async def test_a_url_without_its_token_says_to_use_the_printed_one(url: str) -> None:
    bare = url.split("?", 1)[0]
    code, out, err = await python(str(EXAMPLES / "ahp_client.py"), bare, "hi")
    assert (code, out) == (1, "")
    assert err == (
        "ahp_client: the host refused the connection (HTTP 403): use the URL ahp-bridge "
        "printed, with its ?tkn= connection token\n"
    )


async def test_the_readme_core_runs_as_printed(url: str, tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    [code] = [c for c in re.findall(r"```python\n(.*?)```", readme, re.S) if "ahp_client" in c]
    assert len([line for line in code.splitlines() if line]) <= 14  # a dozen lines or so
    script = tmp_path / "core.py"
    assert "?tkn=" in url  # the bridge's URL carries its token
    script.write_text(code.replace("ws://127.0.0.1:8765/?tkn=TOKEN", url))
    status, out, err = await python(str(script))
    assert status == 0, err
    assert out.splitlines()[0] == "['fake']"
    assert "Thanks, I wrote `NOTES.md`." in out and "That is the whole tour." in out
