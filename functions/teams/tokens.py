"""Bearer tokens: minted, hashed for storage, parsed from an `Authorization` header.

A token is 256 random bits, so an unsalted SHA-256 of it is the standard way to store it (a salt or a
slow hash protects low-entropy passwords; nothing can be guessed here), and it lets a token be looked up
by its hash in one read.
"""

from __future__ import annotations

import hashlib
import secrets

TOKEN_PREFIX = "rt_"  # noqa: S105 (recognisable in logs and by secret scanners)
MAX_TOKEN_CHARS = 512  # anything longer is not one of ours; never hash unbounded input


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def bearer_token(header: str | None) -> str | None:
    """The token of `Authorization: Bearer <token>` (scheme case-insensitive); None for anything else."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    value = value.strip()
    if not value or len(value) > MAX_TOKEN_CHARS or any(char.isspace() for char in value):
        return None
    return value
