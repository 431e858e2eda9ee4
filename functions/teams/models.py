"""A team and one of its tokens. Plain data: no FastAPI, no boto3.

A token record never holds the token itself, only its SHA-256 (`functions.teams.tokens.token_hash`).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal, get_args

Tier = Literal["basic", "standard", "premium"]
TIERS: tuple[str, ...] = get_args(Tier)  # the usage tiers of infra/config.py DEFAULT_TIERS
NAME_MAX_CHARS = 100


def new_team_id() -> str:
    return "team-" + secrets.token_hex(6)


def new_token_id() -> str:
    return "tok-" + secrets.token_hex(6)


@dataclass(frozen=True)
class Team:
    team_id: str  # "team-<hex12>"
    name: str
    tier: Tier
    created_at: str  # ISO 8601, UTC


@dataclass(frozen=True)
class TokenRecord:
    token_id: str  # "tok-<hex12>"
    team_id: str
    token_hash: str  # sha256 hex of the token; the token itself is shown once and never stored
    created_at: str
    revoked_at: str | None = None

    @property
    def revoked(self) -> bool:
        return self.revoked_at is not None
