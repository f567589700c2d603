"""Base model and field types that make pydantic write the JSON Go's encoding/json writes.

Go's omitempty/omitzero and ``json:"-"`` have no pydantic spelling, so they are expressed as
annotated aliases (``OmitEmpty[T]``, ``OmitNil[T]``, ``OmitZero[T]``, ``Internal[T]``).
Time, ``[]byte``, ``json.RawMessage`` and ``time.Duration`` get field types that keep
Python values natural (aware ``datetime`` with ``None`` for Go's zero time, ``bytes``,
``timedelta``) while the JSON form is Go's.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, ClassVar, Self, TypeVar, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    model_validator,
)

T = TypeVar("T")

# Context key set by from_json: the data is Go JSON, so Go-internal fields are dropped.
GO_JSON_CONTEXT = "agentapi_go_json"

_ACRONYMS = {"id": "ID", "mime": "MIME", "url": "URL", "api": "API", "aiu": "AIU", "ms": "MS",
             "mcp": "MCP", "uri": "URI", "cli": "CLI", "pdf": "PDF"}  # fmt: skip


def go_name(snake: str) -> str:
    """Go's exported field name for a snake_case attribute (``item_id`` -> ``ItemID``)."""
    return "".join(_ACRONYMS.get(part, part.capitalize()) for part in snake.split("_"))


def is_nil(value: object) -> bool:
    """Go omitempty on a pointer, interface or nil-able value: omitted only when nil."""
    return value is None


def is_empty(value: object) -> bool:
    """Go omitempty on a value: false, 0, "", nil and empty slices/maps are omitted."""
    if value is None or value is False:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return value == 0
    if isinstance(value, str | bytes | list | dict | tuple | timedelta):
        return not value
    return False


def is_zero(value: object) -> bool:
    """Go omitzero: the type's zero value (zero time is None, a struct with all fields zero)."""
    if isinstance(value, BaseModel):
        return all(is_zero(getattr(value, name)) for name in type(value).model_fields)
    return is_empty(value)


OmitEmpty = Annotated[T, Field(exclude_if=is_empty)]
"""A field tagged ``omitempty`` in Go (non-pointer)."""
OmitNil = Annotated[T, Field(exclude_if=is_nil)]
"""A pointer field tagged ``omitempty`` in Go: omitted only when None (``*bool`` false stays)."""
OmitZero = Annotated[T, Field(exclude_if=is_zero)]
"""A field tagged ``omitzero`` in Go."""
Internal = Annotated[T, Field(exclude=True)]
"""A field tagged ``json:"-"``: never serialised, never read from JSON (see from_json)."""

GO_ZERO_TIME = "0001-01-01T00:00:00Z"
_ZERO = datetime(1, 1, 1, tzinfo=UTC)


def _parse_time(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"time {value!r} is not RFC 3339") from None
    if not isinstance(value, datetime):
        raise ValueError("time must be an aware datetime or an RFC 3339 string")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("time must be timezone-aware")
    return None if value == _ZERO else value


