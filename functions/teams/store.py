"""Where teams and their tokens live: the registry table `teams_table` (DynamoDB; tests have an in-memory
twin in tests/support/fakes).

Items (one table, `pk` + `sk`):

| pk                 | sk                  | holds                                                 |
|--------------------|---------------------|-------------------------------------------------------|
| `TEAM#<team_id>`   | `TEAM`              | name, tier, created_at                                |
| `TOKEN#<sha256>`   | `TOKEN`             | token_id, team_id, created_at, revoked_at (the lookup) |
| `TEAM#<team_id>`   | `TOKEN#<token_id>`  | the same, to revoke a token by its id                 |
| `APIKEY#<sha256>`  | `APIKEY`            | api_key_id, team_id, created_at: an `x-api-key`'s team |
| `TEAM#<team_id>`   | `APIKEY`            | the same: the team's API key (at most one)            |
| `TEAM#<team_id>`   | `WEBHOOK_SECRET`    | webhook_secret (sealed), created_at: signs webhooks   |
| `TEAM#<team_id>`   | `UPSTREAM_KEY#<p>`  | sealed_key, created_at: the team's own key at p       |

Resolving a token is one GetItem on its hash. A token is written (both items, and a check that its team
exists) in one transaction, and revoked the same way; the token itself is never stored. A team's API
Gateway API key (on AWS) is stored the same way: both items in one transaction, by the SHA-256 of its value.
The webhook secret is an HMAC key the service must sign with, so it is not hashed: the store keeps it
sealed, as `TeamService` hands it over (KMS on AWS, AES-GCM locally: functions/common/secrets.py);
rotating it replaces it. A team's own upstream API keys (Semantic Scholar, OpenAlex) are kept the same
way, sealed, one item per provider.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, cast

from botocore.exceptions import ClientError

from functions.common.aws import dynamodb_resource
from functions.common.errors import Conflict, NotFound
from functions.common.settings import get_settings
from functions.teams.models import ApiKeyRecord, Team, Tier, TokenRecord

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

TEAM_SK = "TEAM"
TOKEN_SK = "TOKEN"  # noqa: S105 (a sort key, not a secret)
API_KEY_SK = "APIKEY"
WEBHOOK_SECRET_SK = "WEBHOOK_SECRET"  # noqa: S105 (a sort key, not a secret)
UPSTREAM_KEY_SK = "UPSTREAM_KEY#"


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class TeamStore(Protocol):
    def create_team(self, team: Team) -> None:
        """Conflict when a team with this id exists."""
        ...

    def get_team(self, team_id: str) -> Team | None: ...

    def put_token(self, record: TokenRecord) -> None:
        """NotFound when the record's team does not exist."""
        ...

    def revoke_token(self, team_id: str, token_id: str, revoked_at: str | None = None) -> bool:
        """Revoke (idempotently: the first revocation time stays); False when the team has no such token."""
        ...

    def token_by_hash(self, token_hash: str) -> TokenRecord | None: ...

    def set_monthly_budget(self, team_id: str, usd: float | None) -> Team | None:
        """Set (None: remove) the team's monthly budget; the team after it, None when it does not exist."""
        ...

    def put_api_key(self, record: ApiKeyRecord) -> None:
        """NotFound when the record's team does not exist; Conflict when it has a key already."""
        ...

    def api_key_by_hash(self, key_hash: str) -> ApiKeyRecord | None: ...

    def api_key_of_team(self, team_id: str) -> ApiKeyRecord | None: ...

    def put_webhook_secret(self, team_id: str, secret: str, created_at: str) -> None:
        """Set (or replace: rotate) the team's webhook secret; NotFound when the team does not exist."""
        ...

    def webhook_secret(self, team_id: str) -> str | None: ...

    def put_upstream_key(self, team_id: str, provider: str, sealed: str, created_at: str) -> None:
        """Set (or replace) the team's sealed key at `provider`; NotFound when the team does not exist."""
        ...

    def delete_upstream_key(self, team_id: str, provider: str) -> None: ...

    def upstream_keys(self, team_id: str) -> dict[str, str]:
        """The team's sealed keys by provider (empty when it has none)."""
        ...


def _team_key(team_id: str) -> dict[str, str]:
    return {"pk": f"TEAM#{team_id}", "sk": TEAM_SK}


def _webhook_secret_key(team_id: str) -> dict[str, str]:
    return {"pk": f"TEAM#{team_id}", "sk": WEBHOOK_SECRET_SK}


