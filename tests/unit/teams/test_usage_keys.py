"""Per-team API keys on API Gateway (moto): the adapter, and TeamService creating a team with its key."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from functions.common.errors import Conflict, UpstreamError
from functions.teams.models import ApiKeyRecord
from functions.teams.service import TeamService
from functions.teams.store import DynamoDbTeamStore
from functions.teams.tokens import token_hash
from functions.teams.usage_keys import ApiGatewayUsageKeys, NoUsageKeys, ssm_plan_ids
from tests.support.fakes.team_store import InMemoryTeamStore
from tests.unit.teams.deployed import KEY_PREFIX, PLANS_PARAMETER, REGION, DeployedAws, deployed_aws


@pytest.fixture
def aws() -> Iterator[DeployedAws]:
    with deployed_aws() as deployed:
        yield deployed


def _keys(aws: DeployedAws, client: Any = None) -> ApiGatewayUsageKeys:
    return ApiGatewayUsageKeys(
        ssm_plan_ids(PLANS_PARAMETER, aws.ssm), name_prefix=KEY_PREFIX, client=client or aws.apigateway
    )


def test_a_created_key_is_enabled_named_for_its_team_and_in_its_tiers_plan(aws: DeployedAws) -> None:
    issued = _keys(aws).create("team-0123456789ab", "Genomics lab", "standard")

    assert issued is not None
    key = aws.apigateway.get_api_key(apiKey=issued.api_key_id, includeValue=True)
    assert key["value"] == issued.value and key["enabled"] is True
    assert key["name"] == f"{KEY_PREFIX}-team-0123456789ab"
    assert "team-0123456789ab" in key["description"] and "standard" in key["description"]
    assert aws.plan_key_ids("standard") == {issued.api_key_id}
    assert aws.plan_key_ids("basic") == set() and aws.plan_key_ids("premium") == set()


def test_values_are_read_back_by_id_and_cached_for_the_container(aws: DeployedAws) -> None:
    issued = _keys(aws).create("team-0123456789ab", "Genomics lab", "basic")
    assert issued is not None

    reader = _keys(aws)  # another container: it has never seen the key
    assert reader.value(issued.api_key_id) == issued.value
    aws.apigateway.delete_api_key(apiKey=issued.api_key_id)
    assert reader.value(issued.api_key_id) == issued.value  # immutable per id: not asked again
    assert _keys(aws).value(issued.api_key_id) is None  # a fresh container learns it is gone
    assert _keys(aws).value("nosuchkey1") is None


def test_the_plan_ids_are_read_once_from_the_ssm_parameter(aws: DeployedAws) -> None:
    keys = _keys(aws)
    keys.create("team-000000000001", "One", "premium")
    aws.ssm.put_parameter(Name=PLANS_PARAMETER, Value=json.dumps({}), Type="String", Overwrite=True)
    second = keys.create("team-000000000002", "Two", "premium")
    assert second is not None and second.api_key_id in aws.plan_key_ids("premium")


def test_an_unknown_tier_or_a_missing_parameter_creates_no_key(aws: DeployedAws) -> None:
    with pytest.raises(UpstreamError, match="tier 'gold'"):
        _keys(aws).create("team-0123456789ab", "Gilded", "gold")
    missing = ApiGatewayUsageKeys(
        ssm_plan_ids("/nowhere/usage-plan-ids", aws.ssm), name_prefix=KEY_PREFIX, client=aws.apigateway
    )
    with pytest.raises(UpstreamError, match="/nowhere/usage-plan-ids"):
        missing.create("team-0123456789ab", "Lost", "basic")
    assert aws.api_key_ids() == set()


class _RefusesPlanKeys:
    """The moto client, except that adding a key to a usage plan fails as API Gateway may."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def create_usage_plan_key(self, **kwargs: Any) -> Any:
        raise ClientError(
            {"Error": {"Code": "TooManyRequestsException", "Message": "Rate exceeded"}}, "CreateUsagePlanKey"
        )


