"""The pure parts of host features an audit could break without a test noticing (round 2)."""

from __future__ import annotations

import pytest

from ahp_bridge.protocol import wire07


@pytest.mark.parametrize("enabled", [True, False])
def test_a_0_7_toggle_is_lifted_to_one_session_decision(enabled: bool) -> None:
    """0.7 has only `enabled`; canonical (1.0) holds the decision with its scope, and a 0.7
    client's choice is about its session (the reducer and the MCP enablement keep the scope)."""
    sent = {"type": "session/customizationToggled", "id": "mcp:github", "enabled": enabled}
    assert wire07.up_action("session", sent, channel="ahp-session:/s") == {
        "type": "session/customizationToggled",
        "id": "mcp:github",
        "enablement": [{"kind": "session", "enabled": enabled}],
    }
    assert sent["enabled"] is enabled  # the sent action is left as it was
