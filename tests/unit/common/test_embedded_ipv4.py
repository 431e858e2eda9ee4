"""IPv6 addresses that carry an IPv4 address are judged by that address, at every connect: as a literal,
as what a name resolves to, and after a redirect. No socket is opened: the guard's inner backend counts
the connects it is asked for, and must be asked for none."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import httpcore
import pytest

from functions.common.errors import FetchBlocked
from functions.common.outbound.http import is_public_address, vet_destination
from functions.common.outbound.http_backend import GuardedNetworkBackend

# each embeds a loopback, private, link-local or metadata IPv4 address
EMBEDDED_PRIVATE = [
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:169.254.169.254",
    "::127.0.0.1",  # IPv4-compatible (deprecated, still parsed)
    "::10.0.0.1",
    "::ffff:0:127.0.0.1",  # IPv4-translated (RFC 2765)
    "::ffff:0:a9fe:a9fe",  # translated 169.254.169.254, hex-written
    "64:ff9b::7f00:1",  # NAT64 well-known prefix (RFC 6052)
    "64:ff9b::169.254.169.254",
    "64:ff9b::c0a8:101",
    "64:ff9b:1::a00:1",  # NAT64 local-use prefix (RFC 8215)
    "64:ff9b:1:a9fe:a9:fe00::",  # the same prefix, the /48 embedding of 169.254.169.254
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::",  # 6to4 of 169.254.169.254
    "2002:c0a8:101::1",
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
    "2001:0:a00:1:8000:63bf:3fff:fdd2",  # Teredo, server 10.0.0.1
]
# the same forms around public IPv4 addresses (8.8.8.8, 93.184.216.34)
EMBEDDED_PUBLIC = ["64:ff9b::808:808", "64:ff9b::93.184.216.34", "2002:808:808::1", "2002:5db8:d822::1"]


@pytest.mark.parametrize("address", EMBEDDED_PRIVATE)
def test_an_embedded_private_ipv4_makes_the_address_non_public(address: str) -> None:
    assert not is_public_address(address)


@pytest.mark.parametrize("address", EMBEDDED_PUBLIC)
def test_an_embedded_public_ipv4_is_public(address: str) -> None:
    assert is_public_address(address)


class CountingBackend(httpcore.AsyncNetworkBackend):
    """Records every connect it is asked for and opens none."""

    def __init__(self) -> None:
        self.connects: list[tuple[str, int]] = []

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        self.connects.append((host, port))
        raise httpcore.ConnectError("counted, not connected")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _no_dns(host: str, port: int) -> Any:
    raise AssertionError("an IP literal is never resolved")


@pytest.mark.parametrize("address", EMBEDDED_PRIVATE)
def test_a_literal_embedding_a_private_address_is_refused_before_any_connect(address: str) -> None:
    counting = CountingBackend()
    guard = GuardedNetworkBackend(frozenset(), _no_dns, inner=counting)

    with pytest.raises(FetchBlocked):
        asyncio.run(guard.connect_tcp(f"[{address}]", 80))
    assert counting.connects == []


@pytest.mark.parametrize("address", EMBEDDED_PRIVATE)
def test_a_name_resolving_to_an_embedded_private_address_is_refused_before_any_connect(address: str) -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return ["93.184.216.34", address]  # one bad address among good ones is enough

    counting = CountingBackend()
    guard = GuardedNetworkBackend(frozenset(), resolve, inner=counting)

    with pytest.raises(FetchBlocked) as refused:
        asyncio.run(guard.connect_tcp("papers.example.org", 443))
    assert counting.connects == []
    assert "private or reserved address" in refused.value.message


def test_an_embedded_public_address_is_connected_to() -> None:
    counting = CountingBackend()
    guard = GuardedNetworkBackend(frozenset(), _no_dns, inner=counting)

    with pytest.raises(httpcore.ConnectError):
        asyncio.run(guard.connect_tcp("64:ff9b::808:808", 443))
    assert counting.connects == [("64:ff9b::808:808", 443)]


@pytest.mark.parametrize("resolved", ["10.20.30.40", "64:ff9b::a14:1e28", "2002:a14:1e28::1"])
def test_a_refusal_does_not_say_how_the_name_resolved(resolved: str) -> None:
    async def resolve(host: str, port: int) -> list[str]:
        return [resolved]

    with pytest.raises(FetchBlocked) as refused:
        asyncio.run(vet_destination("intranet.corp.example", 443, frozenset(), resolve))
    message = refused.value.message
    assert "intranet.corp.example" in message and "private or reserved address" in message
    for revealing in (resolved, "10.20.30.40", "a14", "1e28"):
        assert revealing not in message
