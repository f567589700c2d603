"""The documentation a user looks for is there and findable: the docs index lists every page,
its links resolve, and the README points at the index, the CHANGELOG and CONTRIBUTING."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def links(page: Path) -> list[str]:
    return [t for t in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", page.read_text()) if "://" not in t]


def test_the_docs_index_lists_every_page_and_its_links_resolve() -> None:
    index = REPO / "docs" / "README.md"
    targets = links(index)
    pages = {p.name for p in (REPO / "docs").glob("*.md")} - {"README.md"}
    assert pages <= set(targets), pages - set(targets)
    for target in targets:
        assert (index.parent / target).exists(), target


def test_the_readme_points_at_the_index_the_changelog_and_contributing() -> None:
    targets = links(REPO / "README.md")
    for target in ("docs/README.md", "CHANGELOG.md", "CONTRIBUTING.md"):
        assert target in targets and (REPO / target).is_file(), target
    for target in targets:
        assert (REPO / target).exists(), target
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert "## Unreleased" in changelog and "ahp-host-bridge" in changelog
