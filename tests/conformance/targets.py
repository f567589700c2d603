"""Targets for the toy provider, shared by the suite's own tests."""

from __future__ import annotations

from ahp_bridge.agentapi import OpenRequest
from ahp_bridge.conformance import Prompts, Target
from tests.conformance.toy import PROMPTS, Options, ToyProvider

# Bounds each check of a toy run; only a broken toy that hangs ever reaches it.
TOY_TIMEOUT = 3.0


def toy_target(options: Options | None = None, prompts: Prompts | None = None) -> Target:
    """A Target for the toy provider, with every scenario prompt unless told otherwise."""
    opts = options or Options()
    if prompts is None:
        prompts = Prompts(**PROMPTS) if opts.supported else Prompts(answer=PROMPTS["answer"])
    return Target(
        "toy",
        lambda: ToyProvider(opts),
        OpenRequest(session_id="toy-session", workdir="/nonexistent/toy"),
        prompts,
        TOY_TIMEOUT,
    )
