"""DynamoDB tables for tests, built from the registry (functions/common/resources.TABLES) as the local
runtime and the CDK app build them: the same keys, on demand, with the registry's TTL attribute."""

from __future__ import annotations

from typing import Any

import boto3

from functions.common import resources
from functions.common.settings import get_settings

REGION = "us-east-1"


def table_spec(setting: str) -> resources.TableSpec:
    (spec,) = [table for table in resources.TABLES if table.setting == setting]
    return spec


def create_table(setting: str, name: str | None = None) -> Any:
    """The registry's table `setting` ("jobs_table", ...) in the mocked account (call under `mock_aws`),
    named `name` or as the settings name it; a boto3 `Table`."""
    spec = table_spec(setting)
    table_name = name or str(getattr(get_settings(), setting))
    dynamodb = boto3.resource("dynamodb", region_name=REGION)
    table = dynamodb.create_table(**spec.create_request(table_name))  # type: ignore[arg-type]
    if spec.ttl_attribute:
        dynamodb.meta.client.update_time_to_live(
            TableName=table_name,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": spec.ttl_attribute},
        )
    return table
