"""Every request method, its params drawn from its version's schema, against a real bridge.

For each line (0.7.0, 1.0.0) and each request method it defines (the wire's methods but the two
notifications), hypothesis draws batches of params from the method's `*Params` def with
hypothesis-jsonschema (`test_fuzz`'s strategies), some with a free `channel` pointed at a live
root, session, chat or annotations channel and some with their `uri`, `source` or
`destination` at a file, a directory or a missing path of the bridge's working directory, so
the handlers are reached past the lookups, and sends them on a fresh connection to the real
bridge process (`test_fuzz`'s) on 127.0.0.1. Asserted:

* every request is answered exactly once, with a result or a JSON-RPC error (an integer code
  and a message), never -32603 (the answer of a handler that raised);
* the bridge logs no `request failed`, nor any other traceback (its log: JSON lines, errors);
* the bridge still serves a new connection after each method.

`initialize` and `reconnect` are handshakes: drawn as a connection's first request, or sent
after a proper `initialize`. Bounded for CI: `PER_METHOD` examples of up to four requests each
(the profile `ahp-fuzz-params`; raise it with AHP_FUZZ_PARAMS_EXAMPLES=N). Counts are printed
(`pytest -s`): requests, results, errors by code, tracebacks.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import orjson
import pytest
import trio
from hypothesis import given, settings
from trio_websocket import ConnectionClosed, connect_websocket_url

from ahp_bridge.protocol.params import CLIENT_NOTIFICATIONS, METHODS, METHODS_V1
from tests.e2e.test_fuzz import (
    FUZZ,
    ROOT,
    Target,
    bridge_process,
    from_def,
    in_64_bits,
    new_session,
    schema_defs,
    still_serving,
)
from tests.support.ahp_client import open_client

VERSIONS = ("0.7.0", "1.0.0")
HANDSHAKES = frozenset({"initialize", "reconnect"})
#: Examples per method and line; each sends one to four requests on a connection of its own.
PER_METHOD = int(os.environ.get("AHP_FUZZ_PARAMS_EXAMPLES", "5"))
settings.register_profile("ahp-fuzz-params", FUZZ, max_examples=PER_METHOD)
PROFILE = settings.get_profile("ahp-fuzz-params")
#: Where a drawn request's free `channel` goes: as drawn, or to a live channel of that kind.
AIMS = ("drawn", "root", "session", "chat", "annotations")
#: Where its `uri`, `source` and `destination` go: as drawn, or into the working directory.
PLACES = ("drawn", ".", "bridge.toml", "data", "missing/file.txt")
URI_FIELDS = ("uri", "source", "destination")
COUNTS: Counter[str] = Counter()


def request_methods(version: str) -> list[str]:
    methods = METHODS if version == "0.7.0" else METHODS_V1
    return sorted(set(methods) - CLIENT_NOTIFICATIONS)


def params_def(method: str) -> str:
    return method[0].upper() + method[1:] + "Params"


CASES = [(version, method) for version in VERSIONS for method in request_methods(version)]


@dataclass
class Bridge:
    url: str
    log: Path
    workdir: Path
    read: int = 0  # how much of the log has been looked at

    def new_failures(self) -> list[dict[str, Any]]:
        """The log's records with a traceback since the last look."""
        with self.log.open("rb") as f:
            f.seek(self.read)
            text = f.read()
        self.read += len(text)
        records = [orjson.loads(line) for line in text.splitlines() if line.strip()]
        return [r for r in records if "exception" in r or r.get("event") == "request failed"]


@pytest.fixture(scope="module")
def bridge(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bridge]:
    """One real bridge process for the module, its log kept."""
    base = tmp_path_factory.mktemp("fuzz-params")
    try:
        with bridge_process(base, log=base / "bridge.log") as url:
            yield Bridge(url, base / "bridge.log", base)
    finally:
        print(f"\nfuzz params: {dict(sorted(COUNTS.items()))}")


def test_every_request_method_has_a_params_def() -> None:
    for version in VERSIONS:
        defs = schema_defs(version)
        assert [m for m in request_methods(version) if params_def(m) not in defs] == []
    assert {m for _, m in CASES} >= {"listSessions", "fetchTurns", "resourceRead", "moveChat"}


Drawn = tuple[Any, str, str]  # params, where the channel goes, where the URIs go


