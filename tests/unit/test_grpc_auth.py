"""Listen-address rules: loopback and Unix sockets are local; anything else needs a token."""

from __future__ import annotations

import pytest
from ahp_bridge_remote.auth import AddressError, check_listen, is_local, split_host_port


@pytest.mark.parametrize(
    "address",
    ["unix:/tmp/p.sock", "unix-abstract:agent", "127.0.0.1:50051", "127.8.9.10:1", "[::1]:7",
     "localhost:9000"],
)  # fmt: skip
def test_local_addresses_need_no_token(address: str) -> None:
    assert is_local(address)
    check_listen(address, None)


@pytest.mark.parametrize("address", ["0.0.0.0:50051", "[::]:1", "10.0.0.5:80", "example.com:1"])
def test_other_addresses_need_a_token(address: str) -> None:
    assert not is_local(address)
    with pytest.raises(AddressError, match="without a token"):
        check_listen(address, None)
    check_listen(address, "a-token")


def test_an_empty_token_is_refused_even_on_loopback() -> None:
    with pytest.raises(AddressError, match="empty"):
        check_listen("127.0.0.1:1", "")


@pytest.mark.parametrize("address", ["", "nocolon", ":80", "host:", "host:http"])
def test_malformed_addresses_are_refused(address: str) -> None:
    with pytest.raises(AddressError, match="HOST:PORT"):
        split_host_port(address)


def test_ipv6_brackets_are_stripped() -> None:
    assert split_host_port("[::1]:50051") == ("::1", 50051)
