#!/usr/bin/env python3
"""Compare two recorded corpora of whole client sessions (tests/support/corpus.py records them).

Record one per code version, then compare (stdlib only, no project import)::

    AHP_CORPUS_DIR=/work/corpus/old PYTHONPATH=$PWD/src:$PWD/adapters \\
        .venv/bin/python -m pytest -q -p no:cacheprovider tests/e2e
    python scripts/corpus.py diff OLD_DIR NEW_DIR   # exit 1 on a difference outside the list
    python scripts/corpus.py diff OLD_DIR NEW_DIR --baseline OLD_DIR2  # OLD's code, twice
    python scripts/corpus.py stats DIR              # tests, connections, frames, MB

``diff`` pairs tests by node id and their connections by index (the order they opened in the
test), normalises both sides and compares each connection. It prints a summary (tests and
connections compared, identical, different, only on one side; frames per wire version; how often
the cross-side rules 12 and 13 applied) and, per difference, the first differing frame pair.
Tests listed in ``scripts/corpus_unstable.txt`` (``--unstable FILE``) have frames that depend on
real time: their differences are reported apart and do not fail the diff. So are, with
``--baseline DIR`` (another recording of the old code), the tests that differ between the two
recordings of the old code: each recording of the suite has shown another test or two whose
frames depend on a real process's timing (the Copilot CLI above all).

Normalisation removes only what differs between two runs of the same code. Every rule below was
found, not guessed: by recording the e2e suite twice on the same commit and diffing.

Text rules, on every frame, the connection's client id and its URL:

1. Temporary paths: ``/tmp/pytest-of-USER/pytest-N`` (pytest's ``tmp_path`` root; N grows each
   run), with pytest-xdist's ``/popen-gwN`` worker folder after it, becomes ``<tmp>``; the
   test's own folder and file names after it are kept, but for the number pytest puts after
   a folder named for the first 30 characters of a test's name (numbered in the order the
   worker ran the tests of that prefix): it becomes ``<n>``. ``tempfile`` names
   (``/tmp/tmpXXXXXXXX``) too. The checkout itself (``--roots``) becomes ``<repo>``.
2. Ephemeral ports: ``HOST:PORT`` (an IPv4 address, ``localhost`` or ``[IPv6]``) keeps the host
   and gets ``<port>``; so does the bridge's port inside a client id (``c41323``, test_sign_in).
3. Connection tokens: the value of ``tkn=`` becomes ``<token>``; a connection's URL loses the
   token query and a bare ``/`` path (the same resource as none): whether a bridge asks for a
   token is its configuration, and issue 23 put one on every bind.
4. Times: an ISO-8601 timestamp becomes ``<time>`` and a bare 13-digit epoch-ms number from this
   century ``"<epoch-ms>"``, except values the test's clients sent (in any frame of any of its
   connections), which stay verbatim: a host that echoes a client's time must echo it exactly.
   A turn's ``duration`` (milliseconds measured on the host's clock) becomes ``"<ms>"``.
5. Ids drawn afresh each run become ``<uuid-N>``, ``<etag-N>``, ``<call-N>``, numbered per
   connection in order of first appearance: UUIDs (client- or host-made, dashed, or 32-hex
   version-4 ``uuid4().hex`` as in ``my-secret-prompt-<hex>`` and ``gho_<hex>`` test tokens),
   file etags (``MTIMENS-SIZE-INODE`` in hex, host/workspace_io.py), and the tool call ids the
   scripted model servers make from the clock or an object's address (``toolu_TIME N_I``,
   tests/support/anthropic_server.py; ``call_ADDR_I``, model_server.py; ``call-HEX8`` and
   ``edit-HEX8``, acp_agent.py). Equality does not rest on the numbering: frames are compared
   with each id replaced by its kind, and the ids of one side must map one to one onto the
   other's across the whole connection (so an id used consistently stays so).
6. Cursors: a ``cursor``/``nextCursor`` that is base64url JSON (listSessions' ``[modifiedAt,
   resource]``) is shown decoded, so rules 4 and 5 apply inside it.
7. Sequence numbers: ``serverSeq``, ``fromSeq`` and ``lastSeenServerSeq`` become ``"<seq eE>"``,
   keeping only the epoch E (the high 32 bits, bumped by a restart). The counter is global over
   every channel, so its value depends on how many envelopes the host's tasks emitted before,
   in whatever order they ran, and on rule 10's coalescing; the order within a channel is kept
   by rule 8.

Rules on the parsed frames received:

8. Streams. A connection is compared stream by stream, not as one interleaving (trio schedules
   runnable tasks in a random order, and the client's sends and receives interleave by timing):
   what the client sent, in order; the responses, in the order of the requests they answer;
   per channel, the accepted ``action`` envelopes in order; per channel, the refused ones (a
   refusal goes to its sender alone, where its dispatch met the host's own output); per
   notification method and session, the notifications in order.
9. Clock-only summary changes: a ``modifiedAt`` in the ``changes`` of
   ``root/sessionSummaryChanged`` or ``session/chatUpdated`` is dropped, and a change that had
   nothing else is dropped whole: the host reports ``modifiedAt`` only when its millisecond clock
   moved between two events (host/summaries.py), so whether it is there is real time.
10. Coalescing: adjacent ``chat/delta`` (or ``chat/reasoning``) envelopes of one channel's stream
    with the same turnId and partId, no ``_meta``, no origin and no refusal are merged into the
    first, contents concatenated: exactly what translate/coalesce.py does with a burst, and how
    many deltas a burst holds depends on how fast the provider ran against the host's drain.
11. Copilot's token count: on a connection that saw a session of provider ``copilot`` (the real
    CLI), the ``used`` of ``ahpBridge.context`` becomes ``"<tokens>"``: it is the CLI's own
    ``currentTokens`` (passed through, adapters/ahp_bridge_copilot/mapping.py), and moves by a
    few tokens from run to run.

Rules across the two sides (they need both; each use is counted in the summary):

12. A subscribe that raced the host's own work (``ready_chat`` subscribes while the session is
    still being created): when a subscribe result's snapshot differs and one side's envelopes on
    that channel are the other's with k more at the front, the two snapshots were taken k
    actions apart; those k are dropped and the two snapshots are not compared.
13. The end of a connection: a stream may stop early on one side where what is missing arrived
    after the client's last send (the test had seen what it waited for and closed), or anywhere
    when the host cut the client off (close 1008 or 1009: answers in flight at the cut); the
    last frame there may be a shorter piece of the same streamed append (rule 10 in mid-burst).

Two more things keep a difference from failing the diff, each counted in the summary apart:

- Intended changes (``INTENDED`` below): the changes the new code makes on purpose (a fixed
  bug, a new wire line offered, a reworded refusal), each one rewrite of a received frame
  applied to both sides, with the issue it came from. ``--no-intended`` compares without them.
- Inputs that differ: where a test itself sends other frames than before, runs another
  version of a real agent (``REPINNED``), opens another number
  of connections or names its clients otherwise (the test was changed with the code), the same
  inputs were not replayed, so the test cannot prove anything (what one of its connections
  sent can change what another receives); it is reported as ``inputs changed``, not as a
  difference of the host's.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

UNSTABLE = Path(__file__).with_name("corpus_unstable.txt")

_TMP = re.compile(r"/tmp/pytest-of-[^/\"\\\s]+/pytest-\d+(?:/popen-gw\d+)?|/tmp/tmp[A-Za-z0-9_]{8}")
#: Rule 1: pytest names a test's folder after the first 30 characters of the test's name and
#: numbers the folders of one prefix as the worker makes them, in the order it ran them.
_TMP_NUMBER = re.compile(r"(<tmp>/[^/\"\\\s]{30})\d+")
_PORT = re.compile(r"(\d{1,3}(?:\.\d{1,3}){3}|localhost|\[[0-9a-fA-F:.]+\]):\d{1,5}(?!\d)")
_URL_PORT = re.compile(r"^\w+://[^/]*:(\d+)")
_TOKEN = re.compile(r"(tkn=)[^&\"\\\s#]+")
#: Rule 3, on a connection's URL: the token query, and the `/` path that carries it.
_URL_TOKEN = re.compile(r"/?(\?tkn=<token>)?$")
_ISO = re.compile(
    r"\d{4}-[01]\d-[0-3]\dT[0-2]\d:[0-5]\d(?::[0-5]\d(?:\.\d+)?)?(?:Z|[+-][0-2]\d:?[0-5]\d)?"
)
_EPOCH_MS = re.compile(r"(?<=[:,\[])1[5-9]\d{11}(?=[,\]}])")
_DURATION = re.compile(r'("duration":)\d+(?:\.\d+)?')
_SEQ = re.compile(r'("(?:serverSeq|fromSeq|lastSeenServerSeq)":)(\d+)')
_COPILOT_USED = re.compile(r'("ahpBridge\.context":\{"used":)\d+')
_CURSOR = re.compile(r'("(?:cursor|nextCursor)":)"([A-Za-z0-9_-]{8,})"')
#: Ids a run draws afresh, numbered per connection: (pattern, placeholder prefix).
_IDS = (
    (
        re.compile(
            r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
            r"|(?<![0-9a-fA-F])[0-9a-f]{12}4[0-9a-f]{3}[89ab][0-9a-f]{15}(?![0-9a-fA-F])"
        ),
        "uuid",
    ),
    (re.compile(r"(?<![\w-])[0-9a-f]{14,16}-[0-9a-f]{1,16}-[0-9a-f]{1,16}(?![\w-])"), "etag"),
    (re.compile(r"\btoolu_\d+_\d+|\bcall_\d{6}_\d+|\b(?:call|edit)-[0-9a-f]{8}\b"), "call"),
)
_ANY_ID = re.compile("|".join(f"(?P<{kind}>{pattern.pattern})" for pattern, kind in _IDS))


@dataclass(frozen=True)
class Intended:
    """A change the new code makes on purpose: `rewrite` takes a received frame (parsed) and
    returns it in the shape both sides are compared in, or None when it does not apply."""

    name: str
    rewrite: Callable[[Any], Any | None]


#: Filled in below the frame helpers (they use them).
INTENDED: list[Intended] = []


@dataclass
class Frame:
    dir: str
    #: The text (or `bytes:BASE64`, or `close CODE REASON`) as recorded, then as normalised.
    text: str
    version: str | None = None
    #: What it is compared with (rule 8): `out`, `response`, `action CHANNEL`, `METHOD ...`.
    stream: str = ""
    #: The text with each id replaced by its kind, and the ids (rule 5) in order.
    masked: str = ""
    ids: list[str] = field(default_factory=list)
    #: Received after the client's last send (rule 13).
    tail: bool = False
    #: The stream's name masked, and its ids (rule 5).
    stream_masked: str = ""
    stream_ids: list[str] = field(default_factory=list)


@dataclass
class Connection:
    index: int
    client: str | None
    version: str | None
    url: str
    frames: list[Frame] = field(default_factory=list)
    header: Frame | None = None

    def streams(self) -> dict[str, list[Frame]]:
        out: dict[str, list[Frame]] = {}
        for frame in self.frames:
            out.setdefault(frame.stream or frame.dir, []).append(frame)
        return out


@dataclass
class Test:
    nodeid: str
    connections: dict[int, Connection] = field(default_factory=dict)


# -- loading -----------------------------------------------------------------------------------


def load(folder: Path) -> dict[str, Test]:
    """Every test recorded in `folder`, by node id."""
    tests: dict[str, Test] = {}
    for path in sorted(folder.glob("*.jsonl")):
        test = load_file(path.read_text(encoding="utf-8").split("\n"))
        tests[test.nodeid] = test
    return tests


def load_file(lines: Iterable[str]) -> Test:
    test: Test | None = None
    for line in lines:
        if not line.strip():
            continue
        rec = json.loads(line)
        if test is None:
            test = Test(rec["test"])
            continue
        index = rec["conn"]
        if "dir" not in rec:
            test.connections[index] = Connection(
                index, rec.get("client"), rec.get("version"), rec.get("url") or ""
            )
            continue
        conn = test.connections[index]
        if rec["dir"] == "close":
            text = f"close {rec.get('code')} {rec.get('reason') or ''}".rstrip()
        elif "bytes" in rec:
            text = "bytes:" + rec["bytes"]
        else:
            text = rec["text"]
        conn.frames.append(Frame(rec["dir"], text, rec.get("version")))
    if test is None:
        raise ValueError("an empty corpus file")
    return test


# -- normalisation -----------------------------------------------------------------------------


def sent_times(test: Test) -> set[str]:
    """The timestamps (rule 4) the test's clients sent, on any connection."""
    found: set[str] = set()
    for conn in test.connections.values():
        for frame in conn.frames:
            if frame.dir in ("out", "unsent"):
                found.update(_ISO.findall(frame.text))
                found.update(_EPOCH_MS.findall(frame.text))
    return found