def test_a_key_that_cannot_join_its_plan_is_deleted_again(aws: DeployedAws) -> None:
    with pytest.raises(UpstreamError, match="usage plan"):
        _keys(aws, _RefusesPlanKeys(aws.apigateway)).create("team-0123456789ab", "Unlucky", "basic")
    assert aws.api_key_ids() == set()


def test_without_usage_plans_there_are_no_keys() -> None:
    keys = NoUsageKeys()
    assert keys.create("team-0123456789ab", "Local", "basic") is None
    assert keys.value("anything") is None
    keys.delete("anything")


# --- TeamService with API Gateway keys and the DynamoDB store -------------------------------------------


def test_onboarding_creates_the_key_and_stores_only_its_hash(aws: DeployedAws) -> None:
    store = DynamoDbTeamStore(aws.teams_table)
    service = TeamService(store, usage_keys=_keys(aws))

    created = service.onboard("Genomics lab", "premium")

    assert created.api_key is not None
    record = store.api_key_of_team(created.team.team_id)
    assert record is not None
    assert record.key_hash == token_hash(created.api_key)
    assert aws.plan_key_ids("premium") == {record.api_key_id}
    items = json.dumps(aws.teams_table.scan()["Items"], default=str)
    assert created.api_key not in items and created.token not in items
    # both styles resolve to the team, and a bearer caller is metered by the team's own key
    assert service.resolve_api_key(created.api_key) == created.team
    assert service.resolve(created.token) == created.team
    assert service.usage_key(created.team.team_id) == created.api_key
    # a second team gets its own key, in its own tier's plan
    other = service.onboard("Press office", "basic")
    assert other.api_key not in (None, created.api_key)
    assert service.resolve_api_key(other.api_key) == other.team
    assert len(aws.plan_key_ids("basic")) == 1


def test_create_team_keeps_its_three_values_and_still_creates_the_key(aws: DeployedAws) -> None:
    service = TeamService(DynamoDbTeamStore(aws.teams_table), usage_keys=_keys(aws))
    team, _, token = service.create_team("Legacy caller", "standard")
    assert service.resolve(token) == team
    assert service.usage_key(team.team_id) is not None
    assert len(aws.plan_key_ids("standard")) == 1


def test_when_the_team_cannot_be_stored_its_key_is_deleted(aws: DeployedAws) -> None:
    no_table = boto3.resource("dynamodb", region_name=REGION).Table("no-such-teams-table")
    service = TeamService(DynamoDbTeamStore(no_table), usage_keys=_keys(aws))
    with pytest.raises(ClientError):
        service.onboard("Nowhere", "basic")
    assert aws.api_key_ids() == set()


def test_unknown_or_foreign_api_keys_resolve_to_nothing(aws: DeployedAws) -> None:
    service = TeamService(DynamoDbTeamStore(aws.teams_table), usage_keys=_keys(aws))
    created = service.onboard("Genomics lab", "standard")
    # a real API Gateway key that is no team's (made by hand, outside the admin routes)
    foreign = aws.apigateway.create_api_key(name="by-hand", enabled=True)["value"]
    for value in (foreign, None, "", "x" * 600, (created.api_key or "") + "x"):
        assert service.resolve_api_key(value) is None


def test_a_team_has_at_most_one_key() -> None:
    store = InMemoryTeamStore()
    service = TeamService(store)
    created = service.onboard("Local team", "basic")
    assert created.api_key is None and service.usage_key(created.team.team_id) is None
    store.put_api_key(ApiKeyRecord("k1", created.team.team_id, "a" * 64, "2026-11-20T12:00:00Z"))
    with pytest.raises(Conflict):
        store.put_api_key(ApiKeyRecord("k2", created.team.team_id, "b" * 64, "2026-11-20T12:00:00Z"))
