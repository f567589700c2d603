"""Channel URI helpers."""

from __future__ import annotations

import pytest

from ahp_bridge.protocol.uris import (
    ROOT,
    annotations_uri,
    channel_kind,
    is_session_uri,
    session_of,
)

UUID = "6f1c2a52-4a0e-4c31-9b59-0f4f6e0d8a11"
SESSION = f"ahp-session:/{UUID}"


@pytest.mark.parametrize(
    ("uri", "kind"),
    [
        ("ahp-root://", "root"),
        (SESSION, "session"),
        ("ahp-session:/s1", "session"),
        (f"{SESSION}/annotations", "annotations"),
        ("ahp-chat:/c1", "chat"),
        ("ahp-chat:/s1/c1", "chat"),
        ("ahp-terminal:/s1/t1", "terminal"),
        ("ahp-changeset:/s1/turn/3", "changeset"),
        ("ahp-resource-watch:/w1", "resourceWatch"),
        ("ahp-root:/", None),
        ("ahp-root://x", None),
        ("ahp-session:/", None),
        ("ahp-session:/a/b", None),
        ("ahp-session://annotations", None),
        ("ahp-chat:/", None),
        ("ahp-chat://c", None),
        ("file:///tmp/x", None),
        ("", None),
    ],
)
def test_channel_kind(uri: str, kind: str | None) -> None:
    assert channel_kind(uri) == kind


def test_root_constant() -> None:
    assert ROOT == "ahp-root://"


@pytest.mark.parametrize(
    ("uri", "ok"),
    [
        (SESSION, True),
        (SESSION.upper().replace("AHP-SESSION", "ahp-session"), True),
        ("ahp-session:/s1", False),
        (f"{SESSION}/annotations", False),
        (f"{SESSION}x", False),
        (f"ahp-session:/{UUID.replace('-', '')}", False),
        (f"ahp-session://{UUID}", False),
        (f"ahp-chat:/{UUID}", False),
        (f"ahp-session:/{UUID[:-1]}g", False),
        (f"ahp-session:/{UUID}\n", False),
    ],
)
def test_is_session_uri_requires_a_real_uuid(uri: str, ok: bool) -> None:
    assert is_session_uri(uri) is ok


def test_annotations_uri_and_back() -> None:
    ann = annotations_uri(SESSION)
    assert ann == f"{SESSION}/annotations"
    assert channel_kind(ann) == "annotations"
    assert session_of(ann) == SESSION
    assert session_of(SESSION) == SESSION
    assert session_of("ahp-chat:/c") is None


@pytest.mark.parametrize("bad", ["ahp-chat:/c", f"{SESSION}/annotations", "ahp-root://"])
def test_annotations_uri_rejects_non_sessions(bad: str) -> None:
    with pytest.raises(ValueError, match="not a session URI"):
        annotations_uri(bad)