def _cursor(match: re.Match[str]) -> str:
    """Rule 6: an opaque cursor that is base64url JSON, shown decoded (then normalised)."""
    raw = match[2]
    try:
        decoded = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
        json.loads(decoded)
    except ValueError:
        return match[0]
    return match[1] + json.dumps(f"<cursor {decoded}>", ensure_ascii=False)


def _seq(match: re.Match[str]) -> str:
    """Rule 7."""
    return f'{match[1]}"<seq e{int(match[2]) >> 32}>"'


class Normaliser:
    """The text rules for one connection (rules 1-7; ids are numbered by `number`)."""

    def __init__(self, keep_times: set[str], url: str, root: str | None = None) -> None:
        self.keep = keep_times
        #: Rule 1: the checkout the suite ran in (the bridge's default directory in some tests).
        self.root = re.compile(re.escape(root.rstrip("/")) + r"(?=[/\"\\]|$)") if root else None
        self.ids: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        port = _URL_PORT.match(url)
        #: Rule 2: the bridge's port inside a client's own id (`c41323`).
        self.port_in_id = re.compile(rf"(?<=[A-Za-z]){port[1]}(?=\"|$)") if port else None

    def text(self, text: str) -> str:
        text = _CURSOR.sub(_cursor, text)
        text = _TMP_NUMBER.sub(r"\1<n>", _TMP.sub("<tmp>", text))
        if self.root is not None:
            text = self.root.sub("<repo>", text)
        text = _PORT.sub(r"\1:<port>", text)
        if self.port_in_id is not None:
            text = self.port_in_id.sub("<port>", text)
        text = _TOKEN.sub(r"\1<token>", text)
        text = _ISO.sub(lambda m: m[0] if m[0] in self.keep else "<time>", text)
        text = _EPOCH_MS.sub(lambda m: m[0] if m[0] in self.keep else '"<epoch-ms>"', text)
        text = _DURATION.sub(r'\1"<ms>"', text)
        return _SEQ.sub(_seq, text)

    def ids_of(self, text: str) -> tuple[str, str, list[str]]:
        """Rule 5 on `text`: (numbered, masked with the kind only, the ids in order)."""
        found: list[str] = []

        def number(match: re.Match[str]) -> str:
            key, kind = match[0].lower(), match.lastgroup or "id"
            found.append(key)
            if key not in self.ids:
                self.counts[kind] = self.counts.get(kind, 0) + 1
                self.ids[key] = f"<{kind}-{self.counts[kind]}>"
            return self.ids[key]

        numbered = _ANY_ID.sub(number, text)
        return numbered, _ANY_ID.sub(lambda m: f"<{m.lastgroup}>", text), found


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # fuzzed frames: anything, nested thousands deep
        return None


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def stream_of(frame: Frame, value: Any) -> str:
    """Rule 8: which stream a received frame belongs to."""
    if not isinstance(value, dict):
        return "in"
    params: dict[str, Any] = value["params"] if isinstance(value.get("params"), dict) else {}
    if "method" not in value and ("result" in value or "error" in value):
        return "response"
    if value.get("method") == "action":
        refused = "rejected" if params.get("rejectionReason") is not None else "action"
        return f"{refused} {params.get('channel')}"
    if isinstance(value.get("method"), str):
        return " ".join(str(p) for p in (value["method"], params.get("session")) if p)
    return "in"


