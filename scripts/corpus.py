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
   test's own folder and file names after it are kept. ``tempfile`` names
   (``/tmp/tmpXXXXXXXX``) too.
2. Ephemeral ports: ``HOST:PORT`` (an IPv4 address, ``localhost`` or ``[IPv6]``) keeps the host
   and gets ``<port>``; so does the bridge's port inside a client id (``c41323``, test_sign_in).
3. Connection tokens: the value of ``tkn=`` becomes ``<token>``.
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
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

UNSTABLE = Path(__file__).with_name("corpus_unstable.txt")

_TMP = re.compile(r"/tmp/pytest-of-[^/\"\\\s]+/pytest-\d+(?:/popen-gw\d+)?|/tmp/tmp[A-Za-z0-9_]{8}")
_PORT = re.compile(r"(\d{1,3}(?:\.\d{1,3}){3}|localhost|\[[0-9a-fA-F:.]+\]):\d{1,5}(?!\d)")
_URL_PORT = re.compile(r"^\w+://[^/]*:(\d+)")
_TOKEN = re.compile(r"(tkn=)[^&\"\\\s#]+")
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

    def __init__(self, keep_times: set[str], url: str) -> None:
        self.keep = keep_times
        self.ids: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        port = _URL_PORT.match(url)
        #: Rule 2: the bridge's port inside a client's own id (`c41323`).
        self.port_in_id = re.compile(rf"(?<=[A-Za-z]){port[1]}(?=\"|$)") if port else None

    def text(self, text: str) -> str:
        text = _CURSOR.sub(_cursor, text)
        text = _TMP.sub("<tmp>", text)
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


def normalise(test: Test) -> Test:
    """`test` with every rule applied."""
    keep = sent_times(test)
    out = Test(test.nodeid)
    for index, conn in test.connections.items():
        out.connections[index] = normalise_connection(conn, keep)
    return out


def normalise_connection(conn: Connection, keep: set[str]) -> Connection:
    norm = Normaliser(keep, conn.url)
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
        value = _parse(frame.text) if frame.dir == "in" else None
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
    client, url = norm.text(conn.client or ""), norm.text(conn.url)
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
    what = "connection differs (client, version or url)"
    if old.version != new.version or (
        old.header is not None and new.header is not None and not ids.same(old.header, new.header)
    ):
        return Difference(test, old.index, what, old.header, new.header)
    a, b = old.streams(), new.streams()
    # What the client sent first: it names (nearly) every id the other streams are named by.
    order = ["out", "unsent"] + [k for k in a if k not in ("out", "unsent")]
    for key in ("out", "unsent"):
        for at, (x, y) in enumerate(zip(a.get(key, []), b.get(key, []), strict=False)):
            if not ids.same(x, y):
                return Difference(test, old.index, f"stream {key!r} differs", x, y, at)
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
        k = len(xs) - len(ys)
        longer, shorter = (xs, ys) if k > 0 else (ys, xs)
        if k and [f.masked for f in longer[abs(k) :]] == [f.masked for f in shorter]:
            del longer[: abs(k)]
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
            what = f"stream {key!r}: {len(xs)} / {len(ys)} frames"
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
    #: How often rules 12 and 13 (which compare across the two sides) applied.
    notes: Counter[str] = field(default_factory=Counter)

    @property
    def failed(self) -> bool:
        return bool(self.differences) or bool(self.tests["only old"] or self.tests["only new"])


def count_frames(counter: Counter[str], test: Test) -> None:
    for conn in test.connections.values():
        counter[conn.version or "none"] += len(conn.frames)


def diff(old: dict[str, Test], new: dict[str, Test], unstable: set[str]) -> Report:
    report = Report()
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
            report.differences.append(Difference(nodeid, None, "only in NEW"))
            continue
        report.tests["compared"] += 1
        a, b = normalise(old[nodeid]), normalise(new[nodeid])
        found: list[Difference] = []
        for index in sorted(a.connections.keys() | b.connections.keys()):
            if index not in b.connections:
                report.connections["only old"] += 1
                found.append(Difference(nodeid, index, "connection only in OLD"))
            elif index not in a.connections:
                report.connections["only new"] += 1
                found.append(Difference(nodeid, index, "connection only in NEW"))
            else:
                report.connections["compared"] += 1
                d = compare_connection(
                    nodeid, a.connections[index], b.connections[index], report.notes
                )
                report.connections["identical" if d is None else "different"] += 1
                if d is not None:
                    found.append(d)
        if not found:
            report.tests["identical (listed unstable)" if nodeid in unstable else "identical"] += 1
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
    return (
        f"tests: {counts(report.tests)}\nconnections: {counts(report.connections)}\n"
        f"frames recorded per wire version, {frames}\naligned: {counts(report.notes)}"
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
    report = diff(old, load(args.new), unstable)
    print(summary(report))
    for title, found in (
        ("differences", report.differences),
        ("unstable (listed)", report.unstable),
    ):
        if found:
            print(f"\n{title}: {len(found)}")
            for d_ in found[: args.max]:
                print(show(d_, args.width))
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
