"""The canonical reducers at AHP 1.0: our 1.0 fixtures, and 0.7.0 as released through the 0.7 path.

`tests/fixtures/ahp-1.0.0/reducers/` (README there: why they are ours) run straight through the
canonical reducers, and each fixture's states and actions validate against the 1.0.0 schema.
The released 0.7.0 corpus (`tests/fixtures/ahp-0.7.0-release/`, lazy `ContentRef` tool input,
optional delta content) runs through `reduce_07` like our 0.7.0 set.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.protocol.actions_v1 import ACTIONS_10
from ahp_bridge.protocol.reduce_older import reduce_07
from ahp_bridge.state.reducers import reduce
from tests.support.paths import FIXTURES
from tests.support.wire_schema import v1_0

V1 = sorted((FIXTURES / "ahp-1.0.0" / "reducers").glob("*.json"))
RELEASE = sorted((FIXTURES / "ahp-0.7.0-release" / "reducers").glob("*.json"))
NOW = "1970-01-01T00:00:09.999Z"
#: Fixtures that pin a no-op for an action shape 1.0 does not accept.
INVALID_ON_PURPOSE = {"customizationtoggled-enabled-only-is-no-op"}
STATE_DEFS = {
    "chat": "ChatState",
    "session": "SessionState",
    "terminal": "TerminalState",
    "annotations": "AnnotationsState",
}


def strip_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_none(v) for v in value]
    return value


def test_the_sets_are_complete() -> None:
    assert len(V1) == 33
    assert len(RELEASE) == 247


@pytest.mark.parametrize("path", V1, ids=[p.name for p in V1])
def test_v1_fixture(path: Path) -> None:
    fixture = json.loads(path.read_text())
    state = strip_none(fixture["initial"])
    for raw in fixture["actions"]:
        action = strip_none(raw)
        before = copy.deepcopy(state)
        new_state = reduce(fixture["reducer"], state, action)
        assert state == before, "reducer mutated its input"
        if new_state == state:
            assert new_state is state, f"{action['type']} changed nothing but copied the state"
        state = new_state
    assert state == strip_none(fixture["expected"]), fixture["description"]


@pytest.mark.parametrize("path", V1, ids=[p.name for p in V1])
def test_v1_fixture_is_valid_1_0(path: Path) -> None:
    fixture = json.loads(path.read_text())
    schema = v1_0()
    state_def = STATE_DEFS[fixture["reducer"]]
    schema.check(state_def, strip_none(fixture["initial"]))
    schema.check(state_def, strip_none(fixture["expected"]))
    if path.stem.split("-", 1)[1] in INVALID_ON_PURPOSE:
        return
    for action in fixture["actions"]:
        schema.check("StateAction", action)
        ACTIONS_10.parse(action)


@pytest.mark.parametrize("path", RELEASE, ids=[p.name for p in RELEASE])
def test_released_0_7_0_fixture_through_the_0_7_path(path: Path) -> None:
    fixture = json.loads(path.read_text())
    state = strip_none(fixture["initial"])
    for raw in fixture["actions"]:
        state = reduce_07(fixture["reducer"], state, strip_none(raw), now=NOW, canonical=reduce)
    assert strip_none(state) == strip_none(fixture["expected"]), fixture["description"]
