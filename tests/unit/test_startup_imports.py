"""What a process that never serves imports: `--help`, `--version` and a usage error answer in
well under a second because they do not build the wire models (about 0.9 s of CPU for the five
lines, which only serving and the reducers need)."""

from __future__ import annotations

import subprocess
import sys

import ahp_bridge.state as state

WIRE_MODELS = (
    "ahp_bridge.protocol._generated",
    "ahp_bridge.protocol._generated_v1",
    "ahp_bridge.protocol._generated_v06",
    "ahp_bridge.protocol._generated_v08",
)


def test_the_command_lines_own_answers_build_no_wire_model() -> None:
    code = (
        "import sys, contextlib, io\n"
        "from ahp_bridge import cli\n"
        "for argv in (['--version'], ['--help'], ['serve', '--help'], ['no-such-command']):\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()),"
        " contextlib.redirect_stderr(io.StringIO()):\n"
        "        cli.main(argv)\n"
        f"print(sorted(m for m in sys.modules if m in {WIRE_MODELS!r}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_the_state_package_still_offers_its_names() -> None:
    from ahp_bridge.state.envelope import Envelope
    from ahp_bridge.state.reducers import KINDS, reduce
    from ahp_bridge.state.store import Store
    from ahp_bridge.state.validate import CLIENT_DISPATCHABLE, reject_reason

    assert (state.Envelope, state.Store, state.reduce, state.KINDS) == (
        Envelope,
        Store,
        reduce,
        KINDS,
    )
    assert (state.CLIENT_DISPATCHABLE, state.reject_reason) == (CLIENT_DISPATCHABLE, reject_reason)
    assert sorted(state.__all__) == sorted(state._HOMES)
