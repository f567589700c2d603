"""The mention index's walk of a working directory: git's ignore rules, symlinks, the bound."""

from __future__ import annotations

import os
from pathlib import Path

from ahp_bridge.host.workspace.mentions import scan


def make(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_ignore_rules_follow_git(tmp_path: Path) -> None:
    make(
        tmp_path,
        {
            ".gitignore": "*.log\n/build\ncache/\n!important.log\n",
            ".git/HEAD": "",
            ".git/info/exclude": "local-only.txt\n",
            "local-only.txt": "",
            "a.log": "",
            "important.log": "",
            "build/out.o": "",
            "src/build/kept.txt": "",  # `/build` is anchored to the root
            "src/cache/x": "",  # `cache/` matches directories at any depth
            "src/cache.txt": "",  # but not a file of that name
            "src/.gitignore": "*.tmp\n!keep.log\n",
            "src/x.tmp": "",
            "src/keep.log": "",  # a deeper file re-includes what a shallower one ignores
            "src/deep/y.tmp": "",
            "docs/guide.md": "",
        },
    )
    found, truncated = scan(str(tmp_path), 1000)
    assert not truncated
    assert sorted(found) == [
        ".gitignore",
        "docs/",
        "docs/guide.md",
        "important.log",
        "src/",
        "src/.gitignore",
        "src/build/",
        "src/build/kept.txt",
        "src/cache.txt",
        "src/deep/",  # kept: only what is in it is ignored
        "src/keep.log",
    ]


def test_symlinks_are_listed_inside_and_never_followed(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    make(root, {"src/a.py": ""})
    make(outside, {"secret.txt": ""})
    (root / "to-src").symlink_to(root / "src")
    (root / "to-a.py").symlink_to(root / "src" / "a.py")
    (root / "out").symlink_to(outside)
    (root / "loop").symlink_to(root)
    (root / "broken").symlink_to(root / "nothing")
    os.mkfifo(root / "fifo")
    found, _ = scan(str(root), 1000)
    assert sorted(found) == ["src/", "src/a.py", "to-a.py", "to-src/"]


def test_the_walk_stops_at_the_bound(tmp_path: Path) -> None:
    make(tmp_path, {f"d{i}/f{j}.txt": "" for i in range(5) for j in range(5)})
    found, truncated = scan(str(tmp_path), 7)
    # A directory's entries come before what is inside them: a cut tree keeps its top.
    assert truncated
    assert found == ["d0/", "d1/", "d2/", "d3/", "d4/", "d0/f0.txt", "d0/f1.txt"]
    everything, truncated = scan(str(tmp_path), 30)  # exactly 5 directories and 25 files
    assert not truncated and len(everything) == 30