def _aimed(request: Drawn, live: dict[str, str], workdir: Path) -> Any:
    params, aim, place = request
    if not isinstance(params, dict):
        return params
    if aim != "drawn":
        params = {**params, "channel": live[aim]}
    if place != "drawn":
        uri = (workdir / place).as_uri()
        params = {**params, **{k: uri for k in URI_FIELDS if isinstance(params.get(k), str)}}
    return params


def _free_channel(defs: dict[str, Any], method: str) -> bool:
    """Whether the method's `channel` is the client's choice (not the one root it must name)."""
    channel = defs[params_def(method)].get("properties", {}).get("channel", {})
    return "enum" not in channel and "const" not in channel


async def _live_channels(url: str, version: str) -> dict[str, str]:
    """A ready session of the fake provider, its chat and annotations, and the root."""
    found = Target(url)
    async with trio.open_nursery() as nursery:
        client = await open_client(nursery, url, f"setup-{uuid.uuid4()}", versions=(version,))
        await client.initialize([ROOT])
        await new_session(client, found)
        await client.close()
    return {
        "root": ROOT,
        "session": found.session,
        "chat": found.chat,
        "annotations": found.annotations,
    }


async def _send(ws: Any, msg_id: int | str, method: str, params: Any) -> None:
    frame = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
    await ws.send_message(orjson.dumps(frame).decode())


async def _example(url: str, version: str, method: str, batch: list[Any], first: bool) -> None:
    """Send `batch` (after a proper initialize unless `first`) and check every answer."""
    answers: dict[int, dict[str, Any]] = {}
    async with trio.open_nursery() as nursery:
        ws = await connect_websocket_url(nursery, url, max_message_size=16 * 1024 * 1024)
        try:
            if not first:
                init = {"channel": ROOT, "protocolVersions": [version], "clientId": "fuzz"}
                await _send(ws, "init", "initialize", init)
                with trio.fail_after(20):
                    while orjson.loads(await ws.get_message()).get("id") != "init":
                        pass
            for msg_id, params in enumerate(batch):
                COUNTS["requests"] += 1
                await _send(ws, msg_id, method, params)
            with trio.fail_after(20):
                while len(answers) < len(batch):
                    message = orjson.loads(await ws.get_message())
                    msg_id = message.get("id")
                    if not isinstance(msg_id, int) or not (
                        "result" in message or "error" in message
                    ):
                        continue  # notifications, action envelopes
                    assert msg_id not in answers, f"request {msg_id} answered twice"
                    answers[msg_id] = message
        except ConnectionClosed as exc:  # a refused handshake closes, but after its answer
            unanswered = sorted(set(range(len(batch))) - set(answers))
            pytest.fail(f"{method}: closed ({exc.reason}) with {unanswered} unanswered")
        finally:
            with trio.move_on_after(2):
                await ws.aclose()
            await trio.aclose_forcefully(ws._stream)
    for msg_id, message in sorted(answers.items()):
        error = message.get("error")
        if error is None:
            COUNTS["results"] += 1
            continue
        assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str), error
        assert error["code"] != -32603, (method, batch[msg_id], error)
        COUNTS["errors"] += 1
        COUNTS[f"error {error['code']}"] += 1


@pytest.mark.parametrize(("version", "method"), CASES, ids=[f"{v}-{m}" for v, m in CASES])
def test_every_request_is_answered_and_nothing_raises(
    bridge: Bridge, version: str, method: str
) -> None:
    live = trio.run(_live_channels, bridge.url, version)
    defs = schema_defs(version)
    aims = AIMS if _free_channel(defs, method) else ("drawn",)
    drawn = st.tuples(
        from_def(defs, params_def(method)), st.sampled_from(aims), st.sampled_from(PLACES)
    )
    handshake = method in HANDSHAKES

    @PROFILE
    @given(st.lists(drawn, min_size=1, max_size=1 if handshake else 4), st.booleans())
    def run(requests: list[Drawn], first: bool) -> None:
        batch = [in_64_bits(_aimed(r, live, bridge.workdir)) for r in requests]
        try:
            trio.run(_example, bridge.url, version, method, batch, handshake and first)
        finally:  # this example's records, even when it failed, so the next reads its own
            failures = bridge.new_failures()
            COUNTS["tracebacks"] += len(failures)
        assert failures == [], (method, batch)

    run()
    trio.run(still_serving, bridge.url)
