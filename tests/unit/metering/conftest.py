"""The usage store under test: DynamoDB (moto, with the embedded runtime's per-request lock, as on AWS
every single-item request is atomic) and its in-memory twin, with the same tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from moto import mock_aws

from functions.common.settings import reset_settings_cache
from functions.local_runtime import dynamodb_atomic
from functions.metering.dynamodb import DynamoDbUsageStore
from functions.metering.store import UsageStore
from tests.support.fakes.usage_store import InMemoryUsageStore
from tests.support.tables import create_table


@pytest.fixture(autouse=True)
def _metering_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about metering: on, whatever the suite's default."""
    monkeypatch.setenv("USAGE_METERING", "true")
    reset_settings_cache()


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest) -> Iterator[UsageStore]:
    if request.param == "memory":
        yield InMemoryUsageStore()
        return
    dynamodb_atomic.install()
    try:
        with mock_aws():
            yield DynamoDbUsageStore(create_table("usage_table", "research-usage"))
    finally:
        dynamodb_atomic.uninstall()
