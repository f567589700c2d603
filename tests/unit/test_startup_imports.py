"""What a process that never serves imports: `--help`, `--version`, a usage error and the serve
command's own early answers (a provider not installed, a host that does not resolve, the VS Code
settings) come in well under a second because they do not build the wire models (about 0.9 s of
CPU for the five lines, which only serving and the reducers need)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ahp_bridge.state as state

WIRE_MODELS = (
    "ahp_bridge.protocol._generated",
    "ahp_bridge.protocol._generated_v1",
    "ahp_bridge.protocol._generated_v06",
    "ahp_bridge.protocol._generated_v08",
)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    """`code` in a fresh interpreter (nothing imported yet), its output captured."""
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
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
    out = _python(code)
    assert out.stdout.strip() == "[]", out.stderr


def test_the_serve_commands_early_answers_build_no_wire_model(tmp_path: Path) -> None:
    data = ["--data-dir", str(tmp_path)]
    runs = [
        ["--provider", "nope", "--listen", "127.0.0.1:0", *data],
        ["--listen", "no-such-host.invalid:8765", *data],
        ["--print-vscode-settings", "--listen", "127.0.0.1:8765", *data],
        ["--print-vscode-settings", "--listen", "127.0.0.1:0", *data],
    ]
    code = (
        "import sys, contextlib, io, json\n"
        "from ahp_bridge import cli\n"
        "codes = []\n"
        f"for argv in {runs!r}:\n"
        "    with contextlib.redirect_stdout(io.StringIO()),"
        " contextlib.redirect_stderr(io.StringIO()):\n"
        "        codes.append(cli.main(argv))\n"
        f"print(json.dumps([codes, sorted(m for m in sys.modules if m in {WIRE_MODELS!r})]))\n"
    )
    out = _python(code)
    # Each one is refused (the first two as command-line mistakes), and none built a model.
    assert json.loads(out.stdout) == [[2, 2, 1, 2], []], out.stderr


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


def test_the_objects_serving_imports_are_frozen_out_of_the_collectors_sight(
    tmp_path: Path,
) -> None:
    """`serve` builds the wire models with the cyclic collector off, then freezes them (`gc`
    would walk them at every full collection and at exit, a third of a bridge's start and stop).
    Here it starts on a port already taken, so it fails after the imports, in-process."""
    code = (
        "import contextlib, gc, io, json, socket\n"
        "from ahp_bridge import cli\n"
        "taken = socket.socket(); taken.bind(('127.0.0.1', 0)); taken.listen()\n"
        "port = taken.getsockname()[1]\n"
        "argv = ['--provider', 'fake', '--listen', f'127.0.0.1:{port}',"
        f" '--data-dir', {str(tmp_path)!r}]\n"
        "before = gc.get_freeze_count()\n"
        "with contextlib.redirect_stdout(io.StringIO()),"
        " contextlib.redirect_stderr(io.StringIO()):\n"
        "    code = cli.main(argv)\n"
        "print(json.dumps([code, before, gc.get_freeze_count(), gc.isenabled()]))\n"
    )
    out = _python(code)
    code, before, frozen, enabled = json.loads(out.stdout)
    assert (code, before, enabled) == (1, 0, True), out.stderr
    assert frozen > 100_000  # the wire models and the host's modules


def test_the_0_6_models_are_built_for_the_first_0_6_peer_only() -> None:
    """A bridge's host, engine and wires are made without the 0.6.0 models (a seventh of its
    start); the first 0.6 peer's params and actions build them, and they are the line's own:
    its 81 action types, its one `workingDirectory`."""
    code = (
        "import json, sys\n"
        "import ahp_bridge.host.app\n"
        "from ahp_bridge.protocol.lens import wires\n"
        "from ahp_bridge.protocol.versions import V06\n"
        "wire = wires()[V06]\n"
        "built = ['ahp_bridge.protocol._generated_v06' in sys.modules]\n"
        "create = wire.methods['createSession']\n"
        "action = wire.actions.parse({'type': 'session/titleChanged', 'title': 't'})\n"
        "built.append('ahp_bridge.protocol._generated_v06' in sys.modules)\n"
        "print(json.dumps([built, create.__module__, 'workingDirectory' in create.model_fields,"
        " type(action).__module__, len(wire.actions.types)]))\n"
    )
    out = _python(code)
    g6 = "ahp_bridge.protocol._generated_v06"
    assert json.loads(out.stdout) == [[False, True], g6, True, g6, 81]


def test_a_wire_model_is_built_at_its_first_use_not_at_import() -> None:
    """The wire lines' 1,400 models (root models too) defer their validators to their first
    use (`defer_build`): a bridge uses a few dozen, and building all took 0.35 s of its start.
    Deferred, they still validate the same, and the action union builds on its first use."""
    code = (
        "import json, sys\n"
        "from pydantic import BaseModel\n"
        "import ahp_bridge.host.app\n"
        "from ahp_bridge.protocol.actions import ACTIONS_07\n"
        f"mods = [sys.modules[m] for m in {WIRE_MODELS!r} if m in sys.modules]\n"
        "models = [c for m in mods for c in vars(m).values()"
        " if isinstance(c, type) and issubclass(c, BaseModel) and c.__module__ == m.__name__]\n"
        "built = sorted({c.__name__ for c in models if c.__pydantic_complete__})\n"
        "g = sys.modules['ahp_bridge.protocol._generated']\n"
        "before = [g.SessionTitleChangedAction.__pydantic_complete__,"
        " ACTIONS_07.adapter.pydantic_complete]\n"
        "a = ACTIONS_07.parse({'type': 'chat/toolCallConfirmed', 'turnId': 't',"
        " 'toolCallId': 'c', 'approved': True, 'confirmed': 'user-action'})\n"
        "t = ACTIONS_07.parse({'type': 'session/titleChanged', 'title': 't'})\n"
        "code = g.JsonRpcErrorCode.model_validate(-32601).root\n"
        "after = [g.SessionTitleChangedAction.__pydantic_complete__,"
        " ACTIONS_07.adapter.pydantic_complete]\n"
        "print(json.dumps([len(models), built, before, after,"
        " type(a).__name__, t.title, code]))\n"
    )
    out = _python(code)
    count, built, before, after, confirmed, turn, code = json.loads(out.stdout)
    # Codegen ends each module with the recursive ConfigPropertySchema's `model_rebuild()`.
    assert count > 700 and built == ["ConfigPropertySchema"], out.stderr  # 0.7 and 1.0 lines
    assert (before, after) == ([False, False], [True, True])
    assert (confirmed, turn, code) == ("ChatToolCallApprovedAction", "t", -32601)


def test_the_0_8_models_are_built_for_the_first_0_8_peer_only() -> None:
    """Likewise 0.8.0's: a 0.7 peer's steps go through 0.8 with its action types alone
    (`TYPES_0_8`, the types `ACTIONS_08` has); the first 0.8 peer's params and actions build the
    models, the line's own (86 action types, `workingDirectoryReplaced` among them)."""
    code = (
        "import json, sys\n"
        "import ahp_bridge.host.app\n"
        "from ahp_bridge.protocol.lens import wires\n"
        "from ahp_bridge.protocol.versions import V07, V08\n"
        "from ahp_bridge.protocol.actions_v08 import TYPES_0_8\n"
        "ws = wires()\n"
        "g8 = 'ahp_bridge.protocol._generated_v08'\n"
        "v07 = ws[V07].actions.parse({'type': 'session/titleChanged', 'title': 't'})\n"
        "built = [g8 in sys.modules]\n"
        "wire = ws[V08]\n"
        "create = wire.methods['createSession']\n"
        "action = wire.actions.parse({'type': 'session/titleChanged', 'title': 't'})\n"
        "built.append(g8 in sys.modules)\n"
        "print(json.dumps([built, create.__module__, type(action).__module__,"
        " type(v07).__module__, len(wire.actions.types),"
        " frozenset(wire.actions.types) == TYPES_0_8,"
        " 'session/workingDirectoryReplaced' in TYPES_0_8]))\n"
    )
    out = _python(code)
    g8 = "ahp_bridge.protocol._generated_v08"
    assert json.loads(out.stdout) == [
        [False, True],
        g8,
        g8,
        "ahp_bridge.protocol._generated",
        86,
        True,
        True,
    ]
