"""What a schedule remembers of its runs: the last completed job (id, results location, when).

One item per schedule in the jobs table (the workflow's steps and the orchestrate API already use it):

| pk                                       | sk         | holds                                              |
|------------------------------------------|------------|----------------------------------------------------|
| `TEAM#<team_id>#SCHEDULE#<schedule_id>`  | `LAST_RUN` | job_id, status, results_key, finished_at, and the  |
|                                          |            | same of the run before it (`previous_*`)           |

The team is part of the key, like every job key. A run is remembered only when it finished later than
the remembered one (a conditional write), so a late retry of an older run never moves it backwards.
"""

from __future__ import annotations

import threading
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from functions.common.aws import dynamodb_resource
from functions.common.settings import get_settings

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

LAST_RUN_SK = "LAST_RUN"


@dataclass(frozen=True)
class ScheduleRun:
    job_id: str
    status: str
    results_key: str
    finished_at: str  # ISO 8601 with microseconds, UTC: compared as text
    # The run before it, so that a retried Finalize of this run still compares with its predecessor.
    previous_job_id: str | None = None
    previous_results_key: str | None = None
    previous_finished_at: str | None = None


class ScheduleRunStore(Protocol):
    def last_run(self, team_id: str, schedule_id: str) -> ScheduleRun | None: ...

    def remember(self, team_id: str, schedule_id: str, run: ScheduleRun) -> bool:
        """Make `run` the last run unless a later one is remembered; False when it was not newer."""
        ...

    def forget(self, team_id: str, schedule_id: str) -> None: ...


def _key(team_id: str, schedule_id: str) -> dict[str, str]:
    return {"pk": f"TEAM#{team_id}#SCHEDULE#{schedule_id}", "sk": LAST_RUN_SK}


def _optional(item: dict[str, Any], name: str) -> str | None:
    value = item.get(name)
    return str(value) if value else None


def _run_of(item: dict[str, Any]) -> ScheduleRun:
    return ScheduleRun(
        job_id=str(item["job_id"]),
        status=str(item.get("status") or ""),
        results_key=str(item.get("results_key") or ""),
        finished_at=str(item.get("finished_at") or ""),
        previous_job_id=_optional(item, "previous_job_id"),
        previous_results_key=_optional(item, "previous_results_key"),
        previous_finished_at=_optional(item, "previous_finished_at"),
    )


class DynamoDbScheduleRunStore:
    def __init__(self, table: Table | None = None) -> None:
        self._table = table or dynamodb_resource().Table(get_settings().jobs_table)

    def last_run(self, team_id: str, schedule_id: str) -> ScheduleRun | None:
        item = self._table.get_item(Key=_key(team_id, schedule_id), ConsistentRead=True).get("Item")
        return _run_of(dict(item)) if item else None

    def remember(self, team_id: str, schedule_id: str, run: ScheduleRun) -> bool:
        fields = {name: value for name, value in asdict(run).items() if value is not None}
        try:
            self._table.put_item(
                Item={**_key(team_id, schedule_id), "team_id": team_id, "schedule_id": schedule_id, **fields},
                ConditionExpression="attribute_not_exists(pk) OR finished_at < :finished",
                ExpressionAttributeValues={":finished": run.finished_at},
            )
        except ClientError as exc:
            if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def forget(self, team_id: str, schedule_id: str) -> None:
        self._table.delete_item(Key=_key(team_id, schedule_id))


class InMemoryScheduleRunStore:
    """The same semantics, for unit tests."""

    def __init__(self) -> None:
        self.runs: dict[tuple[str, str], ScheduleRun] = {}
        self._lock = threading.Lock()

    def last_run(self, team_id: str, schedule_id: str) -> ScheduleRun | None:
        with self._lock:
            return self.runs.get((team_id, schedule_id))

    def remember(self, team_id: str, schedule_id: str, run: ScheduleRun) -> bool:
        with self._lock:
            known = self.runs.get((team_id, schedule_id))
            if known is not None and not known.finished_at < run.finished_at:
                return False
            self.runs[(team_id, schedule_id)] = run
            return True

    def forget(self, team_id: str, schedule_id: str) -> None:
        with self._lock:
            self.runs.pop((team_id, schedule_id), None)
