"""Content the host refers to by `ahp-content:` URIs: file texts of edits and changesets.

A tool call's `fileEdit` result and every changeset file point at the text of a file before and
after a change with a `ContentRef`; clients fetch it with `resourceRead` (this store is the
workspace's reader for the `ahp-content` scheme). Two kinds of reference exist:

* `ahp-content:/sha256/<hex>`: a text the host already has, named by its digest, so the same
  text always has the same URI and a changeset refreshed without change stays equal;
* `ahp-content:/edit/<id>`: a side of a tool call's edit, named when the tool call completes
  and filled a moment later, when the provider's record of the change has been read. A read
  of one still pending waits for it (at most `changes.content_wait_seconds`).

The store is bounded (`changes.max_content_bytes`): the oldest texts go first, and a reference
to a text that went is answered "no longer available", never with other content.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import trio

from ahp_bridge.host.workspace.paths import content_type
from ahp_bridge.protocol import errors as E
from ahp_bridge.protocol.errors import RpcError

__all__ = ["SCHEME", "ContentStore"]

SCHEME = "ahp-content"


@dataclass
class _Entry:
    text: str | None = None
    name: str = ""
    problem: str = ""
    ready: trio.Event = field(default_factory=trio.Event)
    #: Bytes of `text` in UTF-8, counted once (every reference and every trim reads it).
    size: int = 0

    def settle(self, text: str | None) -> None:
        self.text = text
        self.size = len(text.encode("utf-8")) if text is not None else 0


class ContentStore:
    def __init__(self, *, max_bytes: int, wait_seconds: float) -> None:
        self.max_bytes = max_bytes
        self.wait_seconds = wait_seconds
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0

    # -- naming --------------------------------------------------------------------------------

    def ref(self, text: str | None, name: str = "") -> dict[str, Any] | None:
        """A `ContentRef` to `text` (None for None), named by its digest."""
        if text is None:
            return None
        data = text.encode("utf-8")
        uri = f"{SCHEME}:/sha256/{hashlib.sha256(data).hexdigest()}"
        entry = self._entries.get(uri)
        if entry is None:
            entry = _Entry(text=text, name=name, size=len(data))
            entry.ready.set()
            self._add(uri, entry)
        else:
            self._entries.move_to_end(uri)
        return self._content_ref(uri, entry)

    def pending(self, name: str) -> tuple[str, dict[str, Any]]:
        """A reference to a text not known yet: (its URI, the `ContentRef`); see `fill`."""
        uri = f"{SCHEME}:/edit/{uuid.uuid4()}"
        entry = _Entry(name=name)
        self._add(uri, entry)
        return uri, {"uri": uri, "contentType": content_type(name, binary=None)}

    def fill(self, uri: str, text: str | None, problem: str = "") -> None:
        """Settle a pending reference with its text, or with why there is none."""
        entry = self._entries.get(uri)
        if entry is None or entry.ready.is_set():
            return
        entry.settle(text)
        entry.problem = "" if text is not None else (problem or "the content is not available")
        self._bytes += entry.size
        entry.ready.set()
        self._trim()

    def _content_ref(self, uri: str, entry: _Entry) -> dict[str, Any]:
        ref: dict[str, Any] = {"uri": uri, "sizeHint": entry.size}
        ref["contentType"] = content_type(entry.name, binary=False) if entry.name else "text/plain"
        return ref

    def _add(self, uri: str, entry: _Entry) -> None:
        self._entries[uri] = entry
        self._bytes += entry.size
        self._trim()

    def _trim(self) -> None:
        while self._bytes > self.max_bytes and len(self._entries) > 1:
            _, oldest = self._entries.popitem(last=False)
            self._bytes -= oldest.size
            if not oldest.ready.is_set():
                oldest.problem = "the content was dropped before it was read"
                oldest.ready.set()

    @property
    def bytes_held(self) -> int:
        return self._bytes

    # -- resourceRead --------------------------------------------------------------------------

    async def read(self, params: dict[str, Any]) -> dict[str, Any]:
        uri = params["uri"]
        entry = self._entries.get(uri)
        if entry is None:
            path = urlsplit(uri).path
            if not path.startswith(("/sha256/", "/edit/")):
                raise RpcError(E.NOT_FOUND, f"Not found: {uri} is not a content URI of this host")
            raise RpcError(
                E.NOT_FOUND,
                f"Not found: {uri} is no longer available (the host keeps at most "
                f"changes.max_content_bytes = {self.max_bytes} bytes of file contents)",
            )
        if not entry.ready.is_set():
            with trio.move_on_after(self.wait_seconds):
                await entry.ready.wait()
            if not entry.ready.is_set():
                raise RpcError(
                    E.NOT_FOUND,
                    f"Not found: {uri} is not available yet (waited "
                    f"changes.content_wait_seconds = {self.wait_seconds} s for the provider)",
                )
        if entry.text is None:
            raise RpcError(E.NOT_FOUND, f"Not found: {uri}: {entry.problem}")
        kind = content_type(entry.name, binary=False) if entry.name else "text/plain"
        return {"data": entry.text, "encoding": "utf-8", "contentType": kind}
