"""Files only their owner may read: the bridge's data directory and what is written under it.

Transcripts, the session catalog, provider homes (where a runtime keeps its sign-in) and
tokens are private to the user the bridge runs as, whatever the process's umask: directories
0700, files 0600. `mkdir(mode=)` and `open(mode=)` are masked by the umask and leave existing
paths as they are, so each helper also sets the mode itself.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DIR_MODE", "FILE_MODE", "private_dir", "private_file"]

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: str | os.PathLike[str]) -> Path:
    """`path` as a directory only its owner may enter (created with its parents if missing;
    the parents that did not exist are made private too)."""
    target = Path(path)
    missing = []
    probe = target
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    target.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    for made in [*missing, target]:
        os.chmod(made, DIR_MODE)
    return target


def private_file(path: str | os.PathLike[str]) -> Path:
    """`path` as a file only its owner may read and write (created empty if missing)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return Path(path)
