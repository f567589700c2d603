"""Benchmark wire validation of a chat/delta through the tagged StateAction union.

Run: python bench/protocol_validate.py [--n N] [--reps R]
Prints ops/s (best and median of R runs of N operations); nothing here is asserted.
Paths measured, each a validate + dump of the same action:
  union python : action_adapter.validate_python(dict) + dump_python(mode="json", by_alias,
                 exclude_unset)
  union json   : action_adapter.validate_json(bytes) + dump_json(...)
  parse_action : parse_action(dict) + wire_dump(model)   (what the host calls for dispatchAction)
  envelope json: ActionEnvelope.model_validate_json(bytes) + model_dump_json(exclude_unset)
  smart union  : the generated (smart) union, for comparison
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson
from pydantic import TypeAdapter

from ahp_bridge.protocol import _generated as g
from ahp_bridge.protocol.actions import action_adapter, parse_action
from ahp_bridge.protocol.base import wire_dump
from ahp_bridge.protocol.models import ActionEnvelope

DELTA: dict[str, Any] = {
    "type": "chat/delta",
    "turnId": "turn-1",
    "partId": "part-1",
    "content": "Hello, here is the next chunk of the answer. ",
}
ENVELOPE: dict[str, Any] = {"channel": "ahp-chat:/bench", "serverSeq": 1234, "action": DELTA}


def _rate(fn: Callable[[], object], n: int, reps: int) -> tuple[float, float]:
    rates = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        rates.append(n / (time.perf_counter() - start))
    return max(rates), statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()

    delta_bytes = orjson.dumps(DELTA)
    env_bytes = orjson.dumps(ENVELOPE)
    smart_union: Any = g.ActionEnvelope.model_fields["action"].annotation
    smart: TypeAdapter[Any] = TypeAdapter(smart_union)
    dump_kw: dict[str, Any] = {"by_alias": True, "exclude_unset": True}

    def union_python() -> object:
        return action_adapter.dump_python(
            action_adapter.validate_python(DELTA), mode="json", **dump_kw
        )

    def union_json() -> object:
        return action_adapter.dump_json(action_adapter.validate_json(delta_bytes), **dump_kw)

    def via_parse_action() -> object:
        return wire_dump(parse_action(DELTA))

    def envelope_json() -> object:
        return ActionEnvelope.model_validate_json(env_bytes).model_dump_json(exclude_unset=True)

    def smart_python() -> object:
        return smart.dump_python(smart.validate_python(DELTA), mode="json", **dump_kw)

    # Sanity: every path produces the input again.
    assert union_python() == DELTA
    assert orjson.loads(union_json()) == DELTA  # type: ignore[arg-type]
    assert via_parse_action() == DELTA
    assert orjson.loads(envelope_json()) == ENVELOPE  # type: ignore[arg-type]
    assert smart_python() == DELTA

    print(f"chat/delta validate+dump, n={args.n}, reps={args.reps} (ops/s: best / median)")
    for label, fn in [
        ("union python ", union_python),
        ("union json   ", union_json),
        ("parse_action ", via_parse_action),
        ("envelope json", envelope_json),
        ("smart union  ", smart_python),
    ]:
        best, median = _rate(fn, args.n, args.reps)
        print(f"  {label}: {best:>10,.0f} / {median:>10,.0f}")


if __name__ == "__main__":
    main()
