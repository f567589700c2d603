"""The committed gRPC stubs are exactly what scripts/gen_grpc.sh makes from the .proto."""

from __future__ import annotations

import filecmp
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEN = "ahp_bridge_remote/_gen"


def _files(top: Path) -> dict[str, Path]:
    return {
        str(p.relative_to(top)): p
        for p in top.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_generated_stubs_match_the_proto(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHON": sys.executable}
    subprocess.run(
        ["bash", str(ROOT / "scripts/gen_grpc.sh"), str(tmp_path)],
        check=True,
        env=env,
        capture_output=True,
    )
    fresh = _files(tmp_path / GEN)
    committed = _files(ROOT / "adapters" / GEN)
    assert fresh, "the generator wrote nothing"
    assert sorted(fresh) == sorted(committed), "generated file set differs; run gen_grpc.sh"
    stale = [name for name in fresh if not filecmp.cmp(fresh[name], committed[name], False)]
    assert not stale, f"stale generated stubs {stale}: run scripts/gen_grpc.sh"


def test_generated_modules_import_as_a_package() -> None:
    from ahp_bridge_remote._gen.agentapi.v1 import agentapi_pb2, agentapi_pb2_grpc

    assert agentapi_pb2.DESCRIPTOR.package == "agentapi.v1"
    assert hasattr(agentapi_pb2_grpc, "ConversationServiceStub")
