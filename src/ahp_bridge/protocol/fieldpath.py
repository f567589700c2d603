"""Turn a pydantic ``ValidationError`` into one short message that names the offending fields.

The host answers bad params with JSON-RPC -32602 and bad client actions with a
``rejectionReason``; both must tell the client *which* field is wrong
(``action.turnId: Field required``) without echoing the value back (it may hold prompt text).
"""

from __future__ import annotations

from collections.abc import Collection

from pydantic import ValidationError

__all__ = ["describe"]

MAX_ERRORS = 5


def _path(root: str, loc: tuple[int | str, ...], skip: Collection[str]) -> str:
    out = root
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part not in skip:
            out = f"{out}.{part}" if out else part
    return out or "<root>"


def describe(exc: ValidationError, root: str, skip: Collection[str] = ()) -> str:
    """Return ``"<root>.<field path>: <reason>"`` for the first few errors of ``exc``.

    ``skip`` lists location parts that are not field names (union tags) and are left out.
    """
    lines = []
    for err in exc.errors(include_url=False, include_input=False)[:MAX_ERRORS]:
        lines.append(f"{_path(root, tuple(err['loc']), skip)}: {err['msg']}")
    more = exc.error_count() - MAX_ERRORS
    if more > 0:
        lines.append(f"(+{more} more)")
    return "; ".join(lines)
