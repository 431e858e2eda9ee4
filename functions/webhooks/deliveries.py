"""The delivery log: every attempt of every webhook delivery, per team and job, durably.

Items in the jobs table, under a partition per team and job (the team is in the key, so a team reads
only its own; expired by the table's TTL after `WEBHOOK_LOG_RETENTION_DAYS`):

| pk                                    | sk                                                   |
|---------------------------------------|------------------------------------------------------|
| `TEAM#<team_id>#WEBHOOKS#JOB#<job_id>` | `ATTEMPT#<attempted_at>#<delivery_id>#<attempt:02d>` |

An attempt holds: delivery_id, event, url (without query or fragment), attempt (1-based; 0 for a
delivery that was not attempted), attempted_at, outcome, status_code, error, duration_ms, schedule_id.

Outcomes: `delivered` (2xx), `retrying` (5xx/408/429, time-out or connection failure; another attempt
follows), `failed` (the last attempt, or an answer not worth retrying such as a 4xx), `blocked` (the
SSRF guard refused the destination: nothing was sent), `skipped` (not attempted, e.g. the team has no
webhook secret).
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, Protocol

from functions.common.aws import dynamodb_resource
from functions.common.settings import get_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

Outcome = Literal["delivered", "retrying", "failed", "blocked", "skipped"]
FINAL_OUTCOMES = frozenset({"delivered", "failed", "blocked", "skipped"})


@dataclass(frozen=True)
class DeliveryAttempt:
    team_id: str
    job_id: str
    delivery_id: str
    event: str
    url: str
    attempt: int
    attempted_at: str  # ISO 8601 with microseconds, UTC
    outcome: Outcome
    status_code: int | None = None
    error: str | None = None
    duration_ms: float | None = None
    schedule_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class DeliveryLog(Protocol):
    def record(self, attempt: DeliveryAttempt, expires_at: int) -> None: ...

    def attempts(self, team_id: str, job_id: str) -> list[DeliveryAttempt]:
        """The team's attempts for the job, oldest first (none for another team's job)."""
        ...


def _pk(team_id: str, job_id: str) -> str:
    return f"TEAM#{team_id}#WEBHOOKS#JOB#{job_id}"


def _sk(attempt: DeliveryAttempt) -> str:
    return f"ATTEMPT#{attempt.attempted_at}#{attempt.delivery_id}#{attempt.attempt:02d}"


def _attempt_of(item: dict[str, Any]) -> DeliveryAttempt:
    def optional_int(name: str) -> int | None:
        value = item.get(name)
        return int(value) if value is not None else None

    duration = item.get("duration_ms")
    return DeliveryAttempt(
        team_id=str(item["team_id"]),
        job_id=str(item["job_id"]),
        delivery_id=str(item["delivery_id"]),
        event=str(item["event"]),
        url=str(item["url"]),
        attempt=int(item["attempt"]),
        attempted_at=str(item["attempted_at"]),
        outcome=item["outcome"],
        status_code=optional_int("status_code"),
        error=str(item["error"]) if item.get("error") else None,
        duration_ms=float(duration) if duration is not None else None,
        schedule_id=str(item["schedule_id"]) if item.get("schedule_id") else None,
    )


class DynamoDbDeliveryLog:
    def __init__(self, table: Table | None = None) -> None:
        self._table = table or dynamodb_resource().Table(get_settings().jobs_table)

    def record(self, attempt: DeliveryAttempt, expires_at: int) -> None:
        fields: dict[str, Any] = {k: v for k, v in attempt.to_dict().items() if v is not None}
        if attempt.duration_ms is not None:
            fields["duration_ms"] = Decimal(str(round(attempt.duration_ms, 1)))
        self._table.put_item(
            Item={
                "pk": _pk(attempt.team_id, attempt.job_id),
                "sk": _sk(attempt),
                **fields,
                "expires_at": expires_at,
            }
        )

    def attempts(self, team_id: str, job_id: str) -> list[DeliveryAttempt]:
        from boto3.dynamodb.conditions import Key  # boto3 loads with the first client, not the handler

        found: list[DeliveryAttempt] = []
        query: dict[str, Any] = {
            "KeyConditionExpression": Key("pk").eq(_pk(team_id, job_id)) & Key("sk").begins_with("ATTEMPT#"),
            "ConsistentRead": True,
        }
        while True:
            page = self._table.query(**query)
            found.extend(_attempt_of(dict(item)) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                return found
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


class InMemoryDeliveryLog:
    """The same semantics, for unit tests."""

    def __init__(self) -> None:
        self.items: list[DeliveryAttempt] = []
        self._lock = threading.Lock()

    def record(self, attempt: DeliveryAttempt, expires_at: int) -> None:
        with self._lock:
            self.items.append(attempt)

    def attempts(self, team_id: str, job_id: str) -> list[DeliveryAttempt]:
        with self._lock:
            mine = [a for a in self.items if a.team_id == team_id and a.job_id == job_id]
        return sorted(mine, key=_sk)


def grouped(attempts: list[DeliveryAttempt]) -> list[dict[str, Any]]:
    """Attempts grouped by delivery (in order of their first attempt), each with its final outcome."""
    deliveries: dict[str, dict[str, Any]] = {}
    for attempt in attempts:
        delivery = deliveries.setdefault(
            attempt.delivery_id,
            {
                "delivery_id": attempt.delivery_id,
                "event": attempt.event,
                "url": attempt.url,
                "schedule_id": attempt.schedule_id,
                "outcome": attempt.outcome,
                "attempts": [],
            },
        )
        delivery["attempts"].append(
            {
                "attempt": attempt.attempt,
                "attempted_at": attempt.attempted_at,
                "outcome": attempt.outcome,
                "status_code": attempt.status_code,
                "error": attempt.error,
                "duration_ms": attempt.duration_ms,
            }
        )
        delivery["outcome"] = attempt.outcome
    return list(deliveries.values())
