"""What the bridge keeps on disk is its user's only, whatever the umask: directories 0700,
files 0600 (the catalog and its WAL and SHM files, the lock, the fake's transcripts, the
connection token, Copilot's home and the ACP agents' directories).

The umask of this test process is set to a permissive 0o022 (restored after), the common
default that made the data directory 0755 and the catalog 0644 before.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from ahp_bridge_copilot.client import make_client
from ahp_bridge_copilot.options import CopilotOptions
from ahp_bridge_support.private import private_dir, private_file

from ahp_bridge.config import Settings
from ahp_bridge.host.transport import connect
from tests.e2e.conftest import StartBridge
from tests.support.ahp_client import create


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def modes(root: Path) -> dict[str, int]:
    """Every path under `root` (itself included) and its permission bits."""
    found = {".": stat.S_IMODE(root.stat().st_mode)}
    for path in root.rglob("*"):
        found[str(path.relative_to(root))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def wrong(found: dict[str, int], root: Path) -> dict[str, str]:
    out = {}
    for rel, mode in found.items():
        path = root / rel
        want = 0o700 if path.is_dir() else 0o600
        if mode != want:
            out[rel] = oct(mode)
    return out


async def test_the_data_directory_and_everything_in_it_are_private(
    start_bridge: StartBridge, make_settings: Any, tmp_path: Path, permissive_umask: None
) -> None:
    settings = make_settings()
    data = settings.bridge.data_dir
    bridge = await start_bridge(settings)
    client = await bridge.client(versions=("1.0.0",))
    _, chat = await create(client, tmp_path)
    await client.start_turn(chat, "hello")
    await client.wait_for(lambda: client.states[chat].get("activeTurn", {}).get("responseParts"))
    with trio.fail_after(10):  # the fake records the turn's items as they come
        while not list(data.rglob("*.jsonl")):
            await trio.sleep(0.05)
    found = modes(data)
    assert "catalog.sqlite3" in found and "catalog.sqlite3-wal" in found, found
    assert any(rel.endswith(".jsonl") for rel in found), found  # the fake's transcript
    assert wrong(found, data) == {}


def test_a_generated_connection_token_and_its_directory_are_private(
    tmp_path: Path, permissive_umask: None
) -> None:
    settings = Settings()
    settings.server.host = "0.0.0.0"
    settings.bridge.data_dir = tmp_path / "fresh" / "data"
    source = connect.ensure_token(settings)
    assert source is not None and source.path is not None
    assert wrong(modes(settings.bridge.data_dir), settings.bridge.data_dir) == {}


def test_copilots_home_is_private_before_its_cli_starts(
    tmp_path: Path, permissive_umask: None
) -> None:
    home = tmp_path / "providers" / "copilot"
    make_client(CopilotOptions(data_dir=str(home)), Path("/nonexistent/copilot"))
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE(home.parent.stat().st_mode) == 0o700  # made by it, so private too


def test_the_helpers_tighten_what_exists_already(tmp_path: Path, permissive_umask: None) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    (loose / "f").write_text("x")
    os.chmod(loose / "f", 0o644)
    private_dir(loose)
    private_file(loose / "f")
    assert wrong(modes(loose), loose) == {}
    assert (loose / "f").read_text() == "x"  # tightened, not truncated
