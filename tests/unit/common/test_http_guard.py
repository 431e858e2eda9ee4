"""The SSRF guard's address policy and URL checks (no sockets: resolvers are injected)."""

from __future__ import annotations

import asyncio

import pytest

from functions.common.errors import FetchBlocked
from functions.common.outbound.http import (
    check_url_shape,
    is_public_address,
    retry_after_seconds,
    vet_destination,
)


@pytest.mark.parametrize(
    "address",
    [
        "10.0.0.7",
        "172.16.5.4",
        "192.168.1.1",
        "127.0.0.1",
        "127.8.9.10",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "::1",
        "fe80::1",
        "fd00:ec2::254",
        "::ffff:10.0.0.1",
        "::ffff:127.0.0.1",
        "224.0.0.1",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert not is_public_address(address)


@pytest.mark.parametrize("address", ["93.184.216.34", "128.84.21.199", "2606:4700::6810:84e5"])
def test_public_addresses_pass(address: str) -> None:
    assert is_public_address(address)


def _resolver(mapping: dict[str, list[str]]):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int) -> list[str]:
        return mapping[host]

    return resolve


def test_public_name_resolving_to_private_address_is_refused() -> None:
    resolver = _resolver({"papers.example.org": ["93.184.216.34", "10.1.2.3"]})
    with pytest.raises(FetchBlocked, match="private or reserved address"):
        asyncio.run(vet_destination("papers.example.org", 443, frozenset(), resolver))


def test_public_name_resolving_to_public_address_is_allowed() -> None:
    resolver = _resolver({"papers.example.org": ["93.184.216.34"]})
    assert asyncio.run(vet_destination("papers.example.org", 443, frozenset(), resolver)) == "93.184.216.34"


def test_allowlist_admits_exact_host_and_port_only() -> None:
    resolver = _resolver({})
    allow = frozenset({"127.0.0.1:8081"})
    assert asyncio.run(vet_destination("127.0.0.1", 8081, allow, resolver)) == "127.0.0.1"
    with pytest.raises(FetchBlocked):
        asyncio.run(vet_destination("127.0.0.1", 8082, allow, resolver))


def test_ip_literals_are_checked_without_resolving() -> None:
    async def no_dns(host: str, port: int) -> list[str]:
        raise AssertionError("IP literals must not be resolved")

    with pytest.raises(FetchBlocked):
        asyncio.run(vet_destination("[::1]", 80, frozenset(), no_dns))


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("ftp://example.org/paper.pdf", "only http and https"),
        ("file:///etc/passwd", "only http and https"),
        ("https://user:secret@example.org/", "credentials"),
        ("http:///nohost", "no host"),
    ],
)
def test_url_shape(url: str, problem: str) -> None:
    with pytest.raises(FetchBlocked, match=problem):
        check_url_shape(url)


def test_retry_after_seconds_and_http_date() -> None:
    assert retry_after_seconds({"retry-after": "7"}) == 7.0
    when = retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0)
    assert when == pytest.approx(10.0)
    assert retry_after_seconds({}) is None


@pytest.mark.parametrize("value", ["soon", "inf", "nan", "Wed, 99 Foo 2015"])
def test_unusable_retry_after_is_ignored_not_raised(value: str) -> None:
    assert retry_after_seconds({"retry-after": value}) is None


def test_retry_after_date_without_zone_is_utc() -> None:
    when = retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 -0000"}, now=1445412470.0)
    assert when == pytest.approx(10.0)
