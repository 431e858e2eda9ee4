"""The API Gateway REQUEST authorizer, with real tokens issued by the real TeamService."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from moto import mock_aws

from functions.common.settings import get_settings
from functions.teams import authorizer, wiring
from functions.teams.authorizer import authorize, stage_resource
from functions.teams.service import TeamService
from functions.teams.store import DynamoDbTeamStore
from functions.teams.tokens import new_token
from functions.teams.usage_keys import ApiGatewayUsageKeys, ssm_plan_ids
from tests.support.fakes.team_store import InMemoryTeamStore
from tests.support.tables import create_table
from tests.unit.teams.deployed import KEY_PREFIX, PLANS_PARAMETER, DeployedAws, deployed_aws

REGION, ACCOUNT, API = "eu-west-1", "123456789012", "a1b2c3d4e5"
STAGE_ARN = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{API}/prod"
METHOD_ARN = f"{STAGE_ARN}/POST/v1/query"


def _allows(answer: Mapping[str, Any], method_arn: str) -> bool:
    """IAM's evaluation of the answer's policy for one method ARN (`*` matches any run of characters)."""
    allowed = False
    for statement in answer["policyDocument"]["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        resources = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        if "execute-api:Invoke" not in actions:
            continue
        if any(fnmatch.fnmatchcase(method_arn, resource) for resource in resources):
            if statement["Effect"] == "Deny":
                return False
            allowed = allowed or statement["Effect"] == "Allow"
    return allowed


def _refused(headers: Mapping[str, Any] | None, service: TeamService) -> None:
    with pytest.raises(Exception) as raised:
        authorize(headers, METHOD_ARN, service)
    assert type(raised.value) is Exception and str(raised.value) == "Unauthorized"  # API Gateway's 401


@pytest.fixture
def service() -> TeamService:
    return TeamService(InMemoryTeamStore())


def test_a_live_token_allows_the_team_on_every_route_of_the_stage(service: TeamService) -> None:
    team, _, token = service.create_team("Oncology review", "premium")

    answer = authorize({"Authorization": f"Bearer {token}"}, METHOD_ARN, service)

    assert answer["principalId"] == team.team_id
    assert answer["context"] == {"team_id": team.team_id, "tier": "premium"}
    assert answer["policyDocument"]["Version"] == "2012-10-17"
    assert answer["policyDocument"]["Statement"] == [
        {"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": f"{STAGE_ARN}/*/*"}
    ]
    assert "usageIdentifierKey" not in answer  # a team without an API key (no API Gateway here)
    # the cached decision covers the team's other routes of this stage, and nothing else
    assert _allows(answer, METHOD_ARN)
    assert _allows(answer, f"{STAGE_ARN}/GET/api/agent/status/job-123")
    assert _allows(answer, f"{STAGE_ARN}/DELETE/api/schedules/sched-1")
    assert not _allows(answer, f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{API}/dev/POST/v1/query")
    assert not _allows(answer, f"arn:aws:execute-api:{REGION}:{ACCOUNT}:otherapi01/prod/POST/v1/query")
    assert json.loads(json.dumps(answer)) == answer  # what the Lambda returns is plain JSON
    assert all(isinstance(value, str) for value in answer["context"].values())


def test_header_names_and_the_scheme_are_case_insensitive(service: TeamService) -> None:
    team, _, token = service.create_team("Cardiology", "basic")
    for headers in (
        {"authorization": f"Bearer {token}"},
        {"AUTHORIZATION": f"bearer {token}"},
        {"Authorization": f"BEARER   {token}  "},
    ):
        assert authorize(headers, METHOD_ARN, service)["principalId"] == team.team_id


@pytest.mark.parametrize(
    "headers",
    [
        None,
        {},
        {"Accept": "application/json"},
        {"Authorization": ""},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer "},
    ],
    ids=["no-headers", "empty", "unrelated", "empty-authorization", "scheme-only", "scheme-space"],
)
def test_a_request_without_a_token_is_refused(headers: dict[str, str] | None, service: TeamService) -> None:
    service.create_team("Somebody", "basic")
    _refused(headers, service)


def test_a_malformed_authorization_header_is_refused(service: TeamService) -> None:
    _, _, token = service.create_team("Neurology", "standard")
    for value in (
        token,  # no scheme
        f"Basic {token}",
        f"Token {token}",
        f"Bearer {token} extra",
        f"Bearer {token[:-1]}",  # one character short
        f"Bearer {token}x",
    ):
        _refused({"Authorization": value}, service)
    # a malformed Authorization header is not rescued by a token in x-api-key
    _refused({"Authorization": f"Basic {token}", "x-api-key": token}, service)


def test_an_unknown_token_is_refused(service: TeamService) -> None:
    service.create_team("Neurology", "standard")
    _refused({"Authorization": f"Bearer {new_token()}"}, service)  # well-formed, never issued
    _refused({"Authorization": "Bearer rt_" + "A" * 600}, service)  # longer than any token of ours


def test_a_revoked_token_is_refused_and_the_teams_other_tokens_still_work(service: TeamService) -> None:
    team, first_id, first = service.create_team("Genomics", "standard")
    _, second = service.issue_token(team.team_id)
    assert authorize({"Authorization": f"Bearer {first}"}, METHOD_ARN, service)["principalId"] == team.team_id

    service.revoke_token(team.team_id, first_id)

    _refused({"Authorization": f"Bearer {first}"}, service)
    assert (
        authorize({"Authorization": f"Bearer {second}"}, METHOD_ARN, service)["principalId"] == team.team_id
    )


def test_each_token_resolves_to_its_own_team(service: TeamService) -> None:
    alpha, _, alpha_token = service.create_team("Alpha", "basic")
    beta, _, beta_token = service.create_team("Beta", "premium")
    assert authorize({"Authorization": f"Bearer {alpha_token}"}, METHOD_ARN, service)["context"] == {
        "team_id": alpha.team_id,
        "tier": "basic",
    }
    assert authorize({"Authorization": f"Bearer {beta_token}"}, METHOD_ARN, service)["context"] == {
        "team_id": beta.team_id,
        "tier": "premium",
    }


def test_without_api_keys_an_api_key_alone_is_refused(service: TeamService) -> None:
    team, _, token = service.create_team("Usage-planned", "standard")
    api_key = "kX9fLq2Vb7Yt4Rw1Zp8Ns3Md6Hc5Je0Ga"  # an API Gateway key that is no team's

    # a bearer token decides the team; an x-api-key next to it is not metered in the team's place
    both = authorize({"Authorization": f"Bearer {token}", "X-API-Key": api_key}, METHOD_ARN, service)
    assert both["principalId"] == team.team_id and "usageIdentifierKey" not in both

    # one of our tokens sent as x-api-key is resolved as a token; it is not an API Gateway key
    as_key = authorize({"x-api-key": token}, METHOD_ARN, service)
    assert as_key["context"]["team_id"] == team.team_id and "usageIdentifierKey" not in as_key

    _refused({"x-api-key": api_key}, service)
    _refused({"x-api-key": ""}, service)


# --- with API Gateway API keys (moto): both styles map to the team and to its usage plan -------------------


@pytest.fixture
def keyed() -> Iterator[tuple[TeamService, DeployedAws]]:
    with deployed_aws() as aws:
        keys = ApiGatewayUsageKeys(
            ssm_plan_ids(PLANS_PARAMETER, aws.ssm), name_prefix=KEY_PREFIX, client=aws.apigateway
        )
        yield TeamService(DynamoDbTeamStore(aws.teams_table), usage_keys=keys), aws


def test_both_styles_map_to_the_team_and_are_metered_by_its_key(
    keyed: tuple[TeamService, DeployedAws],
) -> None:
    service, aws = keyed
    genomics = service.onboard("Genomics", "standard")
    press = service.onboard("Press office", "basic")
    assert genomics.api_key and press.api_key

    by_token = authorize({"Authorization": f"Bearer {genomics.token}"}, METHOD_ARN, service)
    by_key = authorize({"x-api-key": genomics.api_key}, METHOD_ARN, service)
    token_as_key = authorize({"x-api-key": genomics.token}, METHOD_ARN, service)
    for answer in (by_token, by_key, token_as_key):
        assert answer["principalId"] == genomics.team.team_id
        assert answer["context"] == {"team_id": genomics.team.team_id, "tier": "standard"}
        assert answer["usageIdentifierKey"] == genomics.api_key  # the key in the standard plan
        assert _allows(answer, f"{STAGE_ARN}/GET/api/usage")
    (key_id,) = aws.plan_key_ids("standard")
    assert aws.apigateway.get_api_key(apiKey=key_id, includeValue=True)["value"] == genomics.api_key

    # another team's key next to a bearer token meters the token's team, never the key's
    mixed = authorize(
        {"Authorization": f"Bearer {genomics.token}", "x-api-key": press.api_key}, METHOD_ARN, service
    )
    assert mixed["principalId"] == genomics.team.team_id
    assert mixed["usageIdentifierKey"] == genomics.api_key
    assert authorize({"X-Api-Key": press.api_key}, METHOD_ARN, service)["context"]["tier"] == "basic"


def test_keys_that_are_no_teams_and_revoked_tokens_are_refused(
    keyed: tuple[TeamService, DeployedAws],
) -> None:
    service, aws = keyed
    created = service.onboard("Genomics", "premium")
    assert created.api_key
    foreign = aws.apigateway.create_api_key(name="made-by-hand", enabled=True)["value"]
    for headers in (
        {"x-api-key": foreign},  # a real API Gateway key, but no team's
        {"x-api-key": created.api_key[:-1]},
        {"Authorization": f"Basic {created.api_key}"},  # not a bearer token
        {"Authorization": f"Bearer {created.api_key}"},  # an API key is not a token
        {"Authorization": f"Basic {created.token}", "x-api-key": created.api_key},
    ):
        _refused(headers, service)

    service.revoke_token(created.team.team_id, created.token_id)
    _refused({"Authorization": f"Bearer {created.token}"}, service)
    _refused({"x-api-key": created.token}, service)
    # the team's API key is another credential: revoking a token does not touch it
    assert (
        authorize({"x-api-key": created.api_key}, METHOD_ARN, service)["principalId"] == created.team.team_id
    )


def test_the_store_never_holds_a_token() -> None:
    store = InMemoryTeamStore()
    service = TeamService(store)
    team, _, token = service.create_team("Hashing", "basic")
    _, second = service.issue_token(team.team_id)
    stored = repr(store.teams) + repr(store.tokens)
    for issued in (token, second):
        assert issued not in stored
        assert hashlib.sha256(issued.encode()).hexdigest() in store.tokens


@pytest.mark.parametrize(
    "arn",
    ["", "not-an-arn", "arn:aws:s3:::bucket/key", f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{API}"],
)
def test_a_method_arn_that_is_not_one_is_an_error_not_a_decision(arn: str, service: TeamService) -> None:
    _, _, token = service.create_team("Config", "basic")
    with pytest.raises(ValueError, match="method ARN"):
        authorize({"Authorization": f"Bearer {token}"}, arn, service)


def test_the_stage_resource_keeps_the_partition_region_account_api_and_stage() -> None:
    assert stage_resource(f"{STAGE_ARN}/GET/") == f"{STAGE_ARN}/*/*"
    assert (
        stage_resource("arn:aws-cn:execute-api:cn-north-1:123456789012:abc123/v1/POST/a/b/c")
        == "arn:aws-cn:execute-api:cn-north-1:123456789012:abc123/v1/*/*"
    )


# --- the Lambda handler, reading DynamoDB through the composition root ---------------------------------


@pytest.fixture
def dynamodb_teams() -> Iterator[Any]:
    with mock_aws():
        yield create_table("teams_table")


def _event(headers: dict[str, str] | None, method_arn: str = METHOD_ARN) -> dict[str, Any]:
    """A REQUEST authorizer's event as API Gateway sends it for a proxy-integrated method."""
    return {
        "type": "REQUEST",
        "methodArn": method_arn,
        "resource": "/v1/query",
        "path": "/v1/query",
        "httpMethod": "POST",
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in (headers or {}).items()},
        "queryStringParameters": None,
        "pathParameters": None,
        "stageVariables": None,
        "requestContext": {"stage": "prod", "httpMethod": "POST", "resourcePath": "/v1/query"},
    }