def _drop_clock_only(value: Any) -> tuple[Any, bool]:
    """Rule 9 on a parsed frame: (the frame, or None when nothing is left; whether it changed)."""
    params = value.get("params") if isinstance(value, dict) else None
    if not isinstance(params, dict):
        return value, False
    holder = params
    if value.get("method") == "action" and isinstance(params.get("action"), dict):
        holder = params["action"]
        if holder.get("type") != "session/chatUpdated":
            return value, False
    elif value.get("method") != "root/sessionSummaryChanged":
        return value, False
    changes = holder.get("changes")
    if not isinstance(changes, dict) or "modifiedAt" not in changes:
        return value, False
    del changes["modifiedAt"]
    return (value if changes else None), True


#: Tests renamed between the two recordings (old node id: new node id), compared as one.
_WV = "tests/e2e/test_wire_versions.py::test_"
RENAMED = {
    "tests/e2e/test_acp_claude_bridge.py::test_claude_code_over_websocket": (
        "tests/e2e/test_acp_claude_bridge.py::test_claude_agent_over_websocket"
    ),
    f"{_WV}1_0_only_actions_never_reach_0_9_or_0_7": (
        f"{_WV}1_0_only_actions_never_reach_the_older_lines"
    ),
    f"{_WV}a_known_turn_id_is_a_no_op_for_1_0_and_refused_for_0_7": (
        f"{_WV}a_known_turn_id_is_a_no_op_for_1_0_and_refused_before_0_9"
    ),
    f"{_WV}every_command_takes_meta_in_1_0": f"{_WV}every_command_takes_meta_from_0_8",
    f"{_WV}the_demo_tour_on_three_versions": f"{_WV}the_demo_tour_on_five_versions",
    f"{_WV}the_session_list_carries_chats_for_1_0_and_not_for_0_7": (
        f"{_WV}the_session_list_carries_chats_from_1_0_and_one_directory_for_0_6"
    ),
}


