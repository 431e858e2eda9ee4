"""The usage store on DynamoDB (the registry's `usage_table`); items and semantics in store.py."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import asdict
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

import boto3
from boto3.dynamodb.conditions import Key
from botocore.config import Config
from botocore.exceptions import ClientError

from functions.common.aws import dynamodb_resource
from functions.common.settings import get_settings
from functions.metering.store import (
    LEDGER,
    TOTALS,
    HoldChange,
    HoldOutcome,
    HoldRequest,
    JobLedger,
    JobTerms,
    Refused,
    ReserveRequest,
    UsageItem,
    UsageKey,
    job_pk,
    month_pk,
)

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

    from functions.common.settings import Settings

_CREATING = threading.Lock()

_DESCRIPTIVE = frozenset(
    {
        "pk",
        "sk",
        "team_id",
        "job_id",
        "depth",
        "max_cost_usd",
        "monthly_budget_usd",
        "held_usd",
        "hold_month",
        "settled_at",
        "hold_margin_sq",
        "planned_extractions",
        "selected_extractions",
    }
)


def _number(value: float) -> Decimal:
    """A counter amount as DynamoDB stores it (12 decimals: far below a millionth of a cent).

    Under a millionth, str() of a Decimal is exponent-only ("8E-7"): DynamoDB accepts it, but moto's
    ADD (the embedded runtime) reads a number without a point as an int and fails the whole update, so
    such amounts keep a point ("8.0000000E-7", the same number)."""
    number = Decimal(repr(round(float(value), 12)))
    return number.quantize(Decimal("1e-13")) if number and number.adjusted() < -6 else number


def _add_expression(
    counters: Mapping[str, float], labels: Mapping[str, str] | None = None
) -> tuple[str, dict[str, str], dict[str, Any]]:
    names: dict[str, str] = {}
    values: dict[str, Any] = {}
    parts: list[str] = []
    for index, (name, amount) in enumerate(counters.items()):
        names[f"#c{index}"] = name
        values[f":c{index}"] = _number(amount)
        parts.append(f"#c{index} :c{index}")
    for index, (name, label) in enumerate((labels or {}).items()):
        names[f"#l{index}"] = name
        values[f":l{index}"] = {label}
        parts.append(f"#l{index} :l{index}")
    return "ADD " + ", ".join(parts), names, values


def _item(raw: Mapping[str, Any]) -> UsageItem:
    counters: dict[str, float] = {}
    labels: dict[str, list[str]] = {}
    for name, value in raw.items():
        if name in ("pk", "sk"):
            continue
        if isinstance(value, Decimal | int | float):
            counters[name] = float(value)
        elif isinstance(value, set):
            labels[name] = sorted(str(v) for v in value)
    return UsageItem(str(raw["sk"]), counters, labels)


def _ledger(team_id: str, job_id: str, raw: Mapping[str, Any]) -> JobLedger:
    counters = {
        name: float(value)
        for name, value in raw.items()
        if name not in _DESCRIPTIVE and isinstance(value, Decimal | int | float)
    }
    return JobLedger.from_stored(team_id, job_id, counters, raw)


def quick_table(settings: Settings) -> Table:
    """The usage table on a client that tries a request at most twice, with short timeouts."""
    config = Config(retries={"mode": "standard", "total_max_attempts": 2}, connect_timeout=2, read_timeout=5)
    with _CREATING:  # boto3's default session is not thread-safe while it creates clients
        resource = boto3.resource(
            "dynamodb",
            region_name=settings.aws_region,
            endpoint_url=settings.aws_endpoint_url or None,
            config=config,
        )
    return resource.Table(settings.usage_table)


class DynamoDbUsageStore:
    def __init__(self, table: Table | None = None) -> None:
        self._table = table or dynamodb_resource().Table(get_settings().usage_table)
        self._client: Any = self._table.meta.client  # the resource's client: plain Python values

    def add(
        self, key: UsageKey, counters: Mapping[str, float], labels: Mapping[str, str] | None = None
    ) -> None:
        if not counters and not labels:
            return
        expression, names, values = _add_expression(counters, labels)
        self._table.update_item(
            Key={"pk": key.pk, "sk": key.dimension},
            UpdateExpression=expression,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def get(self, key: UsageKey) -> UsageItem | None:
        raw = self._table.get_item(Key={"pk": key.pk, "sk": key.dimension}, ConsistentRead=True).get("Item")
        return _item(raw) if raw else None

    def month(self, team_id: str, month: str) -> list[UsageItem]:
        items: list[UsageItem] = []
        query: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(month_pk(team_id, month)),
            "ConsistentRead": True,
        }
        while True:
            page = self._table.query(**query)
            items.extend(_item(raw) for raw in page.get("Items", []))
            if not page.get("LastEvaluatedKey"):
                return items
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]

    def open_job(self, terms: JobTerms) -> None:
        names: dict[str, str] = {}
        values: dict[str, Any] = {}
        sets: list[str] = []
        for index, (name, value) in enumerate(asdict(terms).items()):
            if value is not None:
                names[f"#d{index}"] = name
                values[f":d{index}"] = value if isinstance(value, str) else _number(value)
                sets.append(f"#d{index} = if_not_exists(#d{index}, :d{index})")
        self._table.update_item(
            Key={"pk": job_pk(terms.team_id, terms.job_id), "sk": LEDGER},
            UpdateExpression="SET " + ", ".join(sets),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def job(self, team_id: str, job_id: str) -> JobLedger | None:
        raw = self._table.get_item(
            Key={"pk": job_pk(team_id, job_id), "sk": LEDGER}, ConsistentRead=True
        ).get("Item")
        return _ledger(team_id, job_id, raw) if raw else None

    def charge_job(self, team_id: str, job_id: str, counters: Mapping[str, float]) -> JobLedger:
        key = {"pk": job_pk(team_id, job_id), "sk": LEDGER}
        if not counters:
            return self.job(team_id, job_id) or JobLedger(team_id, job_id)
        expression, names, values = _add_expression(counters)
        response = self._table.update_item(
            Key=key,
            UpdateExpression=expression,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
            ReturnValues="ALL_NEW",
        )
        return _ledger(team_id, job_id, response.get("Attributes") or {})

    def raise_max_step(self, team_id: str, job_id: str, usd: float) -> None:
        try:
            self._table.update_item(
                Key={"pk": job_pk(team_id, job_id), "sk": LEDGER},
                UpdateExpression="SET max_step_usd = :usd",
                ConditionExpression="attribute_not_exists(max_step_usd) OR max_step_usd < :usd",
                ExpressionAttributeValues={":usd": _number(usd)},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] != "ConditionalCheckFailedException":
                raise

    def reserve(self, request: ReserveRequest) -> Refused | None:
        team_id, month = request.team_id, request.month
        targets: list[tuple[dict[str, str], float | None]] = [
            ({"pk": job_pk(team_id, request.job_id), "sk": LEDGER}, request.job_limit)
        ]
        if month is not None:
            targets.append(({"pk": month_pk(team_id, month), "sk": TOTALS}, request.month_limit))
        updates: list[dict[str, Any]] = []
        for key, limit in targets:
            update: dict[str, Any] = {
                "TableName": self._table.name,
                "Key": key,
                "UpdateExpression": "ADD committed_usd :usd",
                "ExpressionAttributeValues": {":usd": _number(request.usd)},
            }
            if limit is not None:
                update["ConditionExpression"] = (
                    "attribute_not_exists(committed_usd) OR committed_usd <= :limit"
                )
                update["ExpressionAttributeValues"][":limit"] = _number(limit)
            updates.append({"Update": update})
        try:
            self._client.transact_write_items(TransactItems=updates)
        except ClientError as exc:
            codes = _cancellation_codes(exc)
            if codes[:1] == ["ConditionalCheckFailed"]:
                return "job"
            if "ConditionalCheckFailed" in codes:
                return "team"
            raise
        return None

    def hold(self, request: HoldRequest) -> HoldOutcome:
        table = self._table.name
        team_id, job_id, month, usd = request.team_id, request.job_id, request.month, request.usd
        totals = {
            "TableName": table,
            "Key": {"pk": month_pk(team_id, month), "sk": TOTALS},
            "UpdateExpression": "ADD committed_usd :usd, hold_margin_sq :margin",
            "ConditionExpression": "attribute_not_exists(committed_usd) OR committed_usd <= :limit",
            "ExpressionAttributeValues": {
                ":usd": _number(usd),
                ":limit": _number(request.month_limit),
                ":margin": _number(request.margin_sq),
            },
        }
        ledger = {
            "TableName": table,
            "Key": {"pk": job_pk(team_id, job_id), "sk": LEDGER},
            "UpdateExpression": "SET held_usd = :usd, hold_month = :month, team_id = :team, job_id = :job, "
            "monthly_budget_usd = if_not_exists(monthly_budget_usd, :budget), hold_margin_sq = :margin, "
            "planned_extractions = :extractions",
            "ConditionExpression": "attribute_not_exists(held_usd)",
            "ExpressionAttributeValues": {
                ":usd": _number(usd),
                ":month": month,
                ":team": team_id,
                ":job": job_id,
                ":budget": _number(request.monthly_budget_usd),
                ":margin": _number(request.margin_sq),
                ":extractions": request.planned_extractions,
            },
        }
        try:
            self._client.transact_write_items(TransactItems=[{"Update": totals}, {"Update": ledger}])
        except ClientError as exc:
            codes = _cancellation_codes(exc)
            if codes[1:2] == ["ConditionalCheckFailed"]:
                return "already_held"
            if codes[:1] == ["ConditionalCheckFailed"]:
                return "refused"
            raise
        return "held"

    def select_extractions(self, team_id: str, job_id: str, count: int) -> None:
        self._table.update_item(
            Key={"pk": job_pk(team_id, job_id), "sk": LEDGER},
            UpdateExpression="SET selected_extractions = :count",
            ExpressionAttributeValues={":count": count},
        )

    def resize_hold(self, change: HoldChange) -> bool:
        ledger = {
            "TableName": self._table.name,
            "Key": {"pk": job_pk(change.team_id, change.job_id), "sk": LEDGER},
            "UpdateExpression": "ADD held_usd :usd, hold_margin_sq :margin",
            "ConditionExpression": "attribute_exists(held_usd) AND attribute_not_exists(settled_at)",
            "ExpressionAttributeValues": {":usd": _number(change.usd), ":margin": _number(change.margin_sq)},
        }
        totals: dict[str, Any] = {
            "TableName": self._table.name,
            "Key": {"pk": month_pk(change.team_id, change.month), "sk": TOTALS},
            "UpdateExpression": "ADD committed_usd :usd, hold_margin_sq :margin",
            "ExpressionAttributeValues": {":usd": _number(change.usd), ":margin": _number(change.margin_sq)},
        }
        if change.month_limit is not None:
            totals["ConditionExpression"] = "attribute_not_exists(committed_usd) OR committed_usd <= :limit"
            totals["ExpressionAttributeValues"][":limit"] = _number(change.month_limit)
        try:
            self._client.transact_write_items(TransactItems=[{"Update": ledger}, {"Update": totals}])
        except ClientError as exc:
            if "ConditionalCheckFailed" in _cancellation_codes(exc):
                return False
            raise
        return True

    def settle(self, team_id: str, job_id: str) -> tuple[str, float] | None:
        try:
            response = self._table.update_item(
                Key={"pk": job_pk(team_id, job_id), "sk": LEDGER},
                UpdateExpression="SET settled_at = :now",
                ConditionExpression="attribute_exists(held_usd) AND attribute_not_exists(settled_at)",
                ExpressionAttributeValues={":now": datetime.now(UTC).isoformat()},
                ReturnValues="ALL_NEW",
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return None
            raise
        ledger = _ledger(team_id, job_id, response.get("Attributes") or {})
        if ledger.held_usd is None or ledger.hold_month is None:
            return None
        released = max(0.0, ledger.held_usd - ledger.cost_usd)
        returned = {"committed_usd": -released, "hold_margin_sq": -ledger.hold_margin_sq}
        self.add(UsageKey(team_id, ledger.hold_month, TOTALS), {k: v for k, v in returned.items() if v})
        return ledger.hold_month, released


def _cancellation_codes(exc: ClientError) -> list[str]:
    """Why a transaction was cancelled, one code per item; any other error is raised again."""
    if exc.response["Error"]["Code"] != "TransactionCanceledException":
        raise exc
    reasons = cast(list[dict[str, Any]], exc.response.get("CancellationReasons") or [])
    return [str(reason.get("Code", "")) for reason in reasons]
