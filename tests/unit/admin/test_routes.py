"""The admin routes through the admin app: 201 bodies, the admin credential, §8.4 error bodies."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from functions.admin.app import app
from functions.common.settings import reset_settings_cache
from functions.teams.routes import get_team_service
from functions.teams.service import TeamService
from functions.teams.tokens import token_hash
from tests.support.fakes.team_store import InMemoryTeamStore

ADMIN = "admin-secret-for-tests"
AUTH = {"Authorization": f"Bearer {ADMIN}"}


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[TeamService]:
    monkeypatch.setenv("ADMIN_TOKEN", ADMIN)
    monkeypatch.delenv("ADMIN_AUTH", raising=False)
    reset_settings_cache()
    team_service = TeamService(InMemoryTeamStore())
    app.dependency_overrides[get_team_service] = lambda: team_service
    yield team_service
    app.dependency_overrides.clear()


@pytest.fixture
def client(service: TeamService) -> TestClient:
    return TestClient(app)


def _is_error(body: object, code: str) -> bool:
    return (
        isinstance(body, dict)
        and set(body) == {"error"}
        and set(body["error"]) == {"code", "message", "details"}
        and body["error"]["code"] == code
        and isinstance(body["error"]["message"], str)
        and isinstance(body["error"]["details"], dict)
    )


def test_create_team_answers_201_with_the_team_and_its_first_token(
    client: TestClient, service: TeamService
) -> None:
    response = client.post(
        "/admin/teams", json={"name": "Platform research", "tier": "standard"}, headers=AUTH
    )
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"team_id", "token_id", "token"}
    assert re.fullmatch(r"team-[0-9a-f]{12}", body["team_id"])
    assert re.fullmatch(r"tok-[0-9a-f]{12}", body["token_id"])
    team = service.resolve(body["token"])
    assert team is not None and (team.team_id, team.name, team.tier) == (
        body["team_id"],
        "Platform research",
        "standard",
    )


def test_issue_and_revoke_a_token(client: TestClient, service: TeamService) -> None:
    team_id = client.post("/admin/teams", json={"name": "A", "tier": "basic"}, headers=AUTH).json()["team_id"]
    issued = client.post(f"/admin/teams/{team_id}/tokens", headers=AUTH)
    assert issued.status_code == 201
    assert set(issued.json()) == {"token_id", "token"}
    token = issued.json()["token"]
    assert service.resolve(token) is not None
    revoked = client.delete(f"/admin/teams/{team_id}/tokens/{issued.json()['token_id']}", headers=AUTH)
    assert revoked.status_code == 204 and revoked.content == b""
    assert service.resolve(token) is None
    again = client.delete(f"/admin/teams/{team_id}/tokens/{issued.json()['token_id']}", headers=AUTH)
    assert again.status_code == 204


def test_the_token_is_kept_only_as_its_hash(client: TestClient, service: TeamService) -> None:
    body = client.post("/admin/teams", json={"name": "A", "tier": "basic"}, headers=AUTH).json()
    store = service.store
    assert isinstance(store, InMemoryTeamStore)
    (record,) = store.tokens.values()
    assert record.token_hash == token_hash(body["token"]) and body["token"] not in repr(store.tokens)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-token"},
        {"Authorization": f"Basic {ADMIN}"},
        {"Authorization": ADMIN},
        {"Authorization": f"Bearer {ADMIN}x"},
        {"x-api-key": ADMIN},
    ],
)
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/admin/teams"),
        ("POST", "/admin/teams/team-0123456789ab/tokens"),
        ("DELETE", "/admin/teams/team-0123456789ab/tokens/tok-0123456789ab"),
    ],
)
def test_a_missing_or_wrong_admin_token_is_401(
    client: TestClient, service: TeamService, headers: dict[str, str], method: str, path: str
) -> None:
    response = client.request(method, path, json={"name": "A", "tier": "basic"}, headers=headers)
    assert response.status_code == 401
    assert _is_error(response.json(), "unauthorized")
    assert response.headers["www-authenticate"] == "Bearer"
    assert isinstance(service.store, InMemoryTeamStore) and not service.store.teams


def test_the_admin_token_is_checked_before_the_body(client: TestClient) -> None:
    response = client.post("/admin/teams", json={"tier": "gold"})
    assert response.status_code == 401 and _is_error(response.json(), "unauthorized")
    malformed = client.post(
        "/admin/teams", content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert malformed.status_code == 401 and _is_error(malformed.json(), "unauthorized")


def test_bearer_scheme_is_case_insensitive(client: TestClient) -> None:
    response = client.post(
        "/admin/teams", json={"name": "A", "tier": "basic"}, headers={"Authorization": f"bearer {ADMIN}"}
    )
    assert response.status_code == 201


@pytest.mark.parametrize("value", [None, ""])
def test_without_an_admin_token_configured_the_routes_are_disabled(
    monkeypatch: pytest.MonkeyPatch, service: TeamService, value: str | None
) -> None:
    if value is None:
        monkeypatch.delenv("ADMIN_TOKEN")
    else:
        monkeypatch.setenv("ADMIN_TOKEN", value)
    reset_settings_cache()
    client = TestClient(app)
    for headers in ({}, AUTH, {"Authorization": "Bearer "}):
        response = client.post("/admin/teams", json={"name": "A", "tier": "basic"}, headers=headers)
        assert response.status_code == 503
        assert _is_error(response.json(), "admin_disabled")
    assert client.post("/admin/teams/team-0123456789ab/tokens").status_code == 503


def test_iam_mode_trusts_api_gateway(monkeypatch: pytest.MonkeyPatch, service: TeamService) -> None:
    """On AWS, API Gateway IAM-authorises the admin routes before the function runs."""
    monkeypatch.delenv("ADMIN_TOKEN")
    monkeypatch.setenv("ADMIN_AUTH", "IAM")
    reset_settings_cache()
    response = TestClient(app).post("/admin/teams", json={"name": "A", "tier": "premium"})
    assert response.status_code == 201


@pytest.mark.parametrize(
    ("method", "path", "message"),
    [
        ("POST", "/admin/teams/team-000000000000/tokens", "team not found"),
        ("DELETE", "/admin/teams/team-000000000000/tokens/tok-000000000000", "token not found"),
    ],
)
def test_unknown_teams_and_tokens_are_404(client: TestClient, method: str, path: str, message: str) -> None:
    response = client.request(method, path, headers=AUTH)
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": message, "details": {}}}


def test_another_teams_token_is_404_and_stays_valid(client: TestClient, service: TeamService) -> None:
    first = client.post("/admin/teams", json={"name": "A", "tier": "basic"}, headers=AUTH).json()
    second = client.post("/admin/teams", json={"name": "B", "tier": "basic"}, headers=AUTH).json()
    response = client.delete(f"/admin/teams/{second['team_id']}/tokens/{first['token_id']}", headers=AUTH)
    assert response.status_code == 404 and _is_error(response.json(), "not_found")
    assert service.resolve(first["token"]) is not None


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "A", "tier": "gold"}, "tier"),
        ({"name": "", "tier": "basic"}, "name"),
        ({"name": "   ", "tier": "basic"}, "name"),
        ({"name": "x" * 101, "tier": "basic"}, "name"),
        ({"tier": "basic"}, "name"),
        ({"name": "A"}, "tier"),
        ({"name": 3, "tier": "basic"}, "name"),
    ],
)
def test_a_bad_tier_or_name_is_400_invalid_request(
    client: TestClient, service: TeamService, body: dict[str, object], field: str
) -> None:
    response = client.post("/admin/teams", json=body, headers=AUTH)
    assert response.status_code == 400
    assert _is_error(response.json(), "invalid_request")
    assert response.json()["error"]["details"]["field"] == field
    assert isinstance(service.store, InMemoryTeamStore) and not service.store.teams


def test_a_body_that_is_not_json_is_400(client: TestClient) -> None:
    response = client.post(
        "/admin/teams", content=b"{not json", headers={**AUTH, "Content-Type": "application/json"}
    )
    assert response.status_code == 400 and _is_error(response.json(), "invalid_request")


def test_unknown_routes_and_methods_answer_in_the_same_format(client: TestClient) -> None:
    assert _is_error(client.get("/admin/teams", headers=AUTH).json(), "method_not_allowed")
    assert _is_error(client.get("/admin/nothing", headers=AUTH).json(), "not_found")


def test_the_admin_app_documents_its_routes_and_the_bearer_scheme() -> None:
    spec = app.openapi()
    assert set(spec["paths"]) == {
        "/admin/teams",
        "/admin/teams/{team_id}",
        "/admin/teams/{team_id}/tokens",
        "/admin/teams/{team_id}/tokens/{token_id}",
        "/admin/teams/{team_id}/webhook-secret",
        "/admin/teams/{team_id}/upstream-keys",
        "/admin/teams/{team_id}/upstream-keys/{provider}",
    }
    assert spec["components"]["securitySchemes"]["AdminToken"]["scheme"] == "bearer"


def test_on_aws_create_team_also_answers_the_teams_api_key_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """With usage plans deployed (API Gateway on moto), the 201 body has `api_key`: the team's key, in its
    tier's plan, stored only as its hash; without them (above) the body has no `api_key` at all."""
    from functions.teams.store import DynamoDbTeamStore
    from functions.teams.usage_keys import ApiGatewayUsageKeys, ssm_plan_ids
    from tests.unit.teams.deployed import KEY_PREFIX, PLANS_PARAMETER, deployed_aws

    monkeypatch.setenv("ADMIN_AUTH", "iam")
    reset_settings_cache()
    with deployed_aws() as aws:
        keys = ApiGatewayUsageKeys(
            ssm_plan_ids(PLANS_PARAMETER, aws.ssm), name_prefix=KEY_PREFIX, client=aws.apigateway
        )
        team_service = TeamService(DynamoDbTeamStore(aws.teams_table), usage_keys=keys)
        app.dependency_overrides[get_team_service] = lambda: team_service
        try:
            response = TestClient(app).post("/admin/teams", json={"name": "Genomics lab", "tier": "premium"})
        finally:
            app.dependency_overrides.clear()
        assert response.status_code == 201
        body = response.json()
        assert set(body) == {"team_id", "token_id", "token", "api_key"}
        assert team_service.resolve_api_key(body["api_key"]).team_id == body["team_id"]  # type: ignore[union-attr]
        (key_id,) = aws.plan_key_ids("premium")
        assert aws.apigateway.get_api_key(apiKey=key_id, includeValue=True)["value"] == body["api_key"]
        stored = repr(aws.teams_table.scan()["Items"])
        assert body["api_key"] not in stored and token_hash(body["api_key"]) in stored
