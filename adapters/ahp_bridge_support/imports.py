"""An SDK imported with the cyclic garbage collector off.

The Copilot SDK's import makes about 1,800 classes from 3.8 MB of generated code (a second of
CPU). Each class is a few objects in reference cycles, so the collector runs many times while
they are made and walks everything made so far each time: a quarter of that second. An adapter
imports its SDK when its first client is made, on a thread of its own beside the running
bridge; the collector is off for that long only, and back on (if it was) whatever happens.
"""

from __future__ import annotations

import gc
import importlib
import threading

__all__ = ["import_without_gc"]

_LOCK = threading.Lock()


def import_without_gc(*names: str) -> None:
    """Import the modules ``names`` (a no-op for those already imported) with the collector off.

    ImportError propagates, as from ``import``. One lock keeps two threads from turning the
    collector back on under each other."""
    with _LOCK:
        enabled = gc.isenabled()
        gc.disable()
        try:
            for name in names:
                importlib.import_module(name)
        finally:
            if enabled:
                gc.enable()