#: Test modules whose runtime is another program between the two recordings (a real agent
#: pinned anew): what it sends the bridge is an input that changed, as a test's own frames are.
REPINNED = {
    "tests/e2e/test_acp_claude_bridge.py": (
        "the agent, Claude Code (claude-code-acp 0.16.2) then Claude Agent (claude-agent-acp "
        "0.23.1, issue 24), and its scripted Anthropic server"
    ),
}


#: Rule 14: modules whose tests share one bridge (a module-scoped fixture).
SHARED_BRIDGE = frozenset({"tests/e2e/test_fuzz_params.py"})
_FIXTURE_DIR = re.compile(r"(fuzz-params)\d+")


def _shared_bridge(value: Any) -> Any | None:
    """Rule 14: under pytest-xdist, which of the module's tests a worker ran before on the
    shared bridge is the scheduler's choice: the root's `activeSessions` counts them, and the
    fixture's directory is numbered by how many bridges the worker started."""
    holders = [*_result_states(value), _dig(value, "params", "action")]
    changed = False
    for holder in holders:
        if isinstance(holder, dict) and isinstance(holder.get("activeSessions"), int):
            holder["activeSessions"] = "<n>"
            changed = True
    text = _dump(value)
    if _FIXTURE_DIR.search(text):
        return json.loads(_FIXTURE_DIR.sub(r"\1<n>", text))
    return value if changed else None


# -- intended changes (see the module docstring) ------------------------------------------------


def _dig(value: Any, *path: str | int) -> Any:
    """`value[p0][p1]...`, or None where the path does not lead."""
    for key in path:
        if isinstance(key, int):
            if not isinstance(value, list) or not -len(value) <= key < len(value):
                return None
        elif not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def _result_states(value: Any) -> list[dict[str, Any]]:
    """The root or session/chat states a response or notification carries (snapshots)."""
    found: list[dict[str, Any]] = []
    result = _dig(value, "result")
    for snapshot in [
        *(_dig(result, "snapshots") or []),
        _dig(result, "snapshot"),
    ]:
        state = _dig(snapshot, "state")
        if isinstance(state, dict):
            found.append(state)
    return found


def _lines_offered(value: Any) -> Any | None:
    """Issue 21: the bridge serves five wire lines (0.10, 0.8 and 0.6 added), and says so in the
    initialize result's `_meta` and in an unsupported offer's error data."""
    changed = False
    for holder, key in (
        (_dig(value, "result", "_meta"), "ahpBridge.supportedVersions"),
        (_dig(value, "error", "data"), "supportedVersions"),
    ):
        if isinstance(holder, dict) and isinstance(holder.get(key), list):
            holder[key] = "<lines served>"
            changed = True
    return value if changed else None


def _claude_agent(value: Any) -> Any | None:
    """Issue 24: the ACP agent Claude Code is Claude Agent (npm `claude-agent-acp`, pinned anew),
    and its models are the ones that agent reports."""
    changed = False
    for state in _result_states(value):
        for agent in state.get("agents") or []:
            if not isinstance(agent, dict):
                continue
            name = agent.get("displayName")
            if name in ("Claude Code", "Claude Agent"):
                agent["displayName"] = "Claude Agent"
                agent["description"] = "Claude Agent through ahp-bridge"
                agent["models"] = "<the agent's models>"
                changed = True
        model = _dig(state, "config", "schema", "properties", "model")
        if isinstance(model, dict) and _CLAUDE_MODELS & set(model.get("enum") or []):
            model["enum"] = model["enumLabels"] = "<the agent's models>"
            changed = True
    text = _dump(value)
    if _CLAUDE_ANSWER in text:  # the scripted Anthropic server's answer, renamed with it
        return json.loads(text.replace(_CLAUDE_ANSWER, "Hello from Claude, streamed"))
    return value if changed else None


_CLAUDE_ANSWER = "Hello from Claude Code, streamed"
#: The models the two pinned Claude agents report, 0.16.2's and 0.23.1's.
_CLAUDE_MODELS = frozenset({"opus", "sonnet[1m]"})


_STILL_ACTIVE = re.compile(r"^turn (\S+) is still active$")


def _one_wording(value: Any) -> Any | None:
    """Issue 20: one wording per rule; a second turn while one runs is refused as "still
    running: cancel it or wait until it ends" (it was "still active" here, "busy" there)."""
    params = _dig(value, "params")
    reason = _dig(params, "rejectionReason")
    if not isinstance(reason, str):
        return None
    match = _STILL_ACTIVE.match(reason)
    if match is None:
        return None
    params["rejectionReason"] = f"turn {match[1]} is still running: cancel it or wait until it ends"
    return value


def _provider_named(value: Any) -> Any | None:
    """Issue 22: an unknown provider's error names the providers the bridge serves."""
    error = _dig(value, "error")
    message = _dig(error, "message")
    if isinstance(message, str) and message.startswith("Provider not found: "):
        error["message"] = re.sub(r" \(served: [^)]*\)$", "", message)
        return value
    return None


def _goodbye(value: Any) -> Any | None:
    """Issue 23: a bridge that stops says goodbye (close 1001) where its clients saw the socket
    drop (1006). Applied to close frames' text (`close CODE REASON`)."""
    if isinstance(value, str) and value.startswith(f"close 1001 {_GOING_AWAY}"):
        return "close 1006"
    return None


_GOING_AWAY = "going away: the bridge is stopping"


def _too_big(value: Any) -> Any | None:
    """Issue 25: a 1009 close's reason is the host's (the key that bounds a message, and what to
    do), no longer the WebSocket library's. Applied to close frames' text."""
    if isinstance(value, str) and value.startswith("close 1009 "):
        return "close 1009 <over server.max_frame_bytes>"
    return None


def _live_turns(value: Any) -> Any | None:
    """Issue 23: a chat's live state keeps its last `limits.max_live_turns` (50) turns; older
    ones are paged back with fetchTurns (the snapshot says where with `turnsNextCursor`)."""
    changed = False
    for state in _result_states(value):
        turns = state.get("turns")
        if not isinstance(turns, list):
            continue
        if "turnsNextCursor" in state:  # the new shape: its turns as they are
            state["turnsNextCursor"] = "<older turns>"
            changed = True
        elif len(turns) > 50:  # the old shape: what the new one keeps live
            state["turns"] = turns[-50:]
            state["turnsNextCursor"] = "<older turns>"
            changed = True
    return value if changed else None


