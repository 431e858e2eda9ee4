"""Which calls a step's declaration allows: reads under read, writes under read/write, events under events."""

from __future__ import annotations

from collections.abc import Mapping

from functions.common import resources
from functions.common.resources import Uses
from functions.common.settings import get_settings
from functions.local_runtime.grants import refusal

READER = Uses(read=("jobs_table", "data_bucket"))
WRITER = Uses(read_write=("jobs_table", "data_bucket"), events=True)


def _refused(uses: Uses, service: str, operation: str, params: Mapping[str, object]) -> str | None:
    denial = refusal("Step", uses, service, operation, params)
    return None if denial is None else denial.resource


def test_reads_need_read_and_writes_need_read_write_on_tables() -> None:
    jobs = get_settings().jobs_table
    for operation in ("GetItem", "Query", "Scan", "DescribeTable"):
        assert _refused(READER, "dynamodb", operation, {"TableName": jobs}) is None
    for operation in ("PutItem", "UpdateItem", "DeleteItem"):
        assert _refused(READER, "dynamodb", operation, {"TableName": jobs}) == "jobs_table"
        assert _refused(WRITER, "dynamodb", operation, {"TableName": jobs}) is None
    assert _refused(READER, "dynamodb", "BatchGetItem", {"RequestItems": {jobs: {}}}) is None
    assert _refused(READER, "dynamodb", "BatchWriteItem", {"RequestItems": {jobs: []}}) == "jobs_table"


def test_a_transaction_is_held_per_table_it_names() -> None:
    settings = get_settings()
    items = [{"Update": {"TableName": settings.jobs_table}}, {"Put": {"TableName": settings.usage_table}}]
    assert _refused(WRITER, "dynamodb", "TransactWriteItems", {"TransactItems": items}) == "usage_table"
    checks = [{"ConditionCheck": {"TableName": settings.jobs_table}}]
    assert _refused(READER, "dynamodb", "TransactWriteItems", {"TransactItems": checks}) is None


def test_buckets_and_the_event_bus() -> None:
    data = get_settings().data_bucket
    assert _refused(READER, "s3", "GetObject", {"Bucket": data, "Key": "k"}) is None
    assert _refused(READER, "s3", "ListObjectsV2", {"Bucket": data}) is None
    assert _refused(READER, "s3", "PutObject", {"Bucket": data, "Key": "k"}) == "data_bucket"
    artifacts = get_settings().artifacts_bucket
    copy = {"Bucket": data, "Key": "k", "CopySource": {"Bucket": artifacts, "Key": "k"}}
    assert _refused(WRITER, "s3", "CopyObject", copy) == "artifacts_bucket"
    assert _refused(READER, "events", "PutEvents", {"Entries": []}) == "event_bus"
    assert _refused(WRITER, "events", "PutEvents", {"Entries": []}) is None


def test_names_outside_the_registry_and_other_services_are_not_held() -> None:
    nothing = Uses()
    assert _refused(nothing, "dynamodb", "PutItem", {"TableName": "a-table-a-test-made"}) is None
    assert _refused(nothing, "stepfunctions", "SendTaskSuccess", {"taskToken": "t"}) is None


def test_every_step_declares_registry_resources_only() -> None:
    tables = {table.setting for table in resources.TABLES}
    buckets = {bucket.setting for bucket in resources.BUCKETS}
    for step in resources.STEP_FUNCTIONS:
        assert step.uses.settings <= tables | buckets, step.logical_id
        assert not set(step.uses.read) & set(step.uses.read_write), step.logical_id
        assert set(step.uses.decrypts) | set(step.uses.encrypts) <= {"webhook-secret", "upstream-key"}
