"""Turn a pydantic ``ValidationError`` into one short message that names the offending fields.

The host answers bad params with JSON-RPC -32602 and bad client actions with a
``rejectionReason``; both must tell the client *which* field is wrong
(``action.turnId: Field required``) without echoing the value back (it may hold prompt text).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import ValidationError

__all__ = ["describe"]

MAX_ERRORS = 5

# Location parts pydantic adds for the members of a plain (smart) union: scalar type names,
# parametrised types (`list[str]`, `literal['a']`, `function-after[...]`) and model class
# names. AHP wire field names are camelCase (or `_meta`), so they never match.
_UNION_LABEL = re.compile(r"(int|float|str|bool|none|[A-Z]\w*|[\w-]+\[.*\])\Z")
# Keys that discriminated unions dispatch on; pydantic puts the tag value into the location.
_TAG_KEYS = ("type", "kind", "status", "state")


def _path(
    root: str, loc: tuple[int | str, ...], data: Any, skip: Collection[str]
) -> tuple[str, bool]:
    """Render ``loc`` as a field path, walking ``data`` to tell field names from union tags."""
    out = root
    in_union = False
    current = data
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            is_list = isinstance(current, list) and 0 <= part < len(current)
            current = current[part] if is_list else None
            continue
        if part in skip:
            continue
        if isinstance(current, Mapping) and any(current.get(k) == part for k in _TAG_KEYS):
            continue  # the tag pydantic adds for a discriminated union member
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif _UNION_LABEL.match(part):
            in_union = True
            continue
        else:
            current = None  # a missing (required) field
        out = f"{out}.{part}" if out else part
    return out or "<root>", in_union


def describe(exc: ValidationError, root: str, data: Any = None, skip: Collection[str] = ()) -> str:
    """Return ``"<root>.<field path>: <reason>"`` for the first few failing fields of ``exc``.

    ``data`` is the validated input (used to recognise union tags in error locations);
    ``skip`` lists further location parts that are not field names. When the members of a
    plain union all fail at one path, the path is named once.
    """
    by_path: dict[str, list[str]] = {}
    for err in exc.errors(include_url=False, include_input=False):
        path, in_union = _path(root, tuple(err["loc"]), data, skip)
        msgs = by_path.setdefault(path, [])
        if not in_union or not msgs:
            msgs.append(err["msg"])
        elif "number" in err["msg"]:  # `int | float`: the number message says it all
            msgs[-1] = err["msg"]
    lines = [f"{path}: {'; '.join(msgs)}" for path, msgs in list(by_path.items())[:MAX_ERRORS]]
    if len(by_path) > MAX_ERRORS:
        lines.append(f"(+{len(by_path) - MAX_ERRORS} more fields)")
    return "; ".join(lines)
