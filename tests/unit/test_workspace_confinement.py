"""Confinement checks that a happy path never exercises: the default (empty) origin list, and a
parent directory swapped for a symlink leading out between the path check and the open.

The swap is a race the real filesystem will not produce on demand, so `os.open` is wrapped to
make it at exactly that moment (`tests/support/swap.py`): the path has been checked, the
descriptor is not open yet. Only the descriptor check after the open (`/proc/self/fd`) can
catch it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ahp_bridge.host.transport.server import ServerOptions, check_upgrade
from ahp_bridge.host.workspace import io as workspace_io
from ahp_bridge.host.workspace import writes as workspace_writes
from ahp_bridge.origins import origin_allowed
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError
from tests.support.swap import MOVED_AWAY, swap_parent_at_open

BROWSER_ORIGINS = ["https://evil.example", "http://localhost:3000", "http://127.0.0.1:8765"]

# -- the default origin list -------------------------------------------------------------------


@pytest.mark.parametrize("origin", BROWSER_ORIGINS)
def test_an_empty_origin_list_allows_no_origin(origin: str) -> None:
    assert origin_allowed(origin, ()) is False


@pytest.mark.parametrize("origin", BROWSER_ORIGINS)
def test_the_default_server_options_refuse_every_browser_origin(origin: str) -> None:
    options = ServerOptions()
    assert options.allowed_origins == ()
    assert check_upgrade(options, "/", {"origin": origin}) == "origin not allowed"
    assert check_upgrade(options, "/", {}) is None  # not a browser: nothing to check


# -- a parent swapped for a symlink between the check and the open -----------------------------


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """work/sub/f.txt inside the root; outside/f.txt, the same name where the swap leads."""
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "sub").mkdir(parents=True)
    (work / "sub" / "f.txt").write_text("inside\n")
    outside.mkdir()
    (outside / "f.txt").write_text("top secret\n")
    return {"work": work, "outside": outside, "file": work / "sub" / "f.txt"}


@pytest.fixture
def swap_before_open(monkeypatch: pytest.MonkeyPatch, tree: dict[str, Path]) -> list[str]:
    return swap_parent_at_open(monkeypatch, tree["file"], tree["outside"])


def leads_outside(file: Path) -> str:
    return (
        f"Permission denied: {file.as_uri()} leads outside the directories this host serves "
        f"through a symlink ({workspace_io.ROOTS_HINT})"
    )


def test_a_read_never_returns_a_file_a_swapped_parent_leads_to(
    tree: dict[str, Path], swap_before_open: list[str]
) -> None:
    roots = workspace_io.real_roots([str(tree["work"])])
    with pytest.raises(RpcError) as err:
        workspace_io.read_file(tree["file"].as_uri(), roots, None, 1 << 20)
    assert swap_before_open == [os.path.join(roots[0], "sub", "f.txt")]  # it happened
    assert (err.value.code, err.value.message) == (E.PERMISSION_DENIED, leads_outside(tree["file"]))


def test_a_write_never_reaches_a_file_a_swapped_parent_leads_to(
    tree: dict[str, Path], swap_before_open: list[str]
) -> None:
    roots = workspace_io.real_roots([str(tree["work"])])
    with pytest.raises(RpcError) as err:
        workspace_writes.write(
            tree["file"].as_uri(),
            roots,
            b"overwritten\n",
            create_only=False,
            mode="truncate",
            position=0,
            if_match=None,
            max_shift=1 << 20,
        )
    assert swap_before_open == [os.path.join(roots[0], "sub", "f.txt")]  # it happened
    assert (err.value.code, err.value.message) == (E.PERMISSION_DENIED, leads_outside(tree["file"]))
    assert (tree["outside"] / "f.txt").read_text() == "top secret\n"
    assert (tree["work"] / MOVED_AWAY / "f.txt").read_text() == "inside\n"


def test_a_write_never_creates_a_file_where_a_swapped_parent_leads(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    new = tree["work"] / "sub" / "new.txt"
    swapped = swap_parent_at_open(monkeypatch, new, tree["outside"])
    roots = workspace_io.real_roots([str(tree["work"])])
    with pytest.raises(RpcError) as err:
        workspace_writes.write(
            new.as_uri(),
            roots,
            b"created\n",
            create_only=True,
            mode="truncate",
            position=0,
            if_match=None,
            max_shift=1 << 20,
        )
    assert swapped == [os.path.join(roots[0], "sub", "new.txt")]  # it happened
    assert (err.value.code, err.value.message) == (E.PERMISSION_DENIED, leads_outside(new))
    assert sorted(p.name for p in tree["outside"].iterdir()) == ["f.txt"]  # nothing created
