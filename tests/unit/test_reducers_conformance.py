"""Run every AHP 0.7.0 reducer fixture through the 0.7 path of the canonical reducers.

The host's reducers have 1.0 semantics; a 0.7 peer sees them through the lens, so every 0.7.0
fixture goes through `reduce_07` (lift to 1.0, reduce, show as 0.7.0). Conventions (fixture
README): null means absent, so None-valued keys are stripped recursively from initial, actions
and expected; the 0.7.0 clock is mocked to 9999 ms.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ahp_bridge.protocol.reduce_older import reduce_07
from ahp_bridge.state.reducers import reduce
from tests.support.paths import CONFORMANCE

FIXTURES = CONFORMANCE
NOW = "1970-01-01T00:00:09.999Z"


def _files() -> list[Path]:
    found = sorted((FIXTURES / "reducers").glob("*.json"))
    found += sorted((FIXTURES / "forward-compat" / "reducers").glob("*.json"))
    return found


FILES = _files()


def strip_none(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_none(v) for v in value]
    return value


def test_fixture_set_is_complete() -> None:
    assert len([f for f in FILES if f.parent.name == "reducers" and "forward" not in str(f)]) == 239
    assert len([f for f in FILES if "forward-compat" in str(f)]) == 6


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.parent.name}/{p.name}" for p in FILES])
def test_reducer_fixture(path: Path) -> None:
    fixture = json.loads(path.read_text())
    state = strip_none(fixture["initial"])
    for raw in fixture["actions"]:
        action = strip_none(raw)
        state_before, action_before = copy.deepcopy(state), copy.deepcopy(action)
        new_state = reduce_07(fixture["reducer"], state, action, now=NOW, canonical=reduce)
        assert state == state_before and action == action_before, "reducer mutated its input"
        if new_state == state:
            assert new_state is state, f"{action['type']} changed nothing but copied the state"
        state = new_state
    assert strip_none(state) == strip_none(fixture["expected"]), fixture["description"]
