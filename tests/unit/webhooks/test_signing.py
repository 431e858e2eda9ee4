"""Webhook signatures and callback URL rules, with no network."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from functions.common.callback_urls import check_callback_url
from functions.common.errors import InvalidInput
from functions.webhooks.signing import new_secret, parse_header, signature_header, verify

SECRET = "whsec_test-secret"
BODY = b'{"event":"job.completed","job":{"job_id":"j1"}}'


def test_the_header_is_t_and_v1_over_timestamp_dot_body() -> None:
    header = signature_header(SECRET, 1_700_000_000, BODY)
    expected = hmac.new(SECRET.encode(), b"1700000000." + BODY, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={expected}"
    assert parse_header(header) == (1_700_000_000, [expected])


def test_verify_accepts_the_signature_within_the_tolerance_only() -> None:
    header = signature_header(SECRET, 1_700_000_000, BODY)
    assert verify(SECRET, header, BODY, now=1_700_000_100)
    assert not verify(SECRET, header, BODY, now=1_700_000_000 + 301)  # a replay, later
    assert not verify(SECRET, header, BODY + b" ", now=1_700_000_000)  # another body
    assert not verify("whsec_other", header, BODY, now=1_700_000_000)  # another secret
    assert not verify(SECRET, "v1=abc", BODY, now=1_700_000_000)  # no timestamp
    assert not verify(SECRET, "t=1700000000", BODY, now=1_700_000_000)  # no signature


def test_a_rotated_secret_signature_list_is_accepted_if_one_matches() -> None:
    good = signature_header(SECRET, 1_700_000_000, BODY).split(",")[1]
    assert verify(SECRET, f"t=1700000000,v1=deadbeef,{good}", BODY, now=1_700_000_000)


def test_new_secrets_are_prefixed_and_random() -> None:
    first, second = new_secret(), new_secret()
    assert first.startswith("whsec_") and len(first) >= 40 and first != second


ALLOW = frozenset({"127.0.0.1:8080", "hooks.internal"})


@pytest.mark.parametrize(
    "url",
    [
        "https://hooks.example.com/research",
        "https://hooks.example.com:8443/research?token=abc",
        "http://127.0.0.1:8080/hook",  # allow-listed host:port
        "http://hooks.internal/hook",  # allow-listed host
        "https://localhost/hook",  # a name: the SSRF guard decides at delivery
    ],
)
def test_accepted_callback_urls(url: str) -> None:
    assert check_callback_url(url, ALLOW) == url


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://hooks.example.com/research", "https"),
        ("ftp://hooks.example.com/research", "https"),
        ("https://user:pw@hooks.example.com/", "credentials"),
        ("https://127.0.0.1/hook", "private or reserved address"),
        ("https://169.254.169.254/latest/meta-data", "private or reserved address"),
        ("https://[::1]:9000/hook", "private or reserved address"),
        ("https://10.0.0.5/hook", "private or reserved address"),
        ("https://[64:ff9b::a9fe:a9fe]/latest/meta-data", "private or reserved address"),  # NAT64
        ("https://[2002:7f00:1::1]/hook", "private or reserved address"),  # 6to4 of 127.0.0.1
        ("https://[::ffff:0:10.0.0.5]/hook", "private or reserved address"),  # IPv4-translated
        ("http://127.0.0.1:9999/hook", "https"),  # another port than the allow-listed one
        ("not a url", "https"),
        ("https://example.com/" + "a" * 2100, "2048"),
    ],
)
def test_refused_callback_urls(url: str, why: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        check_callback_url(url, ALLOW)
    assert why in caught.value.message and caught.value.field == "callback_url"


@pytest.mark.parametrize("callback", ["http://control.internal:8080/hook", "https://10.0.0.9/hook"])
def test_a_job_callback_is_judged_by_the_webhook_allow_list_not_the_connectors(
    callback: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pydantic import ValidationError

    from functions.common.settings import reset_settings_cache
    from functions.research.planning.request import ExecuteRequest

    goal = "Recent advances in transformer architectures"
    monkeypatch.setenv("FETCH_ALLOW_PRIVATE_HOSTS", "control.internal:8080,10.0.0.9:443")
    monkeypatch.delenv("WEBHOOK_ALLOW_PRIVATE_HOSTS", raising=False)
    reset_settings_cache()
    with pytest.raises(ValidationError, match=r"private or reserved address|WEBHOOK_ALLOW_PRIVATE_HOSTS"):
        ExecuteRequest(research_goal=goal, callback_url=callback)

    monkeypatch.setenv("WEBHOOK_ALLOW_PRIVATE_HOSTS", "control.internal:8080,10.0.0.9:443")
    reset_settings_cache()
    try:
        assert ExecuteRequest(research_goal=goal, callback_url=callback).callback_url == callback
    finally:
        monkeypatch.undo()
        reset_settings_cache()
