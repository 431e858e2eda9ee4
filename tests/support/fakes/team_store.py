"""An in-memory TeamStore with the semantics of DynamoDbTeamStore, for tests."""

from __future__ import annotations

import threading
from dataclasses import replace

from functions.common.errors import Conflict, NotFound
from functions.teams.models import ApiKeyRecord, Team, TokenRecord
from functions.teams.store import utc_now_iso


class InMemoryTeamStore:
    """The same semantics as DynamoDbTeamStore, for tests and composition without AWS."""

    def __init__(self) -> None:
        self.teams: dict[str, Team] = {}
        self.tokens: dict[str, TokenRecord] = {}  # by hash
        self._ids: dict[tuple[str, str], str] = {}  # (team_id, token_id) -> hash
        self.api_keys: dict[str, ApiKeyRecord] = {}  # by the hash of the key's value
        self.webhook_secrets: dict[str, str] = {}  # by team id
        self.sealed_upstream_keys: dict[tuple[str, str], str] = {}  # by (team id, provider)
        self._lock = threading.Lock()

    def create_team(self, team: Team) -> None:
        with self._lock:
            if team.team_id in self.teams:
                raise Conflict(f"team {team.team_id} exists")
            self.teams[team.team_id] = team

    def get_team(self, team_id: str) -> Team | None:
        with self._lock:
            return self.teams.get(team_id)

    def put_token(self, record: TokenRecord) -> None:
        with self._lock:
            if record.team_id not in self.teams:
                raise NotFound("team not found")
            if record.token_hash in self.tokens or (record.team_id, record.token_id) in self._ids:
                raise Conflict(f"token {record.token_id} exists")
            self.tokens[record.token_hash] = record
            self._ids[(record.team_id, record.token_id)] = record.token_hash

    def revoke_token(self, team_id: str, token_id: str, revoked_at: str | None = None) -> bool:
        with self._lock:
            hashed = self._ids.get((team_id, token_id))
            if hashed is None:
                return False
            record = self.tokens[hashed]
            if not record.revoked:
                self.tokens[hashed] = replace(record, revoked_at=revoked_at or utc_now_iso())
            return True

    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        with self._lock:
            return self.tokens.get(token_hash)

    def set_monthly_budget(self, team_id: str, usd: float | None) -> Team | None:
        with self._lock:
            team = self.teams.get(team_id)
            if team is None:
                return None
            self.teams[team_id] = replace(team, monthly_budget_usd=usd)
            return self.teams[team_id]

    def put_api_key(self, record: ApiKeyRecord) -> None:
        with self._lock:
            if record.team_id not in self.teams:
                raise NotFound("team not found")
            taken = record.key_hash in self.api_keys
            if taken or any(key.team_id == record.team_id for key in self.api_keys.values()):
                raise Conflict(f"team {record.team_id} has an API key already")
            self.api_keys[record.key_hash] = record

    def api_key_by_hash(self, key_hash: str) -> ApiKeyRecord | None:
        with self._lock:
            return self.api_keys.get(key_hash)

    def api_key_of_team(self, team_id: str) -> ApiKeyRecord | None:
        with self._lock:
            return next((key for key in self.api_keys.values() if key.team_id == team_id), None)

    def put_webhook_secret(self, team_id: str, secret: str, created_at: str) -> None:
        with self._lock:
            if team_id not in self.teams:
                raise NotFound("team not found")
            self.webhook_secrets[team_id] = secret

    def webhook_secret(self, team_id: str) -> str | None:
        with self._lock:
            return self.webhook_secrets.get(team_id)

    def put_upstream_key(self, team_id: str, provider: str, sealed: str, created_at: str) -> None:
        with self._lock:
            if team_id not in self.teams:
                raise NotFound("team not found")
            self.sealed_upstream_keys[(team_id, provider)] = sealed

    def delete_upstream_key(self, team_id: str, provider: str) -> None:
        with self._lock:
            self.sealed_upstream_keys.pop((team_id, provider), None)

    def upstream_keys(self, team_id: str) -> dict[str, str]:
        with self._lock:
            return {p: sealed for (team, p), sealed in self.sealed_upstream_keys.items() if team == team_id}
