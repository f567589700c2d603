"""How long the host waits for a provider before it gives up on a call (`[timeouts]`).

A provider is another program (a CLI, an agent over stdio, a remote process): any call can
hang. Each wait the host makes on one is bounded by one of these, and whatever reports a
timeout names its key (`timeouts.<name>`), so the user knows what to raise. Turns are not
bounded here: a turn runs as long as the provider works on it, and a client cancels it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Timeouts:
    """Seconds per kind of provider call; the defaults are config.example.toml's."""

    #: Listing a provider's models (at start, after a sign-in): a CLI may ask its service.
    models: float = 30.0
    #: Validating and storing a client's token (`authenticate`).
    sign_in: float = 60.0
    #: Each short read: commands, customizations, custom agents, importable conversations,
    #: whether the runtime is still signed in.
    provider_read: float = 10.0
    #: Reopening a conversation (a restore, a new set of client tools) and reading its history.
    reopen: float = 60.0
    #: Closing a conversation; past it the bridge lets go of it without waiting.
    close: float = 10.0
    #: A turn a client cancelled until the provider reports it ended: the next turn's prompt
    #: waits for that (an agent still busy with the cancelled one would refuse it), this long
    #: at most; then it is sent anyway.
    turn_end: float = 15.0


def timeout_phrase(timeouts: Timeouts, key: str) -> str:
    """`no answer within N s (timeouts.key)`: how every timeout is reported."""
    return f"no answer within {getattr(timeouts, key):g} s (timeouts.{key})"
