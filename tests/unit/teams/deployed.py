"""A deployed-like AWS on moto for the teams tests: the teams table, a REST API with a `prod` stage, one
usage plan per tier, and the SSM parameter CDK writes with their ids (infra/components/api.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import boto3
from moto import mock_aws

from functions.common import resources
from functions.teams.models import TIERS
from tests.support.tables import create_table

REGION = "us-east-1"
PLANS_PARAMETER = "/ResearchTest/usage-plan-ids"
KEY_PREFIX = "ResearchTest"


@dataclass
class DeployedAws:
    apigateway: Any
    ssm: Any
    teams_table: Any
    rest_api_id: str
    plan_ids: dict[str, str]  # tier -> usage plan id

    def plan_key_ids(self, tier: str) -> set[str]:
        keys = self.apigateway.get_usage_plan_keys(usagePlanId=self.plan_ids[tier])["items"]
        return {str(key["id"]) for key in keys}

    def api_key_ids(self) -> set[str]:
        return {str(key["id"]) for key in self.apigateway.get_api_keys()["items"]}


def teams_table_spec() -> resources.TableSpec:
    (spec,) = [table for table in resources.TABLES if table.setting == "teams_table"]
    return spec


@contextmanager
def deployed_aws(teams_table: str = "research-teams") -> Iterator[DeployedAws]:
    with mock_aws():
        apigateway = boto3.client("apigateway", region_name=REGION)
        api_id = apigateway.create_rest_api(name="research-api")["id"]
        root = apigateway.get_resources(restApiId=api_id)["items"][0]["id"]
        apigateway.put_method(restApiId=api_id, resourceId=root, httpMethod="GET", authorizationType="NONE")
        apigateway.put_integration(restApiId=api_id, resourceId=root, httpMethod="GET", type="MOCK")
        apigateway.create_deployment(restApiId=api_id, stageName="prod")
        plan_ids = {
            tier: str(
                apigateway.create_usage_plan(
                    name=f"{KEY_PREFIX}-{tier}", apiStages=[{"apiId": api_id, "stage": "prod"}]
                )["id"]
            )
            for tier in TIERS
        }
        ssm = boto3.client("ssm", region_name=REGION)
        ssm.put_parameter(Name=PLANS_PARAMETER, Value=json.dumps(plan_ids), Type="String")
        yield DeployedAws(apigateway, ssm, create_table("teams_table", teams_table), api_id, plan_ids)
