"""The connect line: generated tokens, URLs a client can paste, VS Code's settings entry."""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path

from ahp_bridge.config import Settings
from ahp_bridge.host.transport.connect import (
    TOKEN_FILE,
    connect_url,
    ensure_token,
    reachable_hosts,
    vscode_settings,
)


def settings_for(tmp_path: Path, host: str, token: str | None = None) -> Settings:
    settings = Settings()
    settings.bridge.data_dir = tmp_path
    settings.server.host = host
    settings.server.token = token
    return settings


def test_loopback_gets_a_token_too(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, "127.0.0.1")
    source = ensure_token(settings)
    assert source is not None and source.kind == "generated"
    assert settings.server.token == (tmp_path / TOKEN_FILE).read_text().strip()


def test_loopback_goes_without_a_token_only_when_told(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, "127.0.0.1")
    settings.server.require_token = False
    assert ensure_token(settings) is None
    assert settings.server.token is None
    assert not (tmp_path / TOKEN_FILE).exists()
    settings.server.host = "0.0.0.0"  # a network bind needs one whatever the setting
    source = ensure_token(settings)
    assert source is not None and source.kind == "generated"


def test_a_configured_token_is_kept(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, "0.0.0.0", "mine")
    source = ensure_token(settings)
    assert source is not None and source.kind == "configured"
    assert settings.server.token == "mine" and not (tmp_path / TOKEN_FILE).exists()


def test_a_token_is_generated_once_privately_and_reused(tmp_path: Path) -> None:
    first = settings_for(tmp_path, "0.0.0.0")
    source = ensure_token(first)
    assert source is not None and source.kind == "generated"
    path = tmp_path / TOKEN_FILE
    assert source.path == path and path.stat().st_mode & 0o777 == 0o600
    token = first.server.token
    assert token is not None and len(token) >= 32 and path.read_text().strip() == token
    path.chmod(0o644)
    second = settings_for(tmp_path, "::")
    again = ensure_token(second)
    assert again is not None and again.kind == "reused" and second.server.token == token
    assert path.stat().st_mode & 0o777 == 0o600  # narrowed back


def test_urls_carry_the_token_quoted() -> None:
    assert connect_url("127.0.0.1", 8765, None) == "ws://127.0.0.1:8765"
    assert connect_url("127.0.0.1", 8765, " ") == "ws://127.0.0.1:8765"
    assert connect_url("::1", 9, "a b/&c") == "ws://[::1]:9/?tkn=a%20b%2F%26c"


def test_a_wildcard_becomes_this_machines_addresses() -> None:
    v4 = reachable_hosts("0.0.0.0")
    assert "127.0.0.1" in v4 and "0.0.0.0" not in v4
    assert all(ipaddress.ip_address(a).version == 4 for a in v4)
    assert ipaddress.ip_address(v4[-1]).is_loopback  # other machines' addresses come first
    for address in v4:  # each is an address of this machine: it can be bound
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind((address, 0))
    v6 = reachable_hosts("::")
    assert v6 and all(ipaddress.ip_address(a).version == 6 for a in v6)
    assert reachable_hosts("192.0.2.9") == ["192.0.2.9"]
    assert reachable_hosts("[::1]") == ["::1"]


def test_vscode_settings_are_the_remote_agent_hosts_entry() -> None:
    assert vscode_settings("127.0.0.1", 8765, None, name="dev") == {
        "chat.remoteAgentHostsEnabled": True,
        "chat.remoteAgentHosts": [{"name": "dev", "address": "127.0.0.1:8765"}],
    }
    entry = vscode_settings("0.0.0.0", 9000, "t0k", name="lan")["chat.remoteAgentHosts"][0]
    assert entry["connectionToken"] == "t0k"
    assert entry["address"] == f"{reachable_hosts('0.0.0.0')[0]}:9000"
