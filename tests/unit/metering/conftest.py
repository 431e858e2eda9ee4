"""The usage store under test: DynamoDB (moto, with the embedded runtime's per-request lock, as on AWS
every single-item request is atomic) and its in-memory twin, with the same tests."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from functions.common.settings import reset_settings_cache
from functions.local_runtime import dynamodb_atomic
from functions.metering.dynamodb import DynamoDbUsageStore
from functions.metering.store import UsageStore
from tests.support.fakes.usage_store import InMemoryUsageStore


@pytest.fixture(autouse=True)
def _metering_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about metering: on, whatever the suite's default."""
    monkeypatch.setenv("USAGE_METERING", "true")
    reset_settings_cache()


def create_usage_table(name: str = "research-usage") -> object:
    dynamodb = boto3.resource("dynamodb", region_name="us-east-1")
    return dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest) -> Iterator[UsageStore]:
    if request.param == "memory":
        yield InMemoryUsageStore()
        return
    dynamodb_atomic.install()
    try:
        with mock_aws():
            yield DynamoDbUsageStore(create_usage_table())  # type: ignore[arg-type]
    finally:
        dynamodb_atomic.uninstall()