_CONTENT_BYTES = re.compile(r"(changes\.max_content_bytes = )67108864\b")


def _new_defaults(value: Any) -> Any | None:
    """Issue 23: defaults that bound one client's worst case (`changes.max_content_bytes` 64 to
    8 MiB), named in the messages that quote them."""
    message = _dig(value, "error", "message")
    if isinstance(message, str) and _CONTENT_BYTES.search(message):
        value["error"]["message"] = _CONTENT_BYTES.sub(r"\g<1>8388608", message)
        return value
    return None


INTENDED.extend(
    [
        Intended("issue 21: five wire lines served", _lines_offered),
        Intended("issue 24: Claude Agent (pinned anew)", _claude_agent),
        Intended("issue 20: one wording per rule", _one_wording),
        Intended("issue 22: an unknown provider's error names those served", _provider_named),
        Intended("issue 23: a goodbye (1001) when the bridge stops", _goodbye),
        Intended("issue 23: a chat keeps its last 50 turns live", _live_turns),
        Intended("issue 23: defaults that bound a client", _new_defaults),
        Intended("issue 25: a 1009 names the key that bounds a message", _too_big),
    ]
)


def _mergeable(env: Any) -> bool:
    if not isinstance(env, dict) or env.get("method") != "action":
        return False
    params = env.get("params")
    if not isinstance(params, dict):
        return False
    action = params.get("action")
    return (
        isinstance(action, dict)
        and action.get("type") in ("chat/delta", "chat/reasoning")
        and "_meta" not in action
        and params.get("rejectionReason") is None
        and params.get("origin") is None
        and isinstance(action.get("content"), str)
    )


def _coalesce(frames: list[tuple[Frame, Any]]) -> list[tuple[Frame, Any]]:
    """Rule 10: adjacent streamed text appends of one stream merged (as translate/coalesce.py
    merges a burst); the merged envelope keeps the first one's frame fields."""
    out: list[tuple[Frame, Any]] = []
    for frame, value in frames:
        if out and _mergeable(value) and _mergeable(out[-1][1]):
            last_frame, last = out[-1]
            a, b = last["params"]["action"], value["params"]["action"]
            if last_frame.stream == frame.stream and all(
                a.get(k) == b.get(k) for k in ("type", "turnId", "partId")
            ):
                a["content"] += b["content"]
                last_frame.text = ""  # re-serialised below
                continue
        out.append((frame, value))
    return out


def normalise(
    test: Test,
    intended: Iterable[Intended] = (),
    applied: Counter[str] | None = None,
    root: str | None = None,
) -> Test:
    """`test` with every rule applied, and the `intended` changes (counted in `applied`);
    `root` is the checkout the recording ran in (rule 1)."""
    keep = sent_times(test)
    out = Test(test.nodeid)
    rules = list(intended)
    if test.nodeid.split("::", 1)[0] in SHARED_BRIDGE:
        rules.insert(0, Intended("rule 14: a bridge shared by the module's tests", _shared_bridge))
    for index, conn in test.connections.items():
        out.connections[index] = normalise_connection(conn, keep, rules, applied, root)
    return out


def _intended(value: Any, rules: list[Intended], applied: Counter[str] | None) -> tuple[Any, bool]:
    changed = False
    for rule in rules:
        rewritten = rule.rewrite(value)
        if rewritten is not None:
            value, changed = rewritten, True
            if applied is not None:
                applied[rule.name] += 1
    return value, changed


def normalise_connection(
    conn: Connection,
    keep: set[str],
    intended: list[Intended] | None = None,
    applied: Counter[str] | None = None,
    root: str | None = None,
) -> Connection:
    norm = Normaliser(keep, conn.url, root)
    sent = [Frame(f.dir, norm.text(f.text), f.version, f.dir) for f in conn.frames]
    if any('"provider":"copilot"' in f.text for f in sent):  # rule 11
        for frame in sent:
            frame.text = _COPILOT_USED.sub(r'\1"<tokens>"', frame.text)
    last_out = max((i for i, f in enumerate(sent) if f.dir in ("out", "unsent")), default=-1)
    for i, frame in enumerate(sent):
        frame.tail = i > last_out
    # Rules 8-10 on the received frames, parsed.
    parsed: list[tuple[Frame, Any]] = []
    for frame in sent:
        if frame.dir == "close" and intended:
            text, _ = _intended(frame.text, intended, applied)
            frame.text = text
        value = _parse(frame.text) if frame.dir == "in" else None
        if frame.dir == "in" and intended:
            value, rewritten = _intended(value, intended, applied)
            if rewritten:
                frame.text = ""  # re-serialised below
        if frame.dir == "in":
            value, changed = _drop_clock_only(value)
            if changed and value is None:
                continue
            if changed:
                frame.text = ""  # re-serialised below
            frame.stream = stream_of(frame, value)
        parsed.append((frame, value))
    by_stream: dict[str, list[tuple[Frame, Any]]] = {}
    for pair in parsed:
        by_stream.setdefault(pair[0].stream, []).append(pair)
    kept = {id(f) for pairs in by_stream.values() for f, _ in _coalesce(pairs)}
    frames = []
    for frame, value in parsed:
        if id(frame) not in kept:
            continue
        if frame.text == "" and value is not None:
            frame.text = _dump(value)
        frames.append(frame)
    # Responses in the order of the requests they answer.
    asked: dict[str, int] = {}
    for i, frame in enumerate(frames):
        if frame.dir == "out":
            value = _parse(frame.text)
            if isinstance(value, dict) and "method" in value and "id" in value:
                asked.setdefault(_dump(value["id"]), i)

    def answers(frame: Frame) -> int:
        value = _parse(frame.text)
        return asked.get(_dump(value.get("id")) if isinstance(value, dict) else "", 1 << 60)

    responses = sorted((f for f in frames if f.stream == "response"), key=answers)
    it = iter(responses)
    frames = [next(it) if f.stream == "response" else f for f in frames]
    # Rule 5: ids numbered by first appearance in a reading order that does not depend on the
    # interleaving: the client id and URL, what the client sent, the responses, then the rest.
    client, url = norm.text(conn.client or ""), _URL_TOKEN.sub("", norm.text(conn.url))
    header = norm.ids_of(f"{client}\n{url}")
    sent_first = [f for f in frames if f.dir in ("out", "unsent")]
    rest = [f for f in frames if f.dir not in ("out", "unsent") and f.stream != "response"]
    for frame in [*sent_first, *responses, *rest]:
        frame.text, frame.masked, frame.ids = norm.ids_of(frame.text)
        frame.stream, frame.stream_masked, frame.stream_ids = norm.ids_of(frame.stream)
    client_n, url_n = header[0].split("\n", 1)
    out = Connection(conn.index, client_n if conn.client is not None else None, conn.version, url_n)
    out.frames, out.header = (
        frames,
        Frame("header", header[0], None, "header", header[1], header[2]),
    )
    return out