def format_time(value: datetime | None) -> str:
    """RFC 3339 as Go's time.Time.MarshalJSON writes it; None is Go's zero time."""
    if value is None:
        return GO_ZERO_TIME
    offset = value.utcoffset()
    text = value.replace(microsecond=0, tzinfo=None).isoformat(timespec="seconds")
    if value.microsecond:
        text += f".{value.microsecond:06d}".rstrip("0")
    if not offset:
        return text + "Z"
    seconds = int(offset.total_seconds())
    sign = "-" if seconds < 0 else "+"
    hours, minutes = divmod(abs(seconds) // 60, 60)
    return f"{text}{sign}{hours:02d}:{minutes:02d}"


GoTime = Annotated[
    datetime | None,
    BeforeValidator(_parse_time),
    PlainSerializer(format_time, return_type=str, when_used="json"),
]
"""Go time.Time: an aware datetime, None for the zero time (written as 0001-01-01T00:00:00Z)."""


def _parse_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise ValueError("bytes given as text must be standard base64") from None
    raise ValueError("expected bytes or a base64 string")


def _format_bytes(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")


GoBytes = Annotated[
    bytes,
    BeforeValidator(_parse_bytes),
    PlainSerializer(_format_bytes, return_type=str, when_used="json"),
]
"""Go []byte: bytes in Python, standard base64 in JSON (a str given on input is base64)."""


def _parse_raw(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        raw = bytes(value)
        if raw:
            try:
                json.loads(raw)
            except ValueError:
                raise ValueError("raw JSON bytes are not valid JSON") from None
        return raw
    if value is None:
        return b""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _format_raw(value: bytes) -> Any:
    return json.loads(value) if value else None


RawJSON = Annotated[
    bytes,
    BeforeValidator(_parse_raw),
    PlainSerializer(_format_raw, when_used="json"),
]
"""Go json.RawMessage: the JSON text as bytes (b"" is nil); any other value given is encoded.

In JSON it is embedded as the value it holds, as Go embeds a RawMessage.
"""


def _parse_duration(value: Any) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return timedelta(microseconds=value / 1000)
    raise ValueError("duration must be a timedelta or integer nanoseconds")


def _format_duration(value: timedelta) -> int:
    return (value.days * 86_400 + value.seconds) * 1_000_000_000 + value.microseconds * 1000


Duration = Annotated[
    timedelta,
    BeforeValidator(_parse_duration),
    PlainSerializer(_format_duration, return_type=int, when_used="json"),
]
"""Go time.Duration: a timedelta, integer nanoseconds in JSON."""


def _none_default(annotation: Any) -> Callable[[], Any] | None:
    """Factory for fields Go may write as null although Python holds them as values."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _none_default(get_args(annotation)[0])
    if annotation is bytes:
        return bytes
    if origin is list or annotation is list:
        return list
    if origin is dict or annotation is dict:
        return dict
    return None


class GoModel(BaseModel):
    """A Go struct with JSON tags: attribute names are snake_case, aliases are the tags."""

    model_config = ConfigDict(
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        arbitrary_types_allowed=True,
        protected_namespaces=(),
        validate_assignment=False,
    )

    _internal_keys: ClassVar[frozenset[str]] = frozenset()
    _null_defaults: ClassVar[dict[str, Callable[[], Any]]] = {}

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        internal: set[str] = set()
        nulls: dict[str, Callable[[], Any]] = {}
        for name, info in cls.model_fields.items():
            keys = {name, info.alias or name, go_name(name)}
            if info.exclude is True:
                internal |= keys
                continue
            factory = _none_default(info.annotation)
            if factory is not None:
                for key in keys:
                    nulls[key] = factory
        cls._internal_keys = frozenset(internal)
        cls._null_defaults = nulls

    @model_validator(mode="before")
    @classmethod
    def _go_input(cls, data: Any, info: ValidationInfo) -> Any:
        """Read nil slices/maps as empty and, for Go JSON, ignore ``json:"-"`` keys."""
        if not isinstance(data, dict):
            return data
        go_json = bool(info.context and info.context.get(GO_JSON_CONTEXT))
        fixed: dict[str, Any] | None = None
        for key, value in data.items():
            drop = go_json and key in cls._internal_keys
            if drop or (value is None and key in cls._null_defaults):
                if fixed is None:
                    fixed = dict(data)
                if drop:
                    del fixed[key]
                else:
                    fixed[key] = cls._null_defaults[key]()
        return data if fixed is None else fixed

    def to_json(self) -> dict[str, Any]:
        """The JSON object Go's encoding/json would write for this value."""
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_json(cls, data: Any) -> Self:
        """Read a JSON object (dict, str or bytes) as Go would, ignoring ``json:"-"`` keys."""
        context = {GO_JSON_CONTEXT: True}
        if isinstance(data, str | bytes | bytearray):
            return cls.model_validate_json(data, context=context, by_alias=True, by_name=True)
        return cls.model_validate(data, context=context, by_alias=True, by_name=True)


class GoStruct(GoModel):
    """A Go struct without JSON tags: its JSON keys are the Go field names (``"Kind"``)."""

    model_config = ConfigDict(alias_generator=go_name)


M = TypeVar("M", bound=GoModel)


def to_json(obj: GoModel) -> dict[str, Any]:
    """The JSON object Go's encoding/json would write for ``obj``."""
    return obj.to_json()


def from_json(cls: type[M], data: Any) -> M:
    """Read ``data`` (a dict, or JSON text) into ``cls`` as Go's encoding/json would."""
    return cls.from_json(data)
