"""The strict schema checks the suite leans on answer as Draft 2020-12 itself does.

`tests/support/wire_schema.py` walks a `oneOf` only through the branches whose discriminator
(`type`, `kind`) can match, and remembers each answer; both are speed, so neither may change
what is valid. Each action of the public 0.7.0 fixtures, as written and broken one way or
another, gets the same verdict from the narrowed validator and from jsonschema's own.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.support import wire_schema
from tests.support.paths import FIXTURES


def _actions() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted((FIXTURES / "ahp-0.7.0" / "reducers").glob("*.json")):
        found += [a for a in json.loads(path.read_text())["actions"] if isinstance(a, dict)]
    return found


def _broken(action: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The action with one thing wrong or changed: a field dropped, added or nulled, its type
    another action's or no action's, a `kind` where there is none."""
    out = copy.deepcopy(action)
    fields = [k for k in out if k != "type"]
    match rng.randrange(5):
        case 0 if fields:
            del out[rng.choice(fields)]
        case 1:
            out["unexpected"] = 1
        case 2 if fields:
            out[rng.choice(fields)] = None
        case 3:
            out["type"] = rng.choice(["chat/turnStarted", "session/titleChanged", "nope", 5])
        case _:
            out["kind"] = "markdown"
    return out


@pytest.mark.parametrize("schema", [wire_schema.ours_0_7, wire_schema.v1_0], ids=["0.7", "1.0"])
def test_the_narrowed_one_of_gives_jsonschemas_own_verdicts(schema: Any) -> None:
    rng = random.Random(25)
    actions = rng.sample(_actions(), 60)
    cases = actions + [_broken(a, rng) for a in actions for _ in range(2)]
    defs = schema().defs
    plain = Draft202012Validator({"$ref": "#/$defs/StateAction", "$defs": defs})
    ours = schema()
    verdicts = [(plain.is_valid(c), not ours.errors("StateAction", c)) for c in cases]
    assert [c for c, (want, got) in zip(cases, verdicts, strict=True) if want != got] == []
    # Both verdicts occur, so the comparison means something.
    assert {want for want, _ in verdicts} == {True, False}


def test_a_remembered_answer_is_the_same_answer() -> None:
    schema = wire_schema.ours_0_7()
    wrong = {"type": "session/titleChanged", "title": 5}
    first = schema.errors("StateAction", wrong)
    first.append("a caller's own edit")
    assert schema.errors("StateAction", wrong) == first[:-1] != []
    assert schema.errors("StateAction", {**wrong, "title": "t"}) == []