@dataclass
class Difference:
    test: str
    conn: int | None
    what: str
    old: Frame | None = None
    new: Frame | None = None
    at: int | None = None


class _Correspondence:
    """Rule 5's check: the ids of one side map one to one onto the other's."""

    def __init__(self) -> None:
        self.fwd: dict[str, str] = {}
        self.bwd: dict[str, str] = {}

    def same(self, x: Frame, y: Frame) -> bool:
        if x.masked != y.masked:
            return False
        for a, b in zip(x.ids, y.ids, strict=True):
            if self.fwd.setdefault(a, b) != b or self.bwd.setdefault(b, a) != a:
                return False
        return True


def _subscribed(frame: Frame) -> str | None:
    """The channel a subscribe result's snapshot is of (as numbered), if it is one."""
    value = _parse(frame.text)
    result = value.get("result") if isinstance(value, dict) else None
    snapshot = result.get("snapshot") if isinstance(result, dict) else None
    resource = snapshot.get("resource") if isinstance(snapshot, dict) else None
    return resource if isinstance(resource, str) else None


#: What a difference in what the test's clients sent is called: not the host's difference.
INPUTS = "inputs changed"

#: Close codes with which the host cuts a client off (1008 too slow, 1009 frame too big).
HOST_CUTS = frozenset({"close 1008", "close 1009"})


def _cut_inside(x: Frame, y: Frame) -> bool:
    """Rule 13: `x` and `y` are the same streamed text append, one content a prefix of the
    other's (the end of the connection fell inside a burst that was still being merged)."""
    a, b = _parse(x.masked), _parse(y.masked)
    if not (_mergeable(a) and _mergeable(b)):
        return False
    ca, cb = a["params"]["action"].pop("content"), b["params"]["action"].pop("content")
    return bool(a == b and (ca.startswith(cb) or cb.startswith(ca)))


def _closed_by_host(conn: Connection) -> bool:
    return any(
        f.dir == "close" and " ".join(f.text.split(" ")[:2]) in HOST_CUTS for f in conn.frames
    )


def _pair_streams(
    order: list[str], a: dict[str, list[Frame]], b: dict[str, list[Frame]], ids: _Correspondence
) -> list[tuple[str | None, str | None]]:
    """Each stream of `a` with its stream in `b`: named by the same ids (through the
    correspondence so far), or else the first unpaired one of the same masked name."""
    pairs: list[tuple[str | None, str | None]] = []
    free = list(b)
    for key in order:
        if key not in a:
            continue
        head = a[key][0]
        want = [ids.fwd.get(i) for i in head.stream_ids]
        match = None
        for other in free:
            cand = b[other][0]
            if cand.stream_masked != head.stream_masked:
                continue
            if all(w == c for w, c in zip(want, cand.stream_ids, strict=True)):
                match = other
                break
            consistent = all(
                (w is None and c not in ids.bwd) or w == c
                for w, c in zip(want, cand.stream_ids, strict=True)
            )
            if match is None and consistent:
                match = other
        if match is not None:
            free.remove(match)
        pairs.append((key, match))
    pairs.extend((None, key) for key in free)
    return pairs


def _raced_by(xs: list[Frame], ys: list[Frame]) -> int:
    """Rule 12 on one channel: k > 0 when `xs` is `ys` with k more envelopes at the front, k < 0
    the other way round, 0 when neither. Where the two also end apart, what one has past the
    other's end must have arrived after the client's last send (rule 13 applies to it then)."""
    k = len(xs) - len(ys)
    longer, shorter = (xs, ys) if k > 0 else (ys, xs)
    if k and [f.masked for f in longer[abs(k) :]] == [f.masked for f in shorter]:
        return k  # the same ends
    for front, other, sign in ((xs, ys, 1), (ys, xs, -1)):
        for k in range(1, len(front) + 1):
            rest = front[k:]
            n = min(len(rest), len(other))
            if n == 0 or any(x.masked != y.masked for x, y in zip(rest, other, strict=False)):
                continue
            if all(f.tail for f in rest[n:]) and all(f.tail for f in other[n:]):
                return sign * k
    return 0


