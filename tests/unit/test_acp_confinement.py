"""The ACP adapter's file and terminal doors, on real files and real subprocesses.

``Workspace`` serves ``fs/read_text_file`` and ``fs/write_text_file``; ``Terminals`` serves
``terminal/*``. Refusals are JSON-RPC invalid-params errors whose message is the contract (the
agent, and through it the model, reads it to adapt), so tests pin code and message.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from acp.exceptions import RequestError
from ahp_bridge_acp.terminals import Terminal, Terminals
from ahp_bridge_acp.workspace import Workspace

INVALID_PARAMS = -32602
OUTSIDE = "is outside the session's working directories"


def refused(exc: pytest.ExceptionInfo[RequestError]) -> str:
    """The refusal's message, once its code and data are the invalid-params kind."""
    assert exc.value.code == INVALID_PARAMS
    assert exc.value.data == {"reason": str(exc.value)}
    return str(exc.value)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "root"
    path.mkdir()
    return path


@pytest.fixture
def sibling(tmp_path: Path) -> Path:
    """``root-evil`` next to ``root``: its path starts with the root's path."""
    path = tmp_path / "root-evil"
    path.mkdir()
    (path / "x").write_text("secret\n")
    return path


# --- files ---------------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["plain", "trailing slash"])
def test_a_sibling_sharing_the_roots_prefix_is_outside(
    root: Path, sibling: Path, spelling: str
) -> None:
    ws = Workspace([f"{root}/" if spelling == "trailing slash" else str(root)], max_bytes=1024)
    target = f"{sibling}/x"
    with pytest.raises(RequestError, match=OUTSIDE) as exc:
        ws.read(target, None, None)
    assert refused(exc) == (
        f"the path {target!r} {OUTSIDE} ({root}); the bridge only reads and writes inside them"
    )
    with pytest.raises(RequestError, match=OUTSIDE) as exc:
        ws.write(target, "overwritten")
    refused(exc)
    with pytest.raises(RequestError, match=OUTSIDE) as exc:
        ws.write(f"{sibling}/new/deep.txt", "planted")
    refused(exc)
    assert (sibling / "x").read_text() == "secret\n"
    assert sorted(p.name for p in sibling.iterdir()) == ["x"]
    assert not ws.within(target) and not ws.within(str(sibling))
    assert ws.within(str(root)) and ws.within(f"{root}/x")


def test_a_symlink_into_the_sibling_is_outside(root: Path, sibling: Path) -> None:
    (root / "link").symlink_to(sibling)
    ws = Workspace([str(root)], max_bytes=1024)
    with pytest.raises(RequestError, match=OUTSIDE) as exc:
        ws.read(f"{root}/link/x", None, None)
    refused(exc)
    with pytest.raises(RequestError, match=OUTSIDE) as exc:
        ws.write(f"{root}/link/x", "overwritten")
    refused(exc)
    assert (sibling / "x").read_text() == "secret\n"


@pytest.fixture
def ten_lines(root: Path) -> str:
    path = root / "ten.txt"
    path.write_text("".join(f"{n}2345678{n}\n" for n in range(10)))  # line n: n2345678n
    return str(path)


def lines(first: int, last: int) -> str:
    """Lines ``first`` to ``last`` (1-based, inclusive) of ``ten_lines``."""
    return "".join(f"{n}2345678{n}\n" for n in range(first - 1, last))


@pytest.mark.parametrize(
    ("line", "limit", "got"),
    [
        pytest.param(None, 3, lines(1, 3), id="three lines: the cap exactly"),
        pytest.param(1, 3, lines(1, 3), id="from line 1"),
        pytest.param(8, None, lines(8, 10), id="line 8 to the end: the cap exactly"),
        pytest.param(10, 1, lines(10, 10), id="the last line"),
        pytest.param(9, 5, lines(9, 10), id="a limit past the end stops there"),
        pytest.param(11, None, "", id="past the end"),
        pytest.param(11, 2, "", id="past the end, limited"),
        pytest.param(4, 0, "", id="no lines from line 4"),
        pytest.param(None, 0, "", id="no lines"),
    ],
)
def test_a_part_of_a_file_over_the_cap_is_read_by_line_and_limit(
    ten_lines: str, root: Path, line: int | None, limit: int | None, got: str
) -> None:
    ws = Workspace([str(root)], max_bytes=30)
    assert ws.read(ten_lines, line, limit) == got


@pytest.mark.parametrize(("line", "limit"), [(None, 4), (1, 4), (7, None), (1, None), (2, 9)])
def test_a_part_over_the_cap_is_refused(
    ten_lines: str, root: Path, line: int | None, limit: int | None
) -> None:
    ws = Workspace([str(root)], max_bytes=30)
    with pytest.raises(RequestError, match="is over the bridge's max_file_bytes") as exc:
        ws.read(ten_lines, line, limit)
    assert refused(exc) == (
        f"the requested part of {ten_lines!r} is over the bridge's max_file_bytes (30); "
        "ask for fewer lines"
    )


def test_the_cap_counts_bytes_not_characters(root: Path) -> None:
    path = root / "accents.txt"
    path.write_text("éééé\n" * 4)  # 9 bytes, 5 characters a line
    ws = Workspace([str(root)], max_bytes=30)
    assert ws.read(str(path), 2, 3) == "éééé\n" * 3  # 27 bytes
    with pytest.raises(RequestError, match="is over the bridge's max_file_bytes") as exc:
        ws.read(str(path), 1, 4)  # 36 bytes, 20 characters
    refused(exc)


