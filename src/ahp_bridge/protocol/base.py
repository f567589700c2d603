"""The base class of every AHP wire model.

Generated and hand-written models derive from :class:`WireModel` so that a bridge relays what
it does not understand: unknown fields (from newer peers) are kept, ``_meta`` stays ``_meta``
on the way out, and models can be built from Python names (``field_meta=``) as well as wire
names. Dump with :func:`wire_dump` (``by_alias`` + ``exclude_unset``) so that nothing the peer
did not send, and nothing it did send, is changed.

Both bases defer building a model's validator to its first use (``defer_build``). The four wire
lines hold about 1,400 models; a bridge process uses a few dozen of them, and building them all
when the modules load took about 0.35 s of every start (issue 25).
"""

from __future__ import annotations

from typing import Any, Generic

from pydantic import BaseModel, ConfigDict, RootModel
from pydantic.root_model import RootModelRootType

__all__ = ["WireModel", "WireRoot", "wire_dump"]


class WireModel(BaseModel):
    """Base model for AHP wire types: keeps unknown fields, dumps by alias."""

    model_config = ConfigDict(
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        defer_build=True,
    )


class WireRoot(RootModel[RootModelRootType], Generic[RootModelRootType]):
    """Base of the generated root models (a union, an alias): built on first use too."""

    model_config = ConfigDict(defer_build=True)


def wire_dump(model: BaseModel) -> dict[str, Any]:
    """Return the exact JSON-shaped dict for ``model`` (aliases, only fields that were set)."""
    return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