def compare_connection(
    test: str, old: Connection, new: Connection, notes: Counter[str] | None = None
) -> Difference | None:
    """The first difference between two normalised connections, stream by stream, or None.

    Rule 12, a subscribe that raced the host's own work: when a subscribe result's snapshot
    differs and one side's envelopes on that channel are the other's with k more at the front,
    the snapshots were taken k actions apart; the k are dropped and the snapshots not compared.
    Rule 13, the end: a stream may stop early on one side where what is missing arrived after
    the client's last send (the test had seen what it waited for and closed), or anywhere when
    the host cut the connection (1008, 1009: answers in flight at the cut); its last frame may
    then be a shorter part of the same streamed append.
    """
    notes = Counter() if notes is None else notes
    ids = _Correspondence()
    if old.client != new.client:  # the test chose another client id: its inputs changed
        what = f"{INPUTS}: the client id"
        return Difference(test, old.index, what, old.header, new.header)
    what = "connection differs (client, version or url)"
    version_seen = old.version is not None and new.version is not None
    if not version_seen and (_closed_by_host(old) or _closed_by_host(new)):
        # Rule 13: the host cut it off before the initialize answer reached one side (the
        # version is what the client was answered), so that side saw no version at all.
        notes["no version before the cut (rule 13)"] += 1
    elif old.version != new.version or (
        old.header is not None and new.header is not None and not ids.same(old.header, new.header)
    ):
        return Difference(test, old.index, what, old.header, new.header)
    a, b = old.streams(), new.streams()
    # What the client sent first: it names (nearly) every id the other streams are named by.
    order = ["out", "unsent"] + [k for k in a if k not in ("out", "unsent")]
    if _closed_by_host(old) or _closed_by_host(new):
        # Rule 13: what the client sent before the cut and what it could not send after it are
        # one sequence; where the cut fell in it is timing.
        # A client may also stop sending once it sees the cut: only what both sent compares.
        sent = [side.get("out", []) + side.pop("unsent", []) for side in (a, b)]
        n = min(len(sent[0]), len(sent[1]))
        for side, frames in zip((a, b), sent, strict=True):
            if frames:
                side["out"] = frames[:n]
            if len(frames) > n:
                notes["sends after the cut (rule 13)"] += 1
    for key in ("out", "unsent"):
        for at, (x, y) in enumerate(zip(a.get(key, []), b.get(key, []), strict=False)):
            if not ids.same(x, y):
                return Difference(test, old.index, f"{INPUTS}: stream {key!r} differs", x, y, at)
    pairs = _pair_streams(order, a, b, ids)
    # Rule 12: which subscribe results differ, and whether their channel's stream explains it.
    differing = [
        (_subscribed(x), _subscribed(y))
        for x, y in zip(a.get("response", []), b.get("response", []), strict=False)
        if x.masked != y.masked and _subscribed(x) is not None and _subscribed(y) is not None
    ]
    raced: set[tuple[str | None, str | None]] = set()
    for key_a, key_b in pairs:
        key = key_a or key_b or ""
        if not key.startswith("action "):
            continue
        both = [
            (cx, cy) for cx, cy in differing if key_a == f"action {cx}" or key_b == f"action {cy}"
        ]
        if not both:
            continue
        xs, ys = a.get(key_a or "", []), b.get(key_b or "", [])
        k = _raced_by(xs, ys)
        if k:
            del (xs if k > 0 else ys)[: abs(k)]
            raced.update(both)
    notes["subscribes raced (rule 12)"] += len(raced)
    cut = _closed_by_host(old) and _closed_by_host(new)
    for key_a, key_b in pairs:
        key = key_a or key_b or ""
        xs, ys = a.get(key_a or "", []), b.get(key_b or "", [])
        n = min(len(xs), len(ys))
        for at, (x, y) in enumerate(zip(xs, ys, strict=False)):
            if key == "response" and (_subscribed(x), _subscribed(y)) in raced:
                continue
            if ids.same(x, y):
                continue
            if at == n - 1 and (cut or (x.tail and y.tail)) and _cut_inside(x, y):
                notes["streams cut at the end (rule 13)"] += 1
                continue
            return Difference(test, old.index, f"stream {key!r} differs", x, y, at)
        if len(xs) != len(ys):
            extra = xs[n:] if len(xs) > n else ys[n:]
            if key not in ("out", "unsent", "close") and (cut or all(f.tail for f in extra)):
                notes["streams cut at the end (rule 13)"] += 1
                continue
            closed, unread = (old, new) if xs else (new, old)
            if (
                key == "close"
                and n == 0
                and _closed_by_host(closed)
                and any(f.dir == "unsent" for f in unread.frames)
            ):
                # Rule 13: the other side's client met the cut in a send (its frames unsent)
                # before it read the close frame.
                notes["close unread after a cut (rule 13)"] += 1
                continue
            what = f"stream {key!r}: {len(xs)} / {len(ys)} frames"
            if key in ("out", "unsent"):
                what = f"{INPUTS}: {what}"
            first = (xs[n] if n < len(xs) else None, ys[n] if n < len(ys) else None)
            return Difference(test, old.index, what, *first, n)
    return None


@dataclass
class Report:
    tests: Counter[str] = field(default_factory=Counter)
    connections: Counter[str] = field(default_factory=Counter)
    frames: dict[str, Counter[str]] = field(
        default_factory=lambda: {"old": Counter(), "new": Counter()}
    )
    differences: list[Difference] = field(default_factory=list)
    unstable: list[Difference] = field(default_factory=list)
    #: Tests whose clients sent other frames than before: nothing replayed, nothing proven.
    inputs: list[Difference] = field(default_factory=list)
    #: Tests only in NEW: new tests, nothing to compare them with.
    new_tests: list[str] = field(default_factory=list)
    #: How often each intended change applied, per side.
    intended: dict[str, Counter[str]] = field(
        default_factory=lambda: {"old": Counter(), "new": Counter()}
    )
    #: How often rules 12 and 13 (which compare across the two sides) applied.
    notes: Counter[str] = field(default_factory=Counter)

    @property
    def failed(self) -> bool:
        # A test only in NEW is a new test: nothing to compare it with (listed, not a failure).
        return bool(self.differences)


def count_frames(counter: Counter[str], test: Test) -> None:
    for conn in test.connections.values():
        counter[conn.version or "none"] += len(conn.frames)