def test_the_handler_resolves_tokens_through_the_wiring_on_dynamodb(dynamodb_teams: Any) -> None:
    service = wiring.team_service()
    assert isinstance(service.store, DynamoDbTeamStore)
    team, token_id, token = service.create_team("Handled", "premium")

    answer = authorizer.handler(_event({"Authorization": f"Bearer {token}", "Host": "api.example"}), None)
    assert answer["principalId"] == team.team_id
    assert answer["context"] == {"team_id": team.team_id, "tier": "premium"}
    assert _allows(answer, f"{STAGE_ARN}/GET/v1/traces/trace-1")

    # a fresh container (new settings, new service) reads the same team from the table
    get_settings.cache_clear()
    assert (
        authorizer.handler(_event({"authorization": f"Bearer {token}"}), None)["principalId"] == team.team_id
    )

    items = dynamodb_teams.scan()["Items"]
    assert items and all(token not in json.dumps(item, default=str) for item in items)

    wiring.team_service().revoke_token(team.team_id, token_id)
    for headers in ({"Authorization": f"Bearer {token}"}, None, {"Authorization": f"Bearer {new_token()}"}):
        with pytest.raises(Exception, match=r"^Unauthorized$"):
            authorizer.handler(_event(headers), None)


def test_the_handler_meters_both_styles_by_the_teams_key_through_the_wiring(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As deployed: the composition root reads USAGE_PLANS_PARAMETER and API_KEY_NAME_PREFIX (set by CDK on
    the admin and authorizer functions), creates keys on API Gateway and resolves them from DynamoDB."""
    monkeypatch.setenv("USAGE_PLANS_PARAMETER", PLANS_PARAMETER)
    monkeypatch.setenv("API_KEY_NAME_PREFIX", KEY_PREFIX)
    get_settings.cache_clear()
    with deployed_aws(teams_table=get_settings().teams_table) as aws:
        created = wiring.team_service().onboard("Handled", "premium")
        assert created.api_key is not None
        (key_id,) = aws.plan_key_ids("premium")
        assert aws.apigateway.get_api_key(apiKey=key_id)["name"] == f"{KEY_PREFIX}-{created.team.team_id}"

        get_settings.cache_clear()  # a fresh authorizer container
        by_token = authorizer.handler(_event({"Authorization": f"Bearer {created.token}"}), None)
        by_key = authorizer.handler(_event({"x-api-key": created.api_key}), None)
        for answer in (by_token, by_key):
            assert answer["principalId"] == created.team.team_id
            assert answer["usageIdentifierKey"] == created.api_key
        with pytest.raises(Exception, match=r"^Unauthorized$"):
            authorizer.handler(_event({"x-api-key": "kX9fLq2Vb7Yt4Rw1Zp8Ns3Md6Hc5Je0Ga"}), None)
