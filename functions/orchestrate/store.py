"""Adapters of the workflow: the job table (DynamoDB), the workflow starter (Step Functions), events.

Job state transitions are conditional writes on `status_rank`: a job only moves forward, and nothing
overwrites a terminal state, however late or often a step is retried.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack

from botocore.exceptions import ClientError

from functions.common.aws import dynamodb_resource, events_client, s3_client, sfn_client
from functions.common.errors import Conflict
from functions.common.resources import JOBS_BY_TEAM
from functions.common.settings import get_settings
from functions.common.storage import from_dynamo
from functions.orchestrate.models import TERMINAL_RANK, JobStatus

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

JOB_SK = "JOB"
IDEMPOTENCY_SK = "IDEMPOTENCY"
# The names of the `once` writes applied to a job (a string set on its record, never returned).
APPLIED_WRITES = "applied_writes"
EVENT_SOURCE = "research.agent"
IDEMPOTENCY_TTL_SECONDS = 24 * 3600


def _to_dynamo(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(round(value, 6)))
    if isinstance(value, dict):
        return {k: _to_dynamo(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_dynamo(v) for v in value]
    return value


def _job_key(team_id: str, job_id: str) -> dict[str, str]:
    """The team is part of the key: another team's job id reads as absent."""
    return {"pk": f"TEAM#{team_id}#JOB#{job_id}", "sk": JOB_SK}


def _conditional_write(write: Callable[[], object]) -> bool:
    """Run a conditional DynamoDB write; False when its condition failed."""
    try:
        write()
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ConditionalCheckFailedException":
            return False
        raise
    return True


class JobChanges(TypedDict, total=False):
    """One update of a job (`JobStore.update`): its new status, fields set, counters added, entries
    appended to lists, and the name of the write when it must apply once."""

    status: JobStatus | None
    set_fields: dict[str, Any] | None
    add_counters: dict[str, int] | None
    append: dict[str, list[Any]] | None
    once: str | None


class JobStore(Protocol):
    def create(self, item: dict[str, Any]) -> bool:
        """Store a new job record (it names its `team_id` and `job_id`); False when it exists."""
        ...

    def get(self, team_id: str, job_id: str) -> dict[str, Any] | None: ...

    def update(self, team_id: str, job_id: str, **changes: Unpack[JobChanges]) -> bool: ...

    def claim_idempotency_key(self, team_id: str, key: str, job_id: str, fingerprint: str) -> str | None: ...

    def release_idempotency_key(self, team_id: str, key: str, job_id: str) -> None:
        """Forget the team's `key` if it still names `job_id` (a job refused before it was recorded)."""
        ...

    def waiting_at_checkpoint(self, team_id: str) -> list[dict[str, Any]]:
        """The team's jobs that wait at a human checkpoint (the fields of the `by_team` index), read
        without reading another team's jobs."""
        ...


