"""The fake provider's Target: its conformance script and the prompts that script answers.

The provider is loaded through its entry point, like any other, so the suite holds no
reference to the adapter's code: only to the script it ships.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from importlib.metadata import entry_points
from importlib.resources import files
from typing import Any

from ahp_bridge.agentapi import OpenRequest, Provider
from ahp_bridge.conformance.target import Prompts, Target

FAKE_PROMPTS = Prompts(
    answer="conformance: plain",
    long="conformance: slow",
    permission="conformance: permission",
    question="conformance: question",
    exit="conformance: exit",
    host_tool="conformance: host tool",
    edit="conformance: edit",
    command="conformance",
)
"""The prompt texts the fake's conformance.toml reacts to."""

# The slow turn lasts about 60 s unscaled; at this scale it still outlives any check's
# work by seconds while plain turns take milliseconds.
DEFAULT_TIME_SCALE = 0.1


def conformance_script() -> str:
    """Path of the conformance script the fake adapter ships."""
    return str(files("ahp_bridge_fake").joinpath("conformance.toml"))


def fake_target(
    options: Mapping[str, Any] | None = None,
    *,
    workdir: str | None = None,
    timeout: float = 30.0,
) -> Target:
    """A Target that drives the fake provider with its conformance script.

    ``options`` are passed to the fake's ``create_provider`` over the defaults (the
    conformance script, a time scale that keeps the run short).
    """
    # The first registration: metadata left by an earlier install of the distribution (under
    # its old name) lists the same entry point again.
    found = next(iter(entry_points(group="ahp_bridge.providers", name="fake")), None)
    if found is None:
        raise LookupError("the fake provider is not installed (pip install -e . in this checkout)")
    create = found.load()
    merged: dict[str, Any] = {"script": conformance_script(), "time_scale": DEFAULT_TIME_SCALE}
    merged.update(options or {})

    def factory() -> AbstractAsyncContextManager[Provider]:
        provider: Provider = create(merged)
        return provider

    request = OpenRequest(
        session_id=str(uuid.uuid4()),
        # The edit scenario writes a file: without a workdir, `run` gives every run a scratch
        # directory of its own and removes it afterwards.
        workdir=workdir or "",
        title="AHP conformance",
    )
    return Target("fake", factory, request, FAKE_PROMPTS, timeout)
