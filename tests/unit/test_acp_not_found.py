"""Which agent answers to a reopen of an unknown session the ACP adapter takes for "not found".

Only those: a not-found answer makes the host report ConversationNotFound and heal the chat,
so an agent's other failures must not read as one. The answers are the agents' own wire errors.
"""

from __future__ import annotations

import pytest
from acp.exceptions import RequestError
from ahp_bridge_acp.provider import _not_found

GEMINI_DETAILS = (
    'Invalid session identifier "ahp-no-such".\n'
    "  Searched for sessions in /home/u/.gemini/tmp/work/chats.\n"
    "  Use --list-sessions to see available sessions, then use --resume {number}, --resume"
    " {uuid}, or --resume latest."
)


@pytest.mark.parametrize(
    "error",
    [
        RequestError(-32002, "Resource not found", {"uri": "ahp-no-such"}),  # ACP's own code
        RequestError(-32603, "Internal error", {"details": "Session not found"}),
        RequestError(-32602, "no session ahp-no-such", None),
        # Gemini CLI 0.61: session/load's SessionError, wrapped by its SDK as an internal error.
        RequestError(-32603, "Internal error", {"details": GEMINI_DETAILS}),
        # ... and while the working directory has no session at all.
        RequestError(
            -32603, "Internal error", {"details": "No previous sessions found for this project."}
        ),
    ],
    ids=[
        "acp-32002",
        "not-found-words",
        "no-session-words",
        "gemini-invalid-identifier",
        "gemini-no-sessions",
    ],
)
def test_an_agents_unknown_session_answer_is_not_found(error: RequestError) -> None:
    assert _not_found(error)


@pytest.mark.parametrize(
    "error",
    [
        RequestError(-32603, "Internal error", {"details": "Failed to load session data"}),
        RequestError(-32603, "Internal error", {"details": "Invalid custom base URL: x"}),
        RequestError(-32000, "Authentication required.", None),
    ],
    ids=["load-failure", "other-invalid", "auth"],
)
def test_other_failures_are_not_not_found(error: RequestError) -> None:
    assert not _not_found(error)
