"""Mentions without I/O: the word at the cursor (in UTF-16 offsets) and the ranking tiers."""

from __future__ import annotations

from ahp_bridge.host.workspace.mention_rank import (
    Entries,
    Mention,
    index_to_utf16,
    mention_at,
    rank,
    utf16_to_index,
)


def test_utf16_offsets_convert_both_ways() -> None:
    text = "a😀b"  # the emoji is two UTF-16 code units
    assert [utf16_to_index(text, o) for o in range(5)] == [0, 1, 2, 2, 3]
    assert [index_to_utf16(text, i) for i in range(4)] == [0, 1, 3, 4]
    assert utf16_to_index(text, 99) == 3
    assert utf16_to_index(text, -1) == 0


def test_mention_at_the_cursor() -> None:
    assert mention_at("@REA", 4) == Mention("@", "REA", 0, 4)
    assert mention_at("see #src/ma now", 11) == Mention("#", "src/ma", 4, 11)
    assert mention_at("see #src/ma now", 9) == Mention("#", "src/", 4, 11)
    assert mention_at("@", 1) == Mention("@", "", 0, 1)
    assert mention_at("x @ab", 3) == Mention("@", "", 2, 5)  # the word runs past the cursor
    assert mention_at("😀 @a", 5) == Mention("@", "a", 3, 5)
    assert mention_at("me@x.org", 8) is None  # not at the start of a word
    assert mention_at("@REA", 0) is None  # the cursor is before the sigil
    assert mention_at("@REA ", 5) is None  # after the word, at a new one
    assert mention_at("word", 4) is None
    assert mention_at("", 0) is None


PATHS = [
    "README.md",
    "docs/",
    "docs/README.md",
    "docs/guide/",
    "docs/guide/reading.md",
    "src/",
    "src/reader.py",
    "src/thread_util.py",
    "src/main.py",
    "src/pkg/",
    "src/pkg/main.py",
    "tests/",
    "tests/test_main.py",
    "readme/",
]


def ranked(query: str, limit: int = 20, paths: list[str] = PATHS) -> list[str]:
    entries = Entries(paths)
    return [entries.paths[i] for i in rank(entries, query, limit)]


def test_name_prefixes_come_first_then_path_prefixes_then_substrings_then_fuzzy() -> None:
    assert ranked("rea") == [
        "README.md",  # the name starts with it: shallow first,
        "src/reader.py",  # then matching case,
        "docs/README.md",
        "docs/guide/reading.md",
        "readme/",  # a directory after the files of its tier
        "src/thread_util.py",  # the name contains "rea"
    ]
    assert ranked("REA")[:3] == ["README.md", "docs/README.md", "src/reader.py"]
    assert ranked("main") == ["src/main.py", "src/pkg/main.py", "tests/test_main.py"]
    assert ranked("src/ma") == ["src/main.py", "src/pkg/main.py"]  # prefix, then in order
    assert ranked("docs/") == ["docs/", "docs/README.md", "docs/guide/", "docs/guide/reading.md"]
    assert ranked("pkg/main") == ["src/pkg/main.py"]  # the path contains it
    assert ranked("rdme")[:3] == ["README.md", "readme/", "docs/README.md"]  # in order
    assert ranked("zzz") == []


def test_an_exact_name_beats_a_longer_one() -> None:
    assert ranked("main.py", paths=["src/main.py.bak", "a/b/main.py"]) == [
        "a/b/main.py",
        "src/main.py.bak",
    ]


def test_the_empty_query_shows_the_top_of_the_tree() -> None:
    assert ranked("", limit=4) == ["README.md", "docs/", "readme/", "src/"]


def test_limits_hold_in_every_tier() -> None:
    many = [f"dir{i}/file{i}.txt" for i in range(1000)]
    assert len(ranked("file", limit=10, paths=many)) == 10
    assert len(ranked("f1t", limit=10, paths=many)) == 10  # fuzzy
    assert ranked("file", limit=0, paths=many) == []
    assert ranked("x", paths=[]) == []


def test_tighter_fuzzy_matches_beat_shallower_ones() -> None:
    assert ranked("rme", paths=["rxxxxxxmxe", "a/b/rxmxe"]) == ["a/b/rxmxe", "rxxxxxxmxe"]
