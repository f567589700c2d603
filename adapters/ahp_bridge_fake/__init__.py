"""ahp-bridge fake provider adapter: a scripted agent runtime, with record and replay.

``create_provider({"script": path, "data_dir": dir, "time_scale": 0.1})`` builds the
provider the ``fake`` entry point names. ``script`` is a TOML script (format in
``ahp_bridge_fake.script``; default: the packaged ``demo.toml``) or a ``.jsonl`` recording
made by ``ahp_bridge_fake.record.RecordingProvider``, which is then replayed.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .conversation import FakeConversation
from .provider import FakeProvider
from .script import Script, ScriptError, load_script, parse_script

PACKAGE_DIR = Path(__file__).resolve().parent
DEMO_SCRIPT = PACKAGE_DIR / "demo.toml"
CONFORMANCE_SCRIPT = PACKAGE_DIR / "conformance.toml"

__all__ = [
    "CONFORMANCE_SCRIPT",
    "DEMO_SCRIPT",
    "OPTION_KEYS",
    "FakeConversation",
    "FakeProvider",
    "Script",
    "ScriptError",
    "create_provider",
    "load_script",
    "parse_script",
]

_OPTIONS = ("script", "data_dir", "time_scale", "sign_in_token", "cancel_latency")

#: The keys `[providers.NAME]` may hold for this adapter (None: any value), which the bridge
#: checks when it loads its configuration, for every configured provider.
OPTION_KEYS: Mapping[str, Any] = dict.fromkeys(_OPTIONS)


def create_provider(options: Mapping[str, Any]) -> FakeProvider:
    """Build the fake provider from options: script, data_dir, time_scale, sign_in_token,
    cancel_latency.

    ``sign_in_token`` makes the fake a runtime that starts signed out and implements
    agentapi.AccountManager: ``sign_in`` with exactly that token signs it in, any other is
    SignInRejected (for testing how hosts and clients handle sign-in). ``cancel_latency``
    (seconds) plays an agent that ends a cancelled turn that long after ``cancel`` returned,
    busy meanwhile, as ACP agents answer their cancelled prompt a few milliseconds later.
    """
    unknown = sorted(set(options) - set(_OPTIONS))
    if unknown:
        import difflib

        hints = [difflib.get_close_matches(u, _OPTIONS, n=1, cutoff=0.5) for u in unknown]
        named = ", ".join(
            f"{u} (did you mean `{h[0]}`?)" if h else u for u, h in zip(unknown, hints, strict=True)
        )
        raise ValueError(f"unknown fake provider option(s): {named}; valid: {', '.join(_OPTIONS)}")
    sign_in_token = str(options.get("sign_in_token") or "")
    script_path = Path(options.get("script") or DEMO_SCRIPT)
    data_dir = options.get("data_dir") or None
    try:
        time_scale = float(options.get("time_scale", 1.0))
    except (TypeError, ValueError):
        raise ValueError(f"time_scale must be a number, got {options['time_scale']!r}") from None
    try:
        cancel_latency = float(options.get("cancel_latency", 0.0))
    except (TypeError, ValueError):
        raise ValueError(
            f"cancel_latency must be a number of seconds, got {options['cancel_latency']!r}"
        ) from None
    if script_path.suffix == ".jsonl":
        from .replay import replay_provider

        return replay_provider(script_path, data_dir=data_dir, time_scale=time_scale)
    return FakeProvider(
        load_script(script_path),
        data_dir=data_dir,
        time_scale=time_scale,
        cancel_latency=cancel_latency,
        sign_in_token=sign_in_token,
    )