def diff(
    old: dict[str, Test],
    new: dict[str, Test],
    unstable: set[str],
    intended: Iterable[Intended] = (),
    roots: tuple[str | None, str | None] = (None, None),
) -> Report:
    report = Report()
    rules = list(intended)
    new = dict(new)
    for before, after in RENAMED.items():  # compared under the old name
        if before in old and before not in new and after in new:
            new[before] = new.pop(after)
            report.notes["tests renamed"] += 1
    for side, tests in (("old", old), ("new", new)):
        for test in tests.values():
            count_frames(report.frames[side], test)
    for nodeid in sorted(old.keys() | new.keys()):
        if nodeid not in new:
            report.tests["only old"] += 1
            report.differences.append(Difference(nodeid, None, "only in OLD"))
            continue
        if nodeid not in old:
            report.tests["only new"] += 1
            report.new_tests.append(nodeid)
            continue
        report.tests["compared"] += 1
        a = normalise(old[nodeid], rules, report.intended["old"], roots[0])
        b = normalise(new[nodeid], rules, report.intended["new"], roots[1])
        found: list[Difference] = []
        for index in sorted(a.connections.keys() | b.connections.keys()):
            if index not in b.connections:
                report.connections["only old"] += 1
                found.append(Difference(nodeid, index, f"{INPUTS}: connection only in OLD"))
            elif index not in a.connections:
                report.connections["only new"] += 1
                found.append(Difference(nodeid, index, f"{INPUTS}: connection only in NEW"))
            else:
                report.connections["compared"] += 1
                d = compare_connection(
                    nodeid, a.connections[index], b.connections[index], report.notes
                )
                report.connections["identical" if d is None else "different"] += 1
                if d is not None:
                    found.append(d)
        repinned = REPINNED.get(nodeid.split("::", 1)[0])
        if found and repinned is not None:
            found = [
                Difference(d.test, d.conn, f"{INPUTS}: {repinned}: {d.what}", d.old, d.new, d.at)
                for d in found
            ]
        if not found:
            report.tests["identical (listed unstable)" if nodeid in unstable else "identical"] += 1
        elif any(d.what.startswith(INPUTS) for d in found):
            # What one connection sent can change what another receives (a session it made,
            # a directory it chose): the test as a whole was not replayed.
            report.tests[INPUTS] += 1
            report.inputs.extend(found)
        elif nodeid in unstable:
            report.tests["different, listed unstable"] += 1
            report.unstable.extend(found)
        else:
            report.tests["different"] += 1
            report.differences.extend(found)
    return report


# -- printing ----------------------------------------------------------------------------------


def pretty(frame: Frame | None, width: int) -> str:
    if frame is None:
        return "    (none)"
    try:
        body = json.dumps(json.loads(frame.text), indent=1, ensure_ascii=False)
    except ValueError:
        body = frame.text
    if len(body) > width:
        body = body[:width] + f"... ({len(body) - width} more characters)"
    return "\n".join(f"    {line}" for line in [f"[{frame.dir}]", *body.splitlines()])


def show(d: Difference, width: int) -> str:
    where = d.test if d.conn is None else f"{d.test} conn {d.conn}"
    head = f"* {where}: {d.what}" + (f" (frame {d.at})" if d.at is not None else "")
    if d.old is None and d.new is None:
        return head
    return f"{head}\n  OLD\n{pretty(d.old, width)}\n  NEW\n{pretty(d.new, width)}"


def summary(report: Report) -> str:
    def counts(counter: Counter[str]) -> str:
        return ", ".join(f"{k} {v}" for k, v in counter.items()) or "none"

    frames = "; ".join(
        f"{side}: " + ", ".join(f"{v} {n}" for v, n in sorted(c.items()))
        for side, c in report.frames.items()
    )
    intended = "\n".join(
        f"  {name}: old {report.intended['old'][name]}, new {report.intended['new'][name]}"
        for name in sorted(report.intended["old"].keys() | report.intended["new"].keys())
    )
    return (
        f"tests: {counts(report.tests)}\nconnections: {counts(report.connections)}\n"
        f"frames recorded per wire version, {frames}\naligned: {counts(report.notes)}\n"
        f"intended changes applied (frames):\n{intended or '  none'}"
    )


def read_unstable(path: Path) -> set[str]:
    """Node ids of the listed tests: each line `NODEID  # reason` (blank and # lines skipped)."""
    if not path.exists():
        return set()
    names = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {name for name in names if name}


def stats(folder: Path) -> str:
    tests = load(folder)
    frames: Counter[str] = Counter()
    connections: Counter[str] = Counter()
    for test in tests.values():
        count_frames(frames, test)
        for conn in test.connections.values():
            connections[conn.version or "none"] += 1
    size = sum(p.stat().st_size for p in folder.glob("*.jsonl"))

    def per(counter: Counter[str]) -> str:
        return (
            f"{sum(counter.values())} ({', '.join(f'{v} {n}' for v, n in sorted(counter.items()))})"
        )

    return (
        f"tests {len(tests)}, connections {per(connections)}, frames {per(frames)}, "
        f"{size / 1e6:.1f} MB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("diff", help="compare two corpora after normalisation")
    d.add_argument("old", type=Path)
    d.add_argument("new", type=Path)
    d.add_argument("--unstable", type=Path, default=UNSTABLE, help="list of tests to report apart")
    d.add_argument(
        "--baseline",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="another recording of OLD's code (repeatable): tests that differ between OLD and "
        "it are reported apart too, as unstable in the baseline",
    )
    d.add_argument(
        "--no-intended", action="store_true", help="compare without the intended changes"
    )
    d.add_argument(
        "--roots",
        nargs=2,
        metavar=("OLD_ROOT", "NEW_ROOT"),
        help="the checkouts the two recordings ran in (rule 1: each becomes <repo>)",
    )
    d.add_argument("--width", type=int, default=1500, help="characters shown of each frame")
    d.add_argument("--max", type=int, default=50, help="differences shown at most")
    s = sub.add_parser("stats", help="the size of one corpus")
    s.add_argument("folder", type=Path)
    args = parser.parse_args(argv)
    if args.command == "stats":
        print(stats(args.folder))
        return 0
    old, unstable = load(args.old), read_unstable(args.unstable)
    for folder in args.baseline:
        noisy = diff(old, load(folder), unstable)
        noise = {d.test for d in noisy.differences if d.conn is not None or "only" not in d.what}
        print(f"unstable in the baseline {folder}: {', '.join(sorted(noise)) or 'none'}")
        unstable |= noise
    roots = (args.roots[0], args.roots[1]) if args.roots else (None, None)
    report = diff(old, load(args.new), unstable, () if args.no_intended else INTENDED, roots)
    print(summary(report))
    for title, found in (
        ("differences", report.differences),
        ("unstable (listed)", report.unstable),
        (INPUTS, report.inputs),
    ):
        if found:
            print(f"\n{title}: {len(found)}")
            for d_ in found[: args.max]:
                print(show(d_, args.width))
    if report.new_tests:
        print(f"\nnew tests (only in NEW, nothing to compare): {len(report.new_tests)}")
        for nodeid in report.new_tests[: args.max]:
            print(f"* {nodeid}")
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