def _upstream_key_key(team_id: str, provider: str) -> dict[str, str]:
    return {"pk": f"TEAM#{team_id}", "sk": f"{UPSTREAM_KEY_SK}{provider}"}


def _hash_key(token_hash: str) -> dict[str, str]:
    return {"pk": f"TOKEN#{token_hash}", "sk": TOKEN_SK}


def _index_key(team_id: str, token_id: str) -> dict[str, str]:
    return {"pk": f"TEAM#{team_id}", "sk": f"TOKEN#{token_id}"}


def _api_key_hash_key(key_hash: str) -> dict[str, str]:
    return {"pk": f"APIKEY#{key_hash}", "sk": API_KEY_SK}


def _team_api_key_key(team_id: str) -> dict[str, str]:
    return {"pk": f"TEAM#{team_id}", "sk": API_KEY_SK}


def _strings(item: dict[str, Any], *names: str) -> dict[str, str]:
    return {name: str(item[name]) for name in names}


def _api_key_of(item: dict[str, Any]) -> ApiKeyRecord:
    return ApiKeyRecord(**_strings(item, "api_key_id", "team_id", "key_hash", "created_at"))


def _team_of(item: dict[str, Any]) -> Team:
    return Team(
        team_id=str(item["team_id"]),
        name=str(item["name"]),
        tier=cast(Tier, str(item["tier"])),
        created_at=str(item["created_at"]),
        monthly_budget_usd=_budget_of(item.get("monthly_budget_usd")),
    )


def _budget_of(value: Any) -> float | None:
    return float(value) if isinstance(value, Decimal | int | float) else None


def _record_of(item: dict[str, Any]) -> TokenRecord:
    revoked_at = item.get("revoked_at")
    fields = _strings(item, "token_id", "team_id", "token_hash", "created_at")
    return TokenRecord(**fields, revoked_at=str(revoked_at) if revoked_at else None)


def _cancellation_codes(exc: ClientError) -> list[str]:
    reasons = cast(list[dict[str, Any]], exc.response.get("CancellationReasons") or [])
    return [str(reason.get("Code", "")) for reason in reasons]


