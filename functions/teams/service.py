"""Teams and tokens: create a team (with its first token), issue and revoke tokens, resolve a token.

A token is returned once, when it is issued; only its hash is stored. `resolve` is what an authorizer
asks: the team a presented token belongs to, or None for an unknown or revoked token.

On AWS a new team also gets an API Gateway API key in its tier's usage plan (`usage_keys`, see
functions/teams/usage_keys.py), returned once by `onboard` and stored as its id and the hash of its value:
`resolve_api_key` finds the team of an `x-api-key`, `usage_key` gives a bearer-token caller's team key to
the authorizer, so usage plans meter both styles.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import cast

from functions.common.errors import InvalidInput, NotFound
from functions.common.secrets import UPSTREAM_KEY_PURPOSE, SecretCipher, is_plaintext
from functions.common.secrets import secret_cipher as cipher_from_settings
from functions.common.settings import get_settings
from functions.teams.models import (
    NAME_MAX_CHARS,
    TIERS,
    UPSTREAM_KEY_MAX_CHARS,
    UPSTREAM_KEY_PROVIDERS,
    ApiKeyRecord,
    Team,
    Tier,
    TokenRecord,
    new_team_id,
    new_token_id,
)
from functions.teams.store import TeamStore
from functions.teams.tokens import MAX_TOKEN_CHARS, new_token, token_hash
from functions.teams.usage_keys import NoUsageKeys, UsageKeys
from functions.webhooks.signing import new_secret as new_webhook_secret

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


def _printable(text: str) -> bool:
    return all("!" <= char <= "~" for char in text)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Onboarded:
    """A new team and what it is shown once: its first token and, on AWS, its API key."""

    team: Team
    token_id: str
    token: str
    api_key: str | None = None  # None where there are no API keys (locally)


class TeamService:
    def __init__(
        self,
        store: TeamStore,
        clock: Clock = utc_now,
        *,
        usage_keys: UsageKeys | None = None,
        secret_cipher: SecretCipher | None = None,
        upstream_key_cipher: SecretCipher | None = None,
    ) -> None:
        """`secret_cipher` seals webhook secrets, `upstream_key_cipher` the teams' own upstream API keys;
        None: the settings' (KMS on AWS, each for its purpose), built on first use."""
        self.store = store
        self._clock = clock
        self.usage_keys: UsageKeys = usage_keys or NoUsageKeys()
        self.secret_cipher = secret_cipher
        self.upstream_key_cipher = upstream_key_cipher

    def create_team(self, name: str, tier: str) -> tuple[Team, str, str]:
        """The new team, its first token's id and the token (shown once); see `onboard` for its API key."""
        created = self.onboard(name, tier)
        return created.team, created.token_id, created.token

    def onboard(self, name: str, tier: str) -> Onboarded:
        """A new team with its first token and, on AWS, its API key in its tier's usage plan. The key is
        made first: when the team cannot be stored, the key is deleted again."""
        cleaned = name.strip()
        if not cleaned:
            raise InvalidInput("name must not be empty", field="name")
        if len(cleaned) > NAME_MAX_CHARS:
            raise InvalidInput(f"name must be at most {NAME_MAX_CHARS} characters", field="name")
        if tier not in TIERS:
            raise InvalidInput(f"tier must be one of {', '.join(TIERS)}", field="tier")
        team = Team(team_id=new_team_id(), name=cleaned, tier=cast(Tier, tier), created_at=self._now())
        issued = self.usage_keys.create(team.team_id, team.name, team.tier)
        try:
            self.store.create_team(team)
            if issued is not None:
                self.store.put_api_key(
                    ApiKeyRecord(
                        api_key_id=issued.api_key_id,
                        team_id=team.team_id,
                        key_hash=token_hash(issued.value),
                        created_at=team.created_at,
                    )
                )
        except Exception:
            if issued is not None:
                self.usage_keys.delete(issued.api_key_id)
            raise
        token_id, token = self._issue(team.team_id)
        return Onboarded(team, token_id, token, issued.value if issued is not None else None)

    def issue_token(self, team_id: str) -> tuple[str, str]:
        """A new token of the team: (token_id, token). NotFound for an unknown team."""
        if self.store.get_team(team_id) is None:
            raise NotFound("team not found")
        return self._issue(team_id)

    def revoke_token(self, team_id: str, token_id: str) -> None:
        """NotFound when the team has no such token (another team's token included)."""
        if not self.store.revoke_token(team_id, token_id, revoked_at=self._now()):
            raise NotFound("token not found")

    def set_monthly_budget(self, team_id: str, usd: float | None) -> Team:
        """Set the team's monthly budget in USD (None removes it; functions/metering/budget.py): jobs that
        cannot fit what is left of it are refused, running ones stop at it. NotFound for an unknown team."""
        if usd is not None and (not math.isfinite(usd) or usd < 0):
            raise InvalidInput(
                "monthly_budget_usd must be a number >= 0, or null", field="monthly_budget_usd"
            )
        team = self.store.set_monthly_budget(team_id, usd)
        if team is None:
            raise NotFound("team not found")
        return team

    def resolve(self, token: str | None) -> Team | None:
        """The team of a live token; None for a missing, unknown or revoked one."""
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        record = self.store.token_by_hash(token_hash(token))
        if record is None or record.revoked:
            return None
        return self.store.get_team(record.team_id)

    def resolve_api_key(self, api_key: str | None) -> Team | None:
        """The team of one of our API keys (its value, as sent in `x-api-key`); None for any other."""
        if not api_key or len(api_key) > MAX_TOKEN_CHARS:
            return None
        record = self.store.api_key_by_hash(token_hash(api_key))
        return self.store.get_team(record.team_id) if record is not None else None

    def usage_key(self, team_id: str) -> str | None:
        """The value of the team's API key (its usage identifier); None when it has none."""
        record = self.store.api_key_of_team(team_id)
        return self.usage_keys.value(record.api_key_id) if record is not None else None

    def rotate_webhook_secret(self, team_id: str) -> str:
        """A new webhook secret of the team, replacing any earlier one (shown to the admin, who hands it
        to the team's receivers), stored sealed (functions/common/secrets.py). NotFound for an
        unknown team."""
        if self.store.get_team(team_id) is None:
            raise NotFound("team not found")
        secret = new_webhook_secret()
        self.store.put_webhook_secret(team_id, self._cipher().seal(secret, team_id), created_at=self._now())
        return secret

    def webhook_secret(self, team_id: str) -> str | None:
        """The key that signs the team's webhooks; None when the team has none (nothing is sent).
        SecretUnreadable when the stored one cannot be opened."""
        stored = self.store.webhook_secret(team_id)
        if stored is None or is_plaintext(stored):  # None, or stored in plain text by an earlier version
            return stored
        return self._cipher().open(stored, team_id)

    def set_upstream_key(self, team_id: str, provider: str, api_key: str) -> None:
        """Store the team's own API key at `provider` (replacing any earlier one), sealed: the team's
        searches there then send it and have a budget of their own. NotFound for an unknown team or
        provider; InvalidInput for a key that is empty, too long or not printable ASCII."""
        self._check_provider(provider)
        if not api_key or len(api_key) > UPSTREAM_KEY_MAX_CHARS or not _printable(api_key):
            raise InvalidInput(
                f"api_key must be 1 to {UPSTREAM_KEY_MAX_CHARS} printable ASCII characters without spaces",
                field="api_key",
            )
        if self.store.get_team(team_id) is None:
            raise NotFound("team not found")
        sealed = self._upstream_cipher().seal(api_key, team_id)
        self.store.put_upstream_key(team_id, provider, sealed, created_at=self._now())

    def remove_upstream_key(self, team_id: str, provider: str) -> None:
        """Forget the team's own key at `provider` (idempotent); NotFound for an unknown team or provider."""
        self._check_provider(provider)
        if self.store.get_team(team_id) is None:
            raise NotFound("team not found")
        self.store.delete_upstream_key(team_id, provider)

    def upstream_key_providers(self, team_id: str) -> list[str]:
        """The providers where the team has a key of its own (never the keys); NotFound for an unknown team."""
        if self.store.get_team(team_id) is None:
            raise NotFound("team not found")
        return sorted(self.store.upstream_keys(team_id))

    def upstream_keys(self, team_id: str) -> dict[str, str]:
        """The team's own keys by provider, opened (for the connectors that send them). SecretUnreadable
        when a stored one cannot be opened."""
        sealed = self.store.upstream_keys(team_id)
        return {provider: self._upstream_cipher().open(value, team_id) for provider, value in sealed.items()}

    def _check_provider(self, provider: str) -> None:
        if provider not in UPSTREAM_KEY_PROVIDERS:
            raise NotFound(
                f"no upstream takes a team's key by that name (one of {', '.join(UPSTREAM_KEY_PROVIDERS)})"
            )

    def _upstream_cipher(self) -> SecretCipher:
        if self.upstream_key_cipher is None:
            self.upstream_key_cipher = cipher_from_settings(get_settings(), UPSTREAM_KEY_PURPOSE)
        return self.upstream_key_cipher

    def _cipher(self) -> SecretCipher:
        if self.secret_cipher is None:
            self.secret_cipher = cipher_from_settings(get_settings())
        return self.secret_cipher

    def _issue(self, team_id: str) -> tuple[str, str]:
        token = new_token()
        record = TokenRecord(
            token_id=new_token_id(), team_id=team_id, token_hash=token_hash(token), created_at=self._now()
        )
        self.store.put_token(record)
        return record.token_id, token

    def _now(self) -> str:
        return _iso(self._clock())
