"""A team, one of its tokens, its API key. Plain data: no FastAPI, no boto3.

A token record never holds the token itself, only its SHA-256 (`functions.teams.tokens.token_hash`); an API
key record holds the key's id and the SHA-256 of its value.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal, get_args

Tier = Literal["basic", "standard", "premium"]
TIERS: tuple[str, ...] = get_args(Tier)  # the usage tiers of infra/config.py DEFAULT_TIERS
NAME_MAX_CHARS = 100
# Upstreams where a team may bring its own API key, which gives it its own budget there.
UpstreamKeyProvider = Literal["semantic_scholar", "openalex"]
UPSTREAM_KEY_PROVIDERS: tuple[str, ...] = get_args(UpstreamKeyProvider)
UPSTREAM_KEY_MAX_CHARS = 256


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
    # What the team may spend a month (USD, functions/metering/budget.py); None: no monthly budget.
    monthly_budget_usd: float | None = None


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


@dataclass(frozen=True)
class ApiKeyRecord:
    """A team's API Gateway API key (on AWS): its id, and the SHA-256 of its value, never the value."""

    api_key_id: str  # API Gateway's id of the key (not secret: reading the value needs IAM)
    team_id: str
    key_hash: str  # sha256 hex of the key's value, the lookup of an `x-api-key` caller
    created_at: str
