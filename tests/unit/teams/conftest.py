"""The team stores' fixture: every store test runs against DynamoDB (moto, the registry's key schema)
and against the in-memory twin."""

from __future__ import annotations

from collections.abc import Iterator

import boto3
import pytest
from moto import mock_aws

from functions.common import resources
from functions.teams.store import DynamoDbTeamStore, InMemoryTeamStore, TeamStore


def teams_table_spec() -> resources.TableSpec:
    (spec,) = [table for table in resources.TABLES if table.setting == "teams_table"]
    return spec


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest) -> Iterator[TeamStore]:
    if request.param == "memory":
        yield InMemoryTeamStore()
        return
    spec = teams_table_spec()
    assert spec.sort_key is not None
    with mock_aws():
        dynamodb = boto3.resource("dynamodb", region_name="us-east-1")
        table = dynamodb.create_table(
            TableName="teams",
            KeySchema=[
                {"AttributeName": spec.partition_key, "KeyType": "HASH"},
                {"AttributeName": spec.sort_key, "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": spec.partition_key, "AttributeType": "S"},
                {"AttributeName": spec.sort_key, "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield DynamoDbTeamStore(table)
