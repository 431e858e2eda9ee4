"""Teams and tokens: create a team (with its first token), issue and revoke tokens, resolve a token.

A token is returned once, when it is issued; only its hash is stored. `resolve` is what an authorizer
asks: the team a presented token belongs to, or None for an unknown or revoked token.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import cast

from functions.common.errors import InvalidInput, NotFound
from functions.teams.models import NAME_MAX_CHARS, TIERS, Team, Tier, TokenRecord, new_team_id, new_token_id
from functions.teams.store import TeamStore
from functions.teams.tokens import MAX_TOKEN_CHARS, new_token, token_hash

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class TeamService:
    def __init__(self, store: TeamStore, clock: Clock = utc_now) -> None:
        self.store = store
        self._clock = clock

    def create_team(self, name: str, tier: str) -> tuple[Team, str, str]:
        """The new team, its first token's id and the token (shown once)."""
        cleaned = name.strip()
        if not cleaned:
            raise InvalidInput("name must not be empty", field="name")
        if len(cleaned) > NAME_MAX_CHARS:
            raise InvalidInput(f"name must be at most {NAME_MAX_CHARS} characters", field="name")
        if tier not in TIERS:
            raise InvalidInput(f"tier must be one of {', '.join(TIERS)}", field="tier")
        team = Team(team_id=new_team_id(), name=cleaned, tier=cast(Tier, tier), created_at=self._now())
        self.store.create_team(team)
        token_id, token = self._issue(team.team_id)
        return team, token_id, token

    def issue_token(self, team_id: str) -> tuple[str, str]:
        """A new token of the team: (token_id, token). NotFound for an unknown team."""
        if self.store.get_team(team_id) is None:
            raise NotFound("team not found")
        return self._issue(team_id)

    def revoke_token(self, team_id: str, token_id: str) -> None:
        """NotFound when the team has no such token (another team's token included)."""
        if not self.store.revoke_token(team_id, token_id, revoked_at=self._now()):
            raise NotFound("token not found")

    def resolve(self, token: str | None) -> Team | None:
        """The team of a live token; None for a missing, unknown or revoked one."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        record = self.store.token_by_hash(token_hash(token))
        if record is None or record.revoked:
            return None
        return self.store.get_team(record.team_id)

    def _issue(self, team_id: str) -> tuple[str, str]:
        token = new_token()
        record = TokenRecord(
            token_id=new_token_id(), team_id=team_id, token_hash=token_hash(token), created_at=self._now()
        )
        self.store.put_token(record)
        return record.token_id, token

    def _now(self) -> str:
        return _iso(self._clock())
