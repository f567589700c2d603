"""The base class of every AHP wire model.

Generated and hand-written models derive from :class:`WireModel` so that a bridge relays what
it does not understand: unknown fields (from newer peers) are kept, ``_meta`` stays ``_meta``
on the way out, and models can be built from Python names (``field_meta=``) as well as wire
names. Dump with :func:`wire_dump` (``by_alias`` + ``exclude_unset``) so that nothing the peer
did not send, and nothing it did send, is changed.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["WireModel", "wire_dump"]


class WireModel(BaseModel):
    """Base model for AHP wire types: keeps unknown fields, dumps by alias."""

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


def wire_dump(model: BaseModel) -> dict[str, Any]:
    """Return the exact JSON-shaped dict for ``model`` (aliases, only fields that were set)."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