def test_a_whole_file_over_the_cap_is_refused_and_one_at_the_cap_is_not(
    ten_lines: str, root: Path
) -> None:
    with pytest.raises(RequestError, match="read it in parts with line and limit") as exc:
        Workspace([str(root)], max_bytes=99).read(ten_lines, None, None)
    assert refused(exc) == (
        f"the file {ten_lines!r} has 100 bytes, more than the bridge's max_file_bytes (99); "
        "read it in parts with line and limit"
    )
    assert Workspace([str(root)], max_bytes=100).read(ten_lines, None, None) == lines(1, 10)


@pytest.mark.parametrize(
    ("line", "limit", "message"),
    [(0, None, "line numbers start at 1"), (1, -1, "limit must not be negative")],
)
def test_line_and_limit_out_of_range_are_refused(
    ten_lines: str, root: Path, line: int, limit: int | None, message: str
) -> None:
    with pytest.raises(RequestError, match=message) as exc:
        Workspace([str(root)], max_bytes=1024).read(ten_lines, line, limit)
    assert refused(exc) == message


def test_a_missing_file_is_not_found_not_refused(root: Path) -> None:
    with pytest.raises(RequestError, match="does not exist") as exc:
        Workspace([str(root)], max_bytes=1024).read(f"{root}/nope.txt", None, None)
    assert (exc.value.code, exc.value.data) == (-32002, {"uri": f"{root}/nope.txt"})


# --- terminals -----------------------------------------------------------------------------


class Tracked(Terminals):
    """Terminals that remember what they started, so a test (passing or failing) ends it all."""

    def __init__(self, root: Path, *, max_terminals: int = 4) -> None:
        super().__init__(
            Workspace([str(root)], max_bytes=1024),
            max_output=4096,
            timeout=30.0,
            max_terminals=max_terminals,
            environment=lambda: dict(os.environ),
            on_output=lambda term: None,
        )
        self.started: list[Terminal] = []

    async def create(
        self,
        command: str,
        args: list[str] | None,
        env: dict[str, str],
        cwd: str | None,
        output_byte_limit: int | None,
    ) -> Terminal:
        term = await super().create(command, args, env, cwd, output_byte_limit)
        self.started.append(term)
        return term

    async def end(self) -> None:
        for term in self.started:
            term.kill()
        for term in self.started:
            await term.done.wait()


def run(root: Path, body: Callable[[Tracked], Awaitable[None]], *, max_terminals: int = 4) -> None:
    async def go() -> None:
        terms = Tracked(root, max_terminals=max_terminals)
        try:
            await body(terms)
        finally:
            await terms.end()

    asyncio.run(go())


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("/", OUTSIDE),
        ("{sibling}", OUTSIDE),
        ("{sibling}/", OUTSIDE),
        ("{root}/link", OUTSIDE),  # a symlink in the root to the sibling
        ("{root}/../root-evil", "contains '..'"),
        ("root", "is not absolute"),
    ],
)
def test_a_terminal_cwd_outside_the_roots_is_refused_before_anything_runs(
    tmp_path: Path, root: Path, sibling: Path, where: str, reason: str
) -> None:
    (root / "link").symlink_to(sibling)
    cwd = where.format(root=root, sibling=sibling)

    marker = tmp_path / "ran"

    async def body(terms: Tracked) -> None:
        with pytest.raises(RequestError, match=reason) as exc:
            await terms.create(f"touch {marker}", None, {}, cwd, None)
        assert refused(exc).startswith(f"the path {cwd!r} ")

    run(root, body)
    assert not marker.exists()


def test_a_terminal_runs_in_its_cwd_inside_the_root(root: Path) -> None:
    (root / "sub").mkdir()

    async def body(terms: Tracked) -> None:
        term = await terms.create("pwd", None, {}, f"{root}/sub", None)
        default = await terms.create("pwd", None, {}, None, None)
        await terms.wait_for_exit(term.id)
        await terms.wait_for_exit(default.id)
        assert (term.text(), default.text()) == (f"{root}/sub\n", f"{root}\n")
        with pytest.raises(RequestError, match="does not exist") as exc:
            await terms.create("pwd", None, {}, f"{root}/missing", None)
        assert refused(exc) == f"the working directory '{root}/missing' does not exist"

    run(root, body)


def test_exactly_max_terminals_run_and_a_release_frees_a_slot(root: Path) -> None:
    async def body(terms: Tracked) -> None:
        first = await terms.create("sleep 30", None, {}, None, None)
        await terms.create("sleep 30", None, {}, None, None)
        with pytest.raises(RequestError, match="max_terminals") as exc:
            await terms.create("sleep 30", None, {}, None, None)
        assert refused(exc) == (
            "this session already holds 2 terminals (the bridge's max_terminals); release one first"
        )
        terms.release(first.id)
        third = await terms.create("sleep 30", None, {}, None, None)
        assert third.proc is not None and third.proc.returncode is None
        terms.close_all()
        await third.done.wait()
        assert third.status is not None and third.status.signal == "SIGKILL"

    run(root, body, max_terminals=2)
