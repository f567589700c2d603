"""A value computed once per test run and shared by the pytest-xdist workers.

Each xdist worker collects the whole suite, so a parametrisation computed at collection time is
computed once per worker (four times under `-n 4`, on two cores). Where that computation is
slow and its result small, the first worker to get here computes it and writes it, as JSON,
into the run's base temporary directory (the parent of every worker's `popen-gwN`, removed with
the run's other temporary roots); the others wait for that file and read it. Nothing outlives
the run, so every run computes it afresh from the code and data it tests. Outside xdist (one
process) the value is simply computed.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: The run's shared directory, set by `configure` in an xdist worker; None otherwise.
_SHARED: Path | None = None

#: How long a worker waits for another's result before computing the value itself (the
#: computing worker may have died; computing is always correct, only slower).
_PATIENCE = 300.0


def configure(config: pytest.Config) -> None:
    """From `pytest_configure`: an xdist worker's basetemp is `<run's basetemp>/popen-gwN`."""
    global _SHARED
    basetemp = config.option.basetemp
    if hasattr(config, "workerinput") and basetemp:
        _SHARED = Path(basetemp).resolve().parent


def once(key: str, compute: Callable[[], Any]) -> Any:
    """`compute()` (a JSON value), computed by one worker of this run and read by the rest."""
    if _SHARED is None:
        return compute()
    _SHARED.mkdir(parents=True, exist_ok=True)
    result = _SHARED / f"per-run-{key}.json"
    try:
        os.close(os.open(_SHARED / f"per-run-{key}.lock", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # another worker computes it
        deadline = time.monotonic() + _PATIENCE
        while not result.exists():
            if time.monotonic() > deadline:
                return compute()
            time.sleep(0.05)
        return json.loads(result.read_text())
    value = compute()
    partial = result.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(value))
    partial.replace(result)  # atomic: a reader sees all of it or nothing
    return value
