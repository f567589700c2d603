"""Helpers for tests that drive the real Copilot CLI offline.

``CLI_PATH`` is where the tests find the CLI: ``$COPILOT_CLI_PATH``, else the path
scripts/install-copilot-cli.sh installs to (the script says, ``--print-path``), so the install
location is written in one place. ``requires_cli`` marks a test that needs it: without the CLI
the test skips, except under CI (``CI=true``), where a missing CLI fails the run (see
tests/conftest.py).

``CliServer`` runs one CLI in server mode (``--headless --port 0``) with HOME and COPILOT_HOME in a
temporary directory and a random connection token, so a whole test module shares one process and
each test's provider connects to it (``cli_url``). ``RecordingSink`` is a thread-safe EventSink
that trio tests can wait on.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from ahp_bridge.agentapi import (
    Context,
    Event,
    EventKind,
    InteractionState,
    Item,
    ItemKind,
    ModelSelection,
    Subagent,
    TokenUsage,
    Turn,
    TurnState,
)

REPO = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = REPO / "scripts" / "install-copilot-cli.sh"


def installed_cli_path() -> Path:
    """Where scripts/install-copilot-cli.sh puts the CLI binary (asked, not recomputed)."""
    out = subprocess.run(
        ["bash", str(INSTALL_SCRIPT), "--print-path"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip())


CLI_PATH = Path(os.environ.get("COPILOT_CLI_PATH") or installed_cli_path())
MISSING_CLI = f"Copilot CLI not installed at {CLI_PATH} (run scripts/install-copilot-cli.sh)"


def cli_missing() -> bool:
    return not CLI_PATH.is_file()


def under_ci() -> bool:
    """CI=true (or 1/yes) in the environment: a missing CLI is a failure, not a skip."""
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


requires_cli = pytest.mark.requires_copilot_cli
TOKEN_ENV = "AHP_TEST_COPILOT_CONNECTION_TOKEN"


def offline_env(home: Path) -> dict[str, str]:
    drop = {"GITHUB_TOKEN", "GH_TOKEN", "COPILOT_GITHUB_TOKEN", "COPILOT_CONNECTION_TOKEN"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["HOME"] = str(home)
    env["COPILOT_HOME"] = str(home / "copilot-home")
    return env


class CliServer:
    """A Copilot CLI in server mode on 127.0.0.1."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.token = secrets.token_hex(16)
        self.port = 0
        self._proc: subprocess.Popen[str] | None = None
        self._drain: threading.Thread | None = None

    def start(self) -> CliServer:
        env = offline_env(self.home)
        env["COPILOT_CONNECTION_TOKEN"] = self.token
        args = [str(CLI_PATH), "--headless", "--no-auto-update", "--no-auto-login"]
        args += ["--log-level", "warning", "--port", "0"]
        self._proc = subprocess.Popen(
            args,
            cwd=self.home,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            m = re.search(r"listening on port (\d+)", line, re.IGNORECASE)
            if m:
                self.port = int(m.group(1))
                break
        if not self.port:
            self.stop()
            raise RuntimeError("the Copilot CLI did not start listening")
        out = self._proc.stdout
        self._drain = threading.Thread(target=lambda: [None for _ in out], daemon=True)
        self._drain.start()
        return self

    @property
    def url(self) -> str:
        return f"127.0.0.1:{self.port}"

    def options(self, model_base_url: str, **extra: Any) -> dict[str, Any]:
        """Provider options that connect to this server with a BYOK model at the given URL."""
        os.environ[TOKEN_ENV] = self.token
        opts: dict[str, Any] = {
            "cli_url": self.url,
            "cli_token_env": TOKEN_ENV,
            "byok": {
                "base_url": model_base_url,
                "model": "fake-model",
                "models": ["fake-model-2"],
            },
            "workdir": str(self.home),
        }
        opts.update(extra)
        return opts

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
        if self._drain is not None:
            self._drain.join(5)


@contextmanager
def cli_server(home: Path) -> Iterator[CliServer]:
    srv = CliServer(home).start()
    try:
        yield srv
    finally:
        srv.stop()


class RecordingSink:
    """A thread-safe EventSink; trio tests ``await wait_for(...)`` on what it received."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._token = trio.lowlevel.current_trio_token()
        self._changed = trio.Event()

    def emit(self, event: Event) -> None:
        with self._lock:
            self.events.append(event)
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._wake)

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    def snapshot(self) -> list[Event]:
        with self._lock:
            return list(self.events)

    async def wait_for(self, pred: Callable[[Event], bool], timeout: float = 60) -> Event:
        """The first event (already received or arriving) that matches ``pred``."""
        with trio.fail_after(timeout):
            while True:
                for ev in self.snapshot():
                    if pred(ev):
                        return ev
                await self._changed.wait()

    async def turn_end(self, after: int = 0, timeout: float = 60) -> Turn:
        """The first turn that ended (any state but working) at or after event index ``after``.

        By then every item of the turn has arrived, so every delta so far must carry the kind
        of its item (checked here, for every test that waits for a turn)."""
        with trio.fail_after(timeout):
            while True:
                for ev in self.snapshot()[after:]:
                    if ev.kind is EventKind.TURN and ev.turn and ev.turn.state != TurnState.WORKING:
                        mislabelled = self.mislabelled_deltas()
                        assert not mislabelled, mislabelled
                        return ev.turn
                await self._changed.wait()

    # views

    def of(self, kind: EventKind) -> list[Event]:
        return [e for e in self.snapshot() if e.kind is kind]

    def items(self, kind: ItemKind | None = None, agent: str | None = None) -> list[Any]:
        """Latest version of each item (upserts folded by agent and id), in first-seen order."""
        out: dict[tuple[str, str], Any] = {}
        for e in self.of(EventKind.ITEM):
            assert e.item is not None
            out[(e.item.agent_id, e.item.id)] = e.item
        items = list(out.values())
        if kind is not None:
            items = [i for i in items if i.kind is kind]
        if agent is not None:
            items = [i for i in items if i.agent_id == agent]
        return items

    def turns(self) -> list[Turn]:
        return [e.turn for e in self.of(EventKind.TURN) if e.turn is not None]

    def tokens(self) -> list[TokenUsage]:
        return [e.tokens for e in self.of(EventKind.TOKENS) if e.tokens is not None]

    def contexts(self) -> list[Context]:
        return [e.context for e in self.of(EventKind.CONTEXT) if e.context is not None]

    def subagents(self) -> list[Subagent]:
        return [e.subagent for e in self.of(EventKind.SUBAGENT) if e.subagent is not None]

    def model_selections(self) -> list[ModelSelection]:
        sels = self.of(EventKind.MODEL_SELECTION)
        return [e.model_selection for e in sels if e.model_selection is not None]

    def deltas(self, item: Item) -> str:
        """The text streamed for ``item``. Every delta for it must carry the item's kind: a
        reasoning delta labelled assistant would stream the model's thinking as answer text."""
        mine = [
            e.delta
            for e in self.of(EventKind.DELTA)
            if e.delta and (e.delta.agent_id, e.delta.item_id) == (item.agent_id, item.id)
        ]
        kinds = {d.kind for d in mine}
        assert kinds <= {item.kind}, f"{item.kind.value} item {item.id!r} streamed as {kinds}"
        return "".join(d.text for d in mine)

    def mislabelled_deltas(self) -> list[str]:
        """Deltas whose kind differs from the kind of the item they belong to (once it came)."""
        kinds = {(i.agent_id, i.id): i.kind for i in self.items()}
        out = []
        for e in self.of(EventKind.DELTA):
            assert e.delta is not None
            kind = kinds.get((e.delta.agent_id, e.delta.item_id))
            if kind is not None and e.delta.kind is not kind:
                out.append(f"{e.delta.kind.value} delta for {kind.value} item {e.delta.item_id!r}")
        return out

    def interactions(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for e in self.of(EventKind.INTERACTION):
            assert e.interaction is not None
            out[e.interaction.id] = e.interaction
        return out

    async def pending_interaction(self, timeout: float = 60) -> Any:
        ev = await self.wait_for(
            lambda e: (
                e.kind is EventKind.INTERACTION
                and e.interaction is not None
                and e.interaction.state is InteractionState.PENDING
            ),
            timeout,
        )
        return ev.interaction