class DynamoDbJobStore:
    def __init__(self, table: Table | None = None) -> None:
        self._table = table or dynamodb_resource().Table(get_settings().jobs_table)

    def create(self, item: dict[str, Any]) -> bool:
        return _conditional_write(
            lambda: self._table.put_item(
                Item=_to_dynamo({**item, **_job_key(item["team_id"], item["job_id"])}),
                ConditionExpression="attribute_not_exists(pk)",
            )
        )

    def get(self, team_id: str, job_id: str) -> dict[str, Any] | None:
        item = self._table.get_item(Key=_job_key(team_id, job_id), ConsistentRead=True).get("Item")
        if not item:
            return None
        found: dict[str, Any] = from_dynamo(dict(item))
        found.pop(APPLIED_WRITES, None)  # bookkeeping of `once` writes, not part of the job
        return found

    def update(self, team_id: str, job_id: str, **changes: Unpack[JobChanges]) -> bool:
        """Apply one update if the job exists, is not terminal and would not move backwards.

        `once` names the write (e.g. "extract:src-1"): a repeat of a write with that name, as when Step
        Functions retries a step that had already done its work, changes nothing, so counters and
        audit entries are never added twice. Returns False (and changes nothing) when the condition fails.
        """
        expression, condition, names, values = _update_expression(changes)
        if not expression:
            return True
        return _conditional_write(
            lambda: self._table.update_item(
                Key=_job_key(team_id, job_id),
                UpdateExpression=expression,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        )

    def claim_idempotency_key(self, team_id: str, key: str, job_id: str, fingerprint: str) -> str | None:
        """Claim the team's `key` for `job_id`; when it was claimed before, return that job id instead."""
        key = f"TEAM#{team_id}#{key}"
        claimed = _conditional_write(
            lambda: self._table.put_item(
                Item={
                    "pk": f"IDEMPOTENCY#{key}",
                    "sk": IDEMPOTENCY_SK,
                    "job_id": job_id,
                    "fingerprint": fingerprint,
                    "expires_at": int(time.time()) + IDEMPOTENCY_TTL_SECONDS,
                },
                ConditionExpression="attribute_not_exists(pk)",
            )
        )
        if claimed:
            return None
        existing = self._table.get_item(
            Key={"pk": f"IDEMPOTENCY#{key}", "sk": IDEMPOTENCY_SK}, ConsistentRead=True
        )["Item"]
        if existing.get("fingerprint") != fingerprint:
            raise Conflict("this Idempotency-Key was used for a different request")
        return str(existing["job_id"])

    def release_idempotency_key(self, team_id: str, key: str, job_id: str) -> None:
        """Forget the team's `key` if it still names `job_id` (a job refused before it was recorded)."""
        key = f"TEAM#{team_id}#{key}"
        _conditional_write(
            lambda: self._table.delete_item(
                Key={"pk": f"IDEMPOTENCY#{key}", "sk": IDEMPOTENCY_SK},
                ConditionExpression="job_id = :job",
                ExpressionAttributeValues={":job": job_id},
            )
        )

    def waiting_at_checkpoint(self, team_id: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        query: dict[str, Any] = {
            "IndexName": JOBS_BY_TEAM.name,
            "KeyConditionExpression": "#team = :team",
            "FilterExpression": "#waiting = :waiting",
            "ExpressionAttributeNames": {
                "#team": JOBS_BY_TEAM.partition_key,
                "#waiting": "awaiting_checkpoint",
            },
            "ExpressionAttributeValues": {":team": team_id, ":waiting": True},
        }
        while True:
            page = self._table.query(**query)
            found += [from_dynamo(dict(item)) for item in page.get("Items", [])]
            if "LastEvaluatedKey" not in page:
                return found
            query["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _update_expression(changes: JobChanges) -> tuple[str, str, dict[str, str], dict[str, Any]]:
    """(update expression, condition, names, values) of one job update: it applies only to an existing
    job that is not terminal, would not move backwards and (with `once`) has not had that write yet."""
    status, once, append = changes.get("status"), changes.get("once"), changes.get("append") or {}
    names: dict[str, str] = {"#pk": "pk", "#rank": "status_rank"}
    values: dict[str, Any] = {":terminal": TERMINAL_RANK}
    sets: list[str] = []
    adds: list[str] = []
    condition = "attribute_exists(#pk) AND #rank < :terminal"
    if status is not None:
        names["#status"] = "status"
        values[":status"] = status.value
        values[":rank"] = status.rank
        sets += ["#status = :status", "#rank = :rank"]
        condition += " AND #rank <= :rank"
    for index, (name, value) in enumerate((changes.get("set_fields") or {}).items()):
        names[f"#s{index}"] = name
        values[f":s{index}"] = _to_dynamo(value)
        sets.append(f"#s{index} = :s{index}")
    for index, (name, amount) in enumerate((changes.get("add_counters") or {}).items()):
        names[f"#a{index}"] = name
        values[f":a{index}"] = amount
        adds.append(f"#a{index} :a{index}")
    if once is not None:
        names["#once"] = APPLIED_WRITES
        values[":once"] = once
        values[":onceset"] = {once}
        adds.append("#once :onceset")
        condition += " AND (attribute_not_exists(#once) OR NOT contains(#once, :once))"
    if append:
        values[":empty"] = []
    for index, (name, items) in enumerate(append.items()):
        names[f"#l{index}"] = name
        values[f":l{index}"] = _to_dynamo(items)
        sets.append(f"#l{index} = list_append(if_not_exists(#l{index}, :empty), :l{index})")
    expression = ("SET " + ", ".join(sets) if sets else "") + (" ADD " + ", ".join(adds) if adds else "")
    return expression.strip(), condition, names, values


class WorkflowStarter(Protocol):
    def start(self, name: str, payload: dict[str, Any]) -> str: ...

    def execution_status(self, execution_arn: str) -> str | None:
        """RUNNING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED..., or None when there is no such execution."""
        ...


class StepFunctionsStarter:
    def __init__(self, state_machine_arn: str | None = None) -> None:
        self._arn = state_machine_arn or get_settings().state_machine_arn

    def start(self, name: str, payload: dict[str, Any]) -> str:
        if not self._arn:
            raise RuntimeError("STATE_MACHINE_ARN is not configured")
        response = sfn_client().start_execution(
            stateMachineArn=self._arn, name=name, input=json.dumps(payload)
        )
        return response["executionArn"]

    def execution_status(self, execution_arn: str) -> str | None:
        client = sfn_client()
        try:
            return client.describe_execution(executionArn=execution_arn)["status"]
        except client.exceptions.ExecutionDoesNotExist:
            return None


class TaskTokens(Protocol):
    def succeed(self, token: str, output: dict[str, Any]) -> None: ...

    def fail(self, token: str, error: str, cause: str) -> None: ...


class StepFunctionsTaskTokens:
    """A checkpoint Task re-arms every 45 s with a new token; a decision racing that gets a Conflict."""

    def succeed(self, token: str, output: dict[str, Any]) -> None:
        self._send(lambda: sfn_client().send_task_success(taskToken=token, output=json.dumps(output)))

    def fail(self, token: str, error: str, cause: str) -> None:
        self._send(lambda: sfn_client().send_task_failure(taskToken=token, error=error, cause=cause[:32000]))

    @staticmethod
    def _send(call: Any) -> None:
        try:
            call()
        except ClientError as exc:
            if exc.response["Error"]["Code"] in ("TaskTimedOut", "InvalidToken", "TaskDoesNotExist"):
                raise Conflict("the checkpoint was re-armed while deciding; send the decision again") from exc
            raise


class EventPublisher(Protocol):
    def publish(self, detail_type: str, detail: dict[str, Any]) -> None: ...


class EventBridgePublisher:
    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        events_client().put_events(
            Entries=[
                {
                    "Source": EVENT_SOURCE,
                    "DetailType": detail_type,
                    "Detail": json.dumps(detail, default=str),
                    "EventBusName": get_settings().event_bus_name,
                }
            ]
        )


def presigned_artifact_url(bucket: str, key: str, seconds: int) -> str:
    url: str = s3_client().generate_presigned_url(
        "get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=seconds
    )
    return url
