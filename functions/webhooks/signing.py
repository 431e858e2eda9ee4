"""The webhook signature: `X-Research-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`.

The HMAC key is the team's webhook secret (its UTF-8 bytes, `whsec_` prefix included); the signed
message is `"<t>.<raw request body>"`. A receiver recomputes it over the exact bytes it received,
compares in constant time and rejects a `t` too far from its clock (replays). Every attempt of a delivery
is signed afresh (new `t`); `X-Research-Delivery` stays the same across attempts, for de-duplication.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

SIGNATURE_HEADER = "X-Research-Signature"
EVENT_HEADER = "X-Research-Event"
DELIVERY_HEADER = "X-Research-Delivery"
SECRET_PREFIX = "whsec_"  # noqa: S105 (the prefix of every secret, not a secret)
DEFAULT_TOLERANCE_SECONDS = 300


def new_secret() -> str:
    """A new webhook secret: `whsec_` and 43 URL-safe characters (256 random bits)."""
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The hex HMAC-SHA256 of `"<timestamp>.<body>"` under `secret`."""
    message = str(int(timestamp)).encode("ascii") + b"." + body
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def signature_header(secret: str, timestamp: int, body: bytes) -> str:
    return f"t={int(timestamp)},v1={signature(secret, timestamp, body)}"


def parse_header(header: str) -> tuple[int, list[str]] | None:
    """(t, [v1 signatures]) of a header value; None when it has no integer `t` or no `v1`."""
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t" and value.isdigit():
            timestamp = int(value)
        elif name == "v1" and value:
            signatures.append(value)
    if timestamp is None or not signatures:
        return None
    return timestamp, signatures


def verify(
    secret: str,
    header: str,
    body: bytes,
    *,
    now: float,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
) -> bool:
    """True when `header` signs `body` under `secret` and its `t` is within `tolerance_seconds` of `now`."""
    parsed = parse_header(header)
    if parsed is None:
        return False
    timestamp, signatures = parsed
    if abs(now - timestamp) > tolerance_seconds:
        return False
    expected = signature(secret, timestamp, body)
    return any(hmac.compare_digest(expected, candidate) for candidate in signatures)
