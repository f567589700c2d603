"""Run our own reducer cases (tests/fixtures/own-reducers/, see its README) one test per file,
with the rules the upstream fixtures run under (tests/unit/test_reducers_conformance.py)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from ahp_bridge.state.reducers import reduce
from tests.support.paths import OWN_REDUCERS
from tests.unit.test_reducers_conformance import strip_none

FILES = sorted(OWN_REDUCERS.glob("*.json"))


def test_the_cases_are_there() -> None:
    assert len(FILES) == 3
    listed = (OWN_REDUCERS / "README.md").read_text()
    assert all(f.name in listed for f in FILES), "every case is described in the README"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_own_reducer_case(path: Path) -> None:
    case = json.loads(path.read_text())
    state = strip_none(case["initial"])
    for raw in case["actions"]:
        action = strip_none(raw)
        state_before, action_before = copy.deepcopy(state), copy.deepcopy(action)
        new_state = reduce(case["reducer"], state, action)
        assert state == state_before and action == action_before, "reducer mutated its input"
        if new_state == state:
            assert new_state is state, f"{action['type']} changed nothing but copied the state"
        state = new_state
    assert strip_none(state) == strip_none(case["expected"]), case["description"]