class DynamoDbTeamStore:
    def __init__(self, table: Table | None = None) -> None:
        self._table = table or dynamodb_resource().Table(get_settings().teams_table)
        # The resource's own client: it (de)serialises plain Python values, as the Table does.
        self._client: Any = self._table.meta.client

    def create_team(self, team: Team) -> None:
        item = {**_team_key(team.team_id), **_item_fields(team)}
        try:
            self._table.put_item(Item=item, ConditionExpression="attribute_not_exists(pk)")
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                raise Conflict(f"team {team.team_id} exists") from exc
            raise

    def get_team(self, team_id: str) -> Team | None:
        item = self._table.get_item(Key=_team_key(team_id), ConsistentRead=True).get("Item")
        return _team_of(dict(item)) if item else None

    def put_token(self, record: TokenRecord) -> None:
        fields = _item_fields(record)
        self._write_for_team(
            record.team_id,
            [
                {**_hash_key(record.token_hash), **fields},
                {**_index_key(record.team_id, record.token_id), **fields},
            ],
            conflict=f"token {record.token_id} exists",
        )

    def _write_for_team(self, team_id: str, items: list[dict[str, Any]], *, conflict: str | None) -> None:
        """Put `items` in one transaction that checks the team exists (else NotFound). With `conflict`,
        every item must be new (else Conflict(conflict)); without it, items are overwritten."""
        table = self._table.name
        check = {"TableName": table, "Key": _team_key(team_id), "ConditionExpression": "attribute_exists(pk)"}
        new_only = {"ConditionExpression": "attribute_not_exists(pk)"} if conflict is not None else {}
        puts = [{"Put": {"TableName": table, "Item": item, **new_only}} for item in items]
        try:
            self._client.transact_write_items(TransactItems=[{"ConditionCheck": check}, *puts])
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "TransactionCanceledException":
                raise
            codes = _cancellation_codes(exc)
            if codes[:1] == ["ConditionalCheckFailed"]:
                raise NotFound("team not found") from exc
            if conflict is not None and "ConditionalCheckFailed" in codes:
                raise Conflict(conflict) from exc
            raise

    def revoke_token(self, team_id: str, token_id: str, revoked_at: str | None = None) -> bool:
        found = self._table.get_item(Key=_index_key(team_id, token_id), ConsistentRead=True).get("Item")
        if not found:
            return False
        record = _record_of(dict(found))
        if record.revoked:
            return True
        update = {
            "TableName": self._table.name,
            "UpdateExpression": "SET revoked_at = if_not_exists(revoked_at, :at)",
            "ConditionExpression": "attribute_exists(pk)",
            "ExpressionAttributeValues": {":at": revoked_at or utc_now_iso()},
        }
        self._client.transact_write_items(
            TransactItems=[
                {"Update": {**update, "Key": _hash_key(record.token_hash)}},
                {"Update": {**update, "Key": _index_key(team_id, token_id)}},
            ]
        )
        return True

    def token_by_hash(self, token_hash: str) -> TokenRecord | None:
        item = self._table.get_item(Key=_hash_key(token_hash), ConsistentRead=True).get("Item")
        return _record_of(dict(item)) if item else None

    def set_monthly_budget(self, team_id: str, usd: float | None) -> Team | None:
        update: dict[str, Any] = {"UpdateExpression": "REMOVE monthly_budget_usd"}
        if usd is not None:
            update = {
                "UpdateExpression": "SET monthly_budget_usd = :usd",
                "ExpressionAttributeValues": {":usd": Decimal(repr(usd))},
            }
        try:
            response = self._table.update_item(
                Key=_team_key(team_id),
                ConditionExpression="attribute_exists(pk)",
                ReturnValues="ALL_NEW",
                **update,
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return None
            raise
        return _team_of(dict(response["Attributes"]))

    def put_api_key(self, record: ApiKeyRecord) -> None:
        fields = _item_fields(record)
        self._write_for_team(
            record.team_id,
            [
                {**_api_key_hash_key(record.key_hash), **fields},
                {**_team_api_key_key(record.team_id), **fields},
            ],
            conflict=f"team {record.team_id} has an API key already",
        )

    def api_key_by_hash(self, key_hash: str) -> ApiKeyRecord | None:
        # A key is never changed once written, so an eventually consistent read is enough.
        item = self._table.get_item(Key=_api_key_hash_key(key_hash)).get("Item")
        return _api_key_of(dict(item)) if item else None

    def api_key_of_team(self, team_id: str) -> ApiKeyRecord | None:
        item = self._table.get_item(Key=_team_api_key_key(team_id)).get("Item")
        return _api_key_of(dict(item)) if item else None

    def put_webhook_secret(self, team_id: str, secret: str, created_at: str) -> None:
        item = {
            **_webhook_secret_key(team_id),
            "team_id": team_id,
            "webhook_secret": secret,
            "created_at": created_at,
        }
        self._write_for_team(team_id, [item], conflict=None)  # a new secret replaces the old one

    def webhook_secret(self, team_id: str) -> str | None:
        item = self._table.get_item(Key=_webhook_secret_key(team_id), ConsistentRead=True).get("Item")
        return str(item["webhook_secret"]) if item and item.get("webhook_secret") else None

    def put_upstream_key(self, team_id: str, provider: str, sealed: str, created_at: str) -> None:
        item = {
            **_upstream_key_key(team_id, provider),
            "team_id": team_id,
            "provider": provider,
            "sealed_key": sealed,
            "created_at": created_at,
        }
        self._write_for_team(team_id, [item], conflict=None)  # a new key replaces the old one

    def delete_upstream_key(self, team_id: str, provider: str) -> None:
        self._table.delete_item(Key=_upstream_key_key(team_id, provider))

    def upstream_keys(self, team_id: str) -> dict[str, str]:
        from boto3.dynamodb.conditions import Key  # here: the admin handler's import stays light

        response = self._table.query(
            KeyConditionExpression=Key("pk").eq(f"TEAM#{team_id}") & Key("sk").begins_with(UPSTREAM_KEY_SK),
            ConsistentRead=True,
        )
        return {
            str(item["provider"]): str(item["sealed_key"])
            for item in response.get("Items", [])
            if item.get("provider") and item.get("sealed_key")
        }


def _item_fields(record: Team | TokenRecord | ApiKeyRecord) -> dict[str, Any]:
    """The record's fields as item attributes: a number as a Decimal, and no attribute for an unset one."""
    fields = {name: value for name, value in asdict(record).items() if value is not None}
    return {
        name: Decimal(repr(value)) if isinstance(value, float) else value for name, value in fields.items()
    }
