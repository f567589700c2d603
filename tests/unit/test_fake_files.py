"""The fake's real file edits: written inside the working directory only, its diff, rewinds."""

from __future__ import annotations

from pathlib import Path

import pytest
from ahp_bridge_fake.files import FileRecord
from ahp_bridge_fake.script import ScriptError, parse_script


def test_edits_are_written_and_make_the_diff(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    files = FileRecord(str(tmp_path))
    edit = files.write(1, "a.txt", "edit", "one\nTWO\n")
    assert (edit.kind, edit.additions, edit.deletions) == ("edit", 1, 1)
    created = files.write(1, "sub/new.txt", "edit", "x\n")
    assert created.kind == "create" and (tmp_path / "sub/new.txt").read_text() == "x\n"
    files.write(2, "a.txt", "edit", "one\nthree\n")
    diffs = {d.path: d for d in files.diff()}
    a = diffs[str(tmp_path / "a.txt")]
    assert (a.before, a.after, a.status) == ("one\ntwo\n", "one\nthree\n", "modified")
    assert diffs[str(tmp_path / "sub/new.txt")].status == "added"
    files.write(2, "sub/new.txt", "delete", None)
    assert not (tmp_path / "sub/new.txt").exists()
    assert str(tmp_path / "sub/new.txt") not in {d.path for d in files.diff()}  # came and went


def test_nothing_is_written_outside_the_working_directory(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "link").symlink_to(tmp_path)
    files = FileRecord(str(work))
    for path in ("../x.txt", "/etc/x.txt", "link/x.txt"):
        with pytest.raises(ValueError, match="outside the working directory"):
            files.write(1, path, "edit", "no\n")
    assert not (tmp_path / "x.txt").exists()
    with pytest.raises(ValueError, match="does not exist"):
        files.write(1, "missing.txt", "delete", None)
    with pytest.raises(ValueError, match="no working directory"):
        FileRecord("").write(1, "a.txt", "edit", "x")


def test_a_rewind_puts_the_files_back_newest_first(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("v0\n")
    files = FileRecord(str(tmp_path))
    files.write(1, "a.txt", "edit", "v1\n")
    files.write(2, "a.txt", "edit", "v2\n")
    files.write(2, "b.txt", "edit", "b\n")
    files.write(3, "c.txt", "edit", "c\n")
    (tmp_path / "c.txt").write_text("changed by someone else\n")
    restored, skipped = files.rewind(2)
    assert (tmp_path / "a.txt").read_text() == "v1\n"
    assert not (tmp_path / "b.txt").exists()
    assert [s.path for s in skipped] == [str(tmp_path / "c.txt")]
    assert (tmp_path / "c.txt").read_text() == "changed by someone else\n"
    assert sorted(restored) == sorted([str(tmp_path / "a.txt"), str(tmp_path / "b.txt")])
    diffs = {d.path: d for d in files.diff()}
    assert diffs[str(tmp_path / "a.txt")].after == "v1\n"  # turn 1's change is still there


def test_the_script_refuses_content_on_a_delete() -> None:
    source = (
        '[[prompts]]\ntext = "x"\n[[prompts.steps]]\nkind = "tool"\nname = "t"\n'
        'file_edits = [{ path = "a", kind = "delete", content = "no" }]\n'
    )
    with pytest.raises(ScriptError, match='a "delete" edit has no content'):
        parse_script(source)
