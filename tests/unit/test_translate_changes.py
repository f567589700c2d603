"""translate/changes: a provider's record as snapshots, a turn's files, line counts, patches."""

from __future__ import annotations

import difflib
from typing import Any

import pytest

from ahp_bridge.agentapi import FileDiff
from ahp_bridge.translate.changes import (
    changeset_file,
    line_stats,
    reverse_patch,
    snapshot,
    snapshot_files,
    turn_files,
)


def unified(before: str, after: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(True), after.splitlines(True), "a", "b"))


@pytest.mark.parametrize(
    ("before", "after", "counts"),
    [
        ("a\nb\nc\n", "a\nb\nc\n", (0, 0)),
        (None, "a\nb\n", (2, 0)),
        ("a\nb\n", None, (0, 2)),
        ("a\nb\nc\n", "a\nB\nc\n", (1, 1)),
        ("a\nb\nc\nd\n", "a\nd\n", (0, 2)),
        (
            "".join(f"{i}\n" for i in range(1000)),
            "x\n" + "".join(f"{i}\n" for i in range(1000)),
            (1, 0),
        ),
    ],
)
def test_line_stats_count_like_a_unified_diff(
    before: str | None, after: str | None, counts: tuple[int, int]
) -> None:
    assert line_stats(before, after) == counts
    if before is not None and after is not None:
        patch = unified(before, after).splitlines()
        added = sum(1 for line in patch if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in patch if line.startswith("-") and not line.startswith("---"))
        assert (added, removed) == counts


def test_a_turn_is_the_difference_between_its_start_and_its_end() -> None:
    start = snapshot([FileDiff(path="/w/a", before="1\n", after="2\n", status="modified")])
    end = snapshot(
        [
            FileDiff(path="/w/a", before="1\n", after="3\n", status="modified"),  # again
            FileDiff(path="/w/b", before="", after="new\n", status="added"),  # created
            FileDiff(path="/w/c", before="gone\n", after="", status="deleted"),  # deleted
        ]
    )
    files = {f.path: f for f in turn_files(start, end)}
    assert (files["/w/a"].before, files["/w/a"].after) == ("2\n", "3\n")  # from the turn's start
    assert files["/w/b"].kind == "created" and files["/w/b"].added == 1
    assert files["/w/c"].kind == "deleted" and files["/w/c"].removed == 1
    # a file changed back to where the turn found it is not the turn's change
    back = snapshot([FileDiff(path="/w/a", before="1\n", after="2\n", status="modified")])
    assert turn_files(start, back) == []
    # a file that leaves the record went back to its content when the session began
    (reverted,) = turn_files(start, {})
    assert (reverted.before, reverted.after) == ("2\n", "1\n")


def test_a_record_without_texts_gives_counts_only() -> None:
    snap = snapshot([FileDiff(path="/w/x.bin", binary=True, additions=0, deletions=0)])
    (change,) = snapshot_files(snap)
    assert not change.known
    refs: list[Any] = []
    file = changeset_file(change, lambda p: "file://" + p, lambda t: refs.append(t) or {"uri": "x"})
    assert "before" not in file["edit"] and "after" not in file["edit"] and refs == []


def test_provider_counts_are_kept_and_missing_ones_counted() -> None:
    given = snapshot([FileDiff(path="/a", before="x\n", after="y\n", additions=7, deletions=7)])
    assert (given["/a"].additions, given["/a"].deletions) == (7, 7)
    counted = snapshot([FileDiff(path="/a", before="x\n", after="y\nz\n")])
    assert (counted["/a"].additions, counted["/a"].deletions) == (2, 1)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("alpha\nbeta\n", "alpha\ngamma\n"),
        ("".join(f"l{i}\n" for i in range(60)), "".join(f"l{i}\n" for i in range(60) if i % 7)),
        ("a\n", "a\nb\nc\n"),
        ("a\nb\n", ""),
        ("", "new file\n"),
    ],
)
def test_a_patch_applied_backwards_gives_the_text_before(before: str, after: str) -> None:
    assert reverse_patch(after, unified(before, after)) == before


def test_a_git_patch_without_final_newlines() -> None:
    patch = (
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n x\n-y\n"
        "\\ No newline at end of file\n+z\n\\ No newline at end of file\n"
    )
    assert reverse_patch("x\nz", patch) == "x\ny"


def test_a_patch_that_does_not_fit_gives_nothing() -> None:
    patch = unified("a\nb\n", "a\nc\n")
    assert reverse_patch("a\nsomething else\n", patch) is None
    assert reverse_patch("a\nc\n", "not a patch") is None
