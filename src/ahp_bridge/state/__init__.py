"""AHP state: pure reducers, the sequencing store and client-dispatch validation.

Sans-IO: no trio, threads, sockets or clocks (the caller passes the time in).
"""

from __future__ import annotations

from .envelope import Envelope
from .reducers import KINDS, reduce
from .store import Store
from .validate import CLIENT_DISPATCHABLE, reject_reason

__all__ = ["CLIENT_DISPATCHABLE", "KINDS", "Envelope", "Store", "reduce", "reject_reason"]
