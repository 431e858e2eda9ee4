from __future__ import annotations

import hashlib
import re

import pytest

from functions.teams.models import new_team_id, new_token_id
from functions.teams.tokens import bearer_token, new_token, token_hash


def test_new_tokens_are_prefixed_random_and_url_safe() -> None:
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    for token in tokens:
        assert re.fullmatch(r"rt_[A-Za-z0-9_-]{43}", token), token  # 32 bytes -> 43 base64url chars


def test_ids_have_their_prefix_and_twelve_hex_digits() -> None:
    assert re.fullmatch(r"team-[0-9a-f]{12}", new_team_id())
    assert re.fullmatch(r"tok-[0-9a-f]{12}", new_token_id())
    assert new_team_id() != new_team_id()


def test_token_hash_is_the_sha256_hex_of_the_token() -> None:
    token = new_token()
    assert token_hash(token) == hashlib.sha256(token.encode()).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", token_hash(token))
    assert token not in token_hash(token)
    assert token_hash(token) == token_hash(token) != token_hash(token + "x")


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Bearer rt_abc", "rt_abc"),
        ("bearer rt_abc", "rt_abc"),
        ("BEARER rt_abc", "rt_abc"),
        ("  Bearer   rt_abc  ", "rt_abc"),
        (None, None),
        ("", None),
        ("Bearer", None),
        ("Bearer ", None),
        ("Basic dXNlcjpwYXNz", None),
        ("rt_abc", None),
        ("Bearer rt_abc extra", None),
        ("Bearerrt_abc", None),
        ("Bearer " + "x" * 600, None),
    ],
)
def test_bearer_token_parses_only_the_bearer_scheme(header: str | None, expected: str | None) -> None:
    assert bearer_token(header) == expected
