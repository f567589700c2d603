"""A race on demand: a parent directory swapped for a symlink between a path check and its open.

The real filesystem will not lose that race when a test wants it to, so `os.open` is wrapped:
the first time it is asked for `file` or its parent directory (as real paths, which is what
confinement hands to the open), that parent is first moved aside and replaced by a symlink to
`leads_to`, then the real open runs. Only a check of the opened descriptor can see where it went.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: Where the swapped-out parent directory is moved to (beside it).
MOVED_AWAY = "moved-away"


def swap_parent_at_open(monkeypatch: pytest.MonkeyPatch, file: Path, leads_to: Path) -> list[str]:
    """Arm the swap for `file`; the list returned gets the path once the swap has happened."""
    real_open: Callable[..., int] = os.open
    target = os.path.realpath(file)
    parent = Path(target).parent
    watched = (target, str(parent))
    swapped: list[str] = []

    def open_after_swap(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if not swapped and kwargs.get("dir_fd") is None and os.fspath(path) in watched:
            parent.rename(parent.with_name(MOVED_AWAY))
            parent.symlink_to(leads_to)
            swapped.append(target)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_after_swap)
    return swapped
