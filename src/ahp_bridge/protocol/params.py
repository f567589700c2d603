"""Validation of the ``params`` of every client-to-host method, per wire version.

:func:`parse_params` returns the typed params or raises :class:`ParamsError`, whose message
names the offending field (``params.protocolVersions: Field required``): the host sends it as
the JSON-RPC ``-32602`` message. A method this table does not know raises
:class:`UnknownMethod` (``-32601``).

``dispatchAction`` is a notification, so a bad action cannot be answered with ``-32602``: its
``action`` is only checked to be an object here, and the host validates it with
:func:`ahp_bridge.protocol.actions.parse_action` to echo a ``rejectionReason`` instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any, Final

from pydantic import ValidationError

from ahp_bridge.protocol import _generated as _g
from ahp_bridge.protocol import _generated_v1 as _g1
from ahp_bridge.protocol.base import WireModel
from ahp_bridge.protocol.fieldpath import describe

__all__ = [
    "AUTOMATION_METHODS",
    "CLIENT_NOTIFICATIONS",
    "METHODS",
    "METHODS_V06",  # noqa: F822 - built when first asked for (`__getattr__`)
    "METHODS_V08",  # noqa: F822 - built when first asked for (`__getattr__`)
    "METHODS_V1",
    "DispatchActionParams",
    "ParamsError",
    "UnknownMethod",
    "parse_params",
]


class DispatchActionParams(_g.DispatchActionParams):
    """``dispatchAction`` params; ``action`` stays a raw object for ``parse_action``."""

    action: dict[str, Any]  # type: ignore[assignment]


#: Method name -> params model, for every request and notification a client sends in 0.7.0.
METHODS: Final[dict[str, type[WireModel]]] = {
    "initialize": _g.InitializeParams,
    "ping": _g.PingParams,
    "reconnect": _g.ReconnectParams,
    "subscribe": _g.SubscribeParams,
    "unsubscribe": _g.UnsubscribeParams,
    "dispatchAction": DispatchActionParams,
    "createSession": _g.CreateSessionParams,
    "disposeSession": _g.DisposeSessionParams,
    "createChat": _g.CreateChatParams,
    "disposeChat": _g.DisposeChatParams,
    "createTerminal": _g.CreateTerminalParams,
    "disposeTerminal": _g.DisposeTerminalParams,
    "createResourceWatch": _g.CreateResourceWatchParams,
    "listSessions": _g.ListSessionsParams,
    "resolveSessionConfig": _g.ResolveSessionConfigParams,
    "sessionConfigCompletions": _g.SessionConfigCompletionsParams,
    "fetchTurns": _g.FetchTurnsParams,
    "completions": _g.CompletionsParams,
    "invokeChangesetOperation": _g.InvokeChangesetOperationParams,
    "authenticate": _g.AuthenticateParams,
    "resourceRead": _g.ResourceReadParams,
    "resourceWrite": _g.ResourceWriteParams,
    "resourceList": _g.ResourceListParams,
    "resourceCopy": _g.ResourceCopyParams,
    "resourceDelete": _g.ResourceDeleteParams,
    "resourceMove": _g.ResourceMoveParams,
    "resourceResolve": _g.ResourceResolveParams,
    "resourceMkdir": _g.ResourceMkdirParams,
    "resourceRequest": _g.ResourceRequestParams,
}


class DispatchActionParamsV1(_g1.DispatchActionParams):
    """1.0.0 ``dispatchAction`` params; ``action`` stays a raw object, as for 0.7.0."""

    action: dict[str, Any]  # type: ignore[assignment]


#: Method name -> params model for 1.0.0 (and 0.9.x): 0.7.0's methods with optional ``_meta``,
#: plus ``moveChat`` and the automation commands.
METHODS_V1: Final[dict[str, type[WireModel]]] = {
    name: (DispatchActionParamsV1 if name == "dispatchAction" else getattr(_g1, cls.__name__))
    for name, cls in METHODS.items()
} | {
    "moveChat": _g1.MoveChatParams,
    "runAutomation": _g1.RunAutomationParams,
    "fetchAutomationRuns": _g1.FetchAutomationRunsParams,
    "listAutomationTriggerDefinitions": _g1.ListAutomationTriggerDefinitionsParams,
}


def __getattr__(name: str) -> dict[str, type[WireModel]]:
    """``METHODS_V08`` and ``METHODS_V06``, built when first asked for, as ``ACTIONS_08`` and
    ``ACTIONS_06`` are (those lines' models are built only for their peers).

    0.8.0's are 0.7.0's methods (the method set is the same from 0.6.0 to 0.8.0), each with the
    optional ``_meta`` 0.8.0 gave every command's params. 0.6.0's are 0.7.0's methods in 0.6.0's
    shapes (one ``workingDirectory``, a fork ``source`` without ``kind``)."""
    line: ModuleType
    if name == "METHODS_V08":
        from ahp_bridge.protocol import _generated_v08 as line
    elif name == "METHODS_V06":
        from ahp_bridge.protocol import _generated_v06 as line
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    class DispatchActionParamsOlder(line.DispatchActionParams):  # type: ignore[name-defined]
        """``dispatchAction`` params of an older line; ``action`` stays a raw object, as for
        0.7.0."""

        action: dict[str, Any]

    own = f"DispatchActionParamsV{name[-2:]}"  # DispatchActionParamsV08, ...V06
    DispatchActionParamsOlder.__name__ = DispatchActionParamsOlder.__qualname__ = own
    methods: dict[str, type[WireModel]] = {
        method: (
            DispatchActionParamsOlder if method == "dispatchAction" else getattr(line, cls.__name__)
        )
        for method, cls in METHODS.items()
    }
    globals()[name] = methods
    return methods


#: 1.0.0 commands of a feature this host does not offer (automations).
AUTOMATION_METHODS: Final[frozenset[str]] = frozenset(
    {"runAutomation", "fetchAutomationRuns", "listAutomationTriggerDefinitions"}
)

#: The methods a client sends as notifications (no ``id``, never answered).
CLIENT_NOTIFICATIONS: Final[frozenset[str]] = frozenset({"dispatchAction", "unsubscribe"})


class ParamsError(ValueError):
    """Invalid params for a known method; ``message`` names the field (JSON-RPC -32602)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class UnknownMethod(LookupError):
    """The method is not an AHP 0.7.0 client method (JSON-RPC -32601)."""

    def __init__(self, method: str) -> None:
        super().__init__(f"Method not found: {method!r}")
        self.method = method


_JSON_NAMES: Final[dict[type, str]] = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
}


def parse_params(
    method: str, params: object, methods: Mapping[str, type[WireModel]] = METHODS
) -> WireModel:
    """Validate ``params`` of ``method`` and return the typed model.

    Raises :class:`UnknownMethod` for a method outside ``methods`` (default: 0.7.0's), and
    :class:`ParamsError` when ``params`` is missing, not an object, or has a bad field.
    """
    model = methods.get(method)
    if model is None:
        raise UnknownMethod(method)
    if not isinstance(params, Mapping):
        got = "missing" if params is None else _JSON_NAMES.get(type(params), "not an object")
        raise ParamsError(f"params: must be an object (got {got})")
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise ParamsError(describe(exc, "params", params)) from None
