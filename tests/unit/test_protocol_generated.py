"""The committed generated models match what scripts/gen_protocol.py produces, and the schema
fixes it applies are the documented ones."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from ahp_bridge.protocol import _generated as g
from ahp_bridge.protocol.base import WireModel

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_protocol.py"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protocol", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_protocol"] = module
    spec.loader.exec_module(module)
    return module


def test_regenerating_into_a_temp_folder_gives_the_committed_file(
    gen: ModuleType, tmp_path: Path
) -> None:
    out = tmp_path / "_generated.py"
    assert gen.main(["--output", str(out)]) == 0
    committed = (ROOT / "src/ahp_bridge/protocol/_generated.py").read_text(encoding="utf-8")
    fresh = out.read_text(encoding="utf-8")
    assert fresh == committed, "run: .venv/bin/python scripts/gen_protocol.py"


def test_check_mode_reports_drift(gen: ModuleType, tmp_path: Path) -> None:
    stale = tmp_path / "_generated.py"
    stale.write_text("# stale\n", encoding="utf-8")
    assert gen.main(["--check", "--output", str(stale)]) == 1
    assert stale.read_text(encoding="utf-8") == "# stale\n"


def test_schema_fixes_do_not_touch_the_input(gen: ModuleType) -> None:
    schema = json.loads((ROOT / "proto/ahp/0.7.0/ahp.schema.json").read_text(encoding="utf-8"))
    before = json.dumps(schema, sort_keys=True)
    fixed = gen.patched_schema(schema)
    assert json.dumps(schema, sort_keys=True) == before
    assert "origin" not in fixed["$defs"]["ActionEnvelope"]["required"]
    assert "usage" not in fixed["$defs"]["Turn"]["required"]
    assert "enum" not in fixed["$defs"]["SessionStatus"]
    assert fixed["$defs"]["ChatToolCallDeniedAction"]["properties"]["approved"]["const"] is False


def test_postprocess_rewrites_float_names_but_not_text(gen: ModuleType) -> None:
    src = "x: float | None = Field(description='a float value')\ny: list[float]\n"
    out = gen.postprocess(src)
    assert "x: int | float | None = Field(description='a float value')" in out
    assert "y: list[int | float]" in out
    assert out.startswith("# DO NOT EDIT")


def test_generated_models_use_the_wire_base_and_keep_integers() -> None:
    assert issubclass(g.ChatDeltaAction, WireModel)
    env = g.ChatTurnCompleteAction.model_validate(
        {"type": "chat/turnComplete", "turnId": "t", "duration": 1234}
    )
    wire = '{"type":"chat/turnComplete","turnId":"t","duration":1234}'
    assert env.model_dump_json(exclude_unset=True) == wire
    assert '"duration":1234,' in env.model_dump_json()  # serialize_by_alias, and no 1234.0
    assert g.ActionEnvelope.model_fields["origin"].is_required() is False


def test_tagged_oneofs_get_a_discriminator_but_multi_valued_tags_do_not(gen: ModuleType) -> None:
    schema = json.loads((ROOT / "proto/ahp/0.7.0/ahp.schema.json").read_text(encoding="utf-8"))
    defs = gen.patched_schema(schema)["$defs"]
    assert defs["ResponsePart"]["discriminator"] == {"propertyName": "kind"}
    assert defs["ToolCallState"]["discriminator"] == {"propertyName": "status"}
    assert defs["Customization"]["discriminator"] == {"propertyName": "type"}
    # `number`/`integer` share a member, `draft`/`submitted` too: left as smart unions.
    assert "discriminator" not in defs["ChatInputQuestion"]
    assert "discriminator" not in defs["ChatInputAnswer"]
    assert "discriminator" not in defs["StateAction"]


def test_nested_unions_validate_by_tag() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as err:
        g.ChatResponsePartAction.model_validate(
            {"type": "chat/responsePart", "turnId": "t", "part": {"kind": "reasoning", "id": "r"}}
        )
    assert [e["loc"] for e in err.value.errors()] == [("part", "reasoning", "content")]
