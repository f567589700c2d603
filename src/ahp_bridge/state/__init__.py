"""AHP state: pure reducers, the sequencing store and client-dispatch validation.

Sans-IO: no trio, threads, sockets or clocks (the caller passes the time in).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .envelope import Envelope
    from .reducers import KINDS, reduce
    from .store import Store
    from .validate import CLIENT_DISPATCHABLE, reject_reason

__all__ = ["CLIENT_DISPATCHABLE", "KINDS", "Envelope", "Store", "reduce", "reject_reason"]

#: Where each name lives. Imported on first use (PEP 562), not with the package: `validate`
#: builds every line's wire models, which a process that reads only `state.limits` or
#: `state.status` (the command line's `--help`, `--version`, a usage error) never needs.
_HOMES = {
    "CLIENT_DISPATCHABLE": ".validate",
    "KINDS": ".reducers",
    "Envelope": ".envelope",
    "Store": ".store",
    "reduce": ".reducers",
    "reject_reason": ".validate",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home, __name__), name)
    globals()[name] = value
    return value
