"""What the suite needs to drive one provider: how to start it and what to say to it."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field

from ahp_bridge.agentapi import HostTool, OpenRequest, Provider

ProviderFactory = Callable[[], AbstractAsyncContextManager[Provider]]
"""Returns an async context manager that yields a started Provider and shuts it down."""


@dataclass(frozen=True)
class Prompts:
    """Provider-specific prompt texts, one per scenario the checks drive.

    ``answer`` makes the provider answer in text and end the turn completed. ``long``
    starts a turn that keeps running until it is cancelled (for busy, cancel and steer).
    ``permission`` and ``question`` make the turn ask for a permission or a question and
    wait for the answer. A scenario left as None is "not applicable" only where the
    provider's Capabilities say it cannot do it; otherwise the checks that need it fail.
    ``exit`` (optional: few runtimes can be made to exit by a prompt) makes the runtime
    exit during the turn. ``host_tool`` (needed when Capabilities.host_tools is set) makes
    the model call the host tool ``HOST_TOOL`` once, with a JSON object, and then answer.
    ``edit`` (optional) makes the turn change a file of the working directory with a tool
    call, so file edits and the diff can be judged. ``command`` (optional) names one of the
    provider's commands that starts a prompt turn (without the slash), so ``run_command`` can
    be judged.
    """

    answer: str | None = None
    long: str | None = None
    permission: str | None = None
    question: str | None = None
    exit: str | None = None
    host_tool: str | None = None
    edit: str | None = None
    command: str | None = None


HOST_TOOL = HostTool(
    name="ahp_conformance_echo",
    description="Returns its text argument. The AHP conformance suite checks host tools with it.",
    parameters={
        "type": "object",
        "properties": {"text": {"type": "string", "description": "The text to echo."}},
        "required": ["text"],
    },
)
"""The host tool the ``host_tool`` prompt makes the model call."""


@dataclass(frozen=True)
class Target:
    """How to drive one provider through the conformance checks.

    ``factory`` is called once per check, so every check starts from a fresh provider.
    ``open_request`` is the template every conversation is opened with (workdir, model,
    ...); the suite fills in its own ``events`` sink and, to reopen, ``conversation_id``.
    ``timeout`` bounds each whole check, so a provider that hangs fails instead of
    hanging the suite. ``unknown_conversation_id`` must name no conversation.
    """

    name: str
    factory: ProviderFactory
    open_request: OpenRequest
    prompts: Prompts = field(default_factory=Prompts)
    timeout: float = 30.0
    unknown_conversation_id: str = "ahp-conformance-no-such-conversation-7f3c"
