"""Small pure helpers shared by the two translation tables.

They build AHP wire fragments (plain dicts in the exact wire shape) and clean untrusted provider
text. Nothing here reads a clock or does I/O: timestamps arrive as integers.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

Action = dict[str, Any]
"""An AHP action: a JSON-shaped dict with ``type`` and camelCase fields."""

Emitted = tuple[str, Action]
"""``(channel URI, action)``: what the host applies through the store, in order."""

META_PREFIX = "ahpBridge."
"""Namespace of the ``_meta`` keys the bridge writes, so clients can tell them apart."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SPACES = re.compile(r"\s+")


def iso_from_ms(ms: int) -> str:
    """Render epoch milliseconds as the ISO 8601 form JavaScript's ``toISOString`` produces."""
    moment = datetime.fromtimestamp(ms / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def ms_from_iso(text: object) -> int | None:
    """Epoch milliseconds of an ISO 8601 timestamp (``toISOString`` form), None if not one."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def error_part(error_type: str, message: str, *, resumable: bool = False) -> dict[str, Any]:
    """The error response part that ends a failed turn (AHP 1.0 ``ErrorResponsePart``)."""
    part: dict[str, Any] = {"kind": "error", "error": {"errorType": error_type, "message": message}}
    if resumable:
        part["resumable"] = True
    return part


def clean_line(text: str, limit: int = 256) -> str:
    """Collapse untrusted one-line provider text (titles): no control characters, bounded."""
    flat = _SPACES.sub(" ", _CONTROL.sub("", text)).strip()
    if len(flat) > limit:
        flat = flat[: limit - 1].rstrip() + "…"
    return flat


def drop_none(fields: dict[str, Any]) -> dict[str, Any]:
    """Omit absent optional fields, as the wire never carries ``null`` for them."""
    return {key: value for key, value in fields.items() if value is not None}
