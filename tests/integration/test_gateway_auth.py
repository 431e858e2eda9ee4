"""Team tokens on the embedded runtime: `AUTH=required` makes the local gateway refuse what the API
Gateway authorizer refuses on AWS, each contract answering 401 in its own error format; a token made
through the admin routes opens every route until it is revoked; `x-team-id` is the gateway's to set.

One runtime serves the module (it takes seconds to start). The gateway's token cache runs on a clock the
tests move, so a revocation is seen without waiting out the 30 s TTL.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from functions.common.aws import dynamodb_resource
from functions.common.settings import get_settings
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.gateway import TOKEN_CACHE_SECONDS, Gateway, load_function_apps

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

ADMIN_TOKEN = "local-admin-secret-for-tests"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
ECHO_PATH = "/probe/team"

# A route of each path family, with a request that the app itself answers with one of its own errors
# (or 200) once the gateway lets it through: the 401 must have the shape of that app's own error body.
FAMILY_PROBES: dict[str, tuple[str, str, dict[str, Any] | None]] = {
    "trust /v1 (answer)": ("GET", "/v1/traces/tr-unknown", None),
    "trust /v1 (documents)": ("GET", "/v1/documents/doc-unknown", None),
    "multi-source /api/v1": ("POST", "/api/v1/ask", {}),
    "search tools": ("POST", "/api/tools/search", {}),
    "extract tools": ("POST", "/api/tools/extract", {}),
    "agent API": ("GET", "/api/agent/status/job-unknown", None),
    "agent API schedules": ("GET", "/api/schedules/sch-unknown", None),
    "knowledge base": ("POST", "/search/semantic", {}),
}
EXPECTED_401 = {
    "trust /v1 (answer)": {"error": {"code": "unauthorized", "message": str, "details": {}}},
    "trust /v1 (documents)": {"error": {"code": "unauthorized", "message": str, "details": {}}},
    "multi-source /api/v1": {"detail": "Unauthorized"},
    "search tools": {"error": "Unauthorized", "message": str},
    "extract tools": {"error": "UNAUTHORIZED", "message": str},
    "agent API": {"error": "UNAUTHORIZED", "message": str},
    "agent API schedules": {"error": "UNAUTHORIZED", "message": str},
    "knowledge base": {"detail": str, "status_code": 401, "error_code": "UNAUTHORIZED", "timestamp": str},
}


def _matches(body: Any, expected: Any) -> bool:
    if expected is str:
        return isinstance(body, str) and bool(body)
    if isinstance(expected, dict):
        return (
            isinstance(body, dict)
            and set(body) == set(expected)
            and all(_matches(body[key], value) for key, value in expected.items())
        )
    return bool(body == expected)


def _shape(body: Any) -> Any:
    """The structure of an error body: its keys and value types (`details` is free-form)."""
    if isinstance(body, dict):
        return {key: dict if key == "details" else _shape(value) for key, value in body.items()}
    return type(body)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _echo_app() -> FastAPI:
    """A downstream app that shows which team headers reached it."""
    app = FastAPI()

    @app.get(ECHO_PATH)
    def echo(request: Request) -> dict[str, list[str]]:
        return {"x-team-id": request.headers.getlist("x-team-id")}

    return app


@dataclass
class Runtime:
    client: TestClient
    clock: Clock
    apps: dict[str, FastAPI]


@pytest.fixture(scope="module")
def runtime() -> Iterator[Runtime]:
    env = {"AUTH": "required", "ADMIN_TOKEN": ADMIN_TOKEN}
    with EmbeddedAws(extra_environment=env):
        apps = {**load_function_apps(), "probe": _echo_app()}
        clock = Clock()
        gateway = Gateway(apps, clock=clock)  # AUTH read from the environment, now
        assert gateway.auth_required
        with TestClient(gateway) as client:
            yield Runtime(client, clock, apps)


def _create_team(client: TestClient, name: str, tier: str = "standard") -> dict[str, Any]:
    response = client.post("/admin/teams", json={"name": name, "tier": tier}, headers=ADMIN)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize("family", sorted(FAMILY_PROBES))
def test_without_a_token_each_family_answers_401_in_its_own_format(runtime: Runtime, family: str) -> None:
    method, path, body = FAMILY_PROBES[family]
    client = runtime.client

    refused = client.request(method, path, json=body, headers={"X-Request-Id": f"req-{family}"})
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == "Bearer"
    assert refused.headers["x-request-id"] == f"req-{family}"
    assert _matches(refused.json(), EXPECTED_401[family]), refused.json()

    # with a token the same request reaches the app, whose own error body has the same structure
    token = _create_team(client, f"Format check {family}")["token"]
    answered = client.request(method, path, json=body, headers=_bearer(token))
    assert answered.status_code in (400, 404), answered.text
    assert _shape(refused.json()).items() <= _shape(answered.json()).items()

    unknown = client.request(method, path, json=body, headers=_bearer(token + "x"))
    assert unknown.status_code == 401
    assert unknown.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert _matches(unknown.json(), EXPECTED_401[family])


def test_a_token_from_the_admin_route_opens_the_api_until_it_is_revoked(runtime: Runtime) -> None:
    client, clock = runtime.client, runtime.clock
    created = _create_team(client, "Living reviews", "premium")
    team_id, token_id, token = created["team_id"], created["token_id"], created["token"]

    for path in ("/api/v1/presets", "/api/schedules", "/api/v1/focus-modes"):
        assert client.get(path).status_code == 401, path
        assert client.get(path, headers=_bearer(token)).status_code == 200, path
    assert client.get("/v1/traces/tr-unknown", headers=_bearer(token)).status_code == 404  # the app's own

    issued = client.post(f"/admin/teams/{team_id}/tokens", headers=ADMIN)
    assert issued.status_code == 201
    second = issued.json()["token"]
    assert client.get("/api/schedules", headers=_bearer(second)).status_code == 200

    # the tokens are stored hashed: nothing in the teams table holds one
    items = dynamodb_resource().Table(get_settings().teams_table).scan()["Items"]
    assert items and not any(secret in json.dumps(items, default=str) for secret in (token, second))

    revoked = client.delete(f"/admin/teams/{team_id}/tokens/{token_id}", headers=ADMIN)
    assert revoked.status_code == 204
    # a decision is cached for at most TOKEN_CACHE_SECONDS (documented): then the token is refused
    assert client.get("/api/schedules", headers=_bearer(token)).status_code == 200
    clock.now += TOKEN_CACHE_SECONDS
    refused = client.get("/api/schedules", headers=_bearer(token))
    assert refused.status_code == 401
    assert refused.json() == {"error": "UNAUTHORIZED", "message": "The bearer token is unknown or revoked"}
    assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert client.get("/api/v1/presets", headers=_bearer(token)).status_code == 401
    assert client.get("/api/schedules", headers=_bearer(second)).status_code == 200  # the other one lives


def test_the_admin_routes_keep_their_own_credential(runtime: Runtime) -> None:
    client = runtime.client
    token = _create_team(client, "Not an admin")["token"]
    for headers in ({}, _bearer(token)):  # no credential, or a team token: the admin app's own 401
        response = client.post("/admin/teams", json={"name": "x", "tier": "basic"}, headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"


def test_health_and_docs_need_no_token(runtime: Runtime) -> None:
    client = runtime.client
    assert client.get("/v1/health").json()["status"] == "ok"
    assert client.get("/api/v1/health").json()["status"] == "healthy"
    assert "swagger-ui" in client.get("/docs").text
    assert "redoc" in client.get("/redoc").text.lower()
    spec = client.get("/openapi.json").json()
    assert {"/v1/query", "/api/agent/execute", "/admin/teams"} <= set(spec["paths"])
    assert client.get("/no/such/route").status_code == 404


def test_the_downstream_app_sees_the_gateways_team_never_the_clients(runtime: Runtime) -> None:
    client = runtime.client
    created = _create_team(client, "Echo")
    team_id, token = created["team_id"], created["token"]
    forged = {"x-team-id": "team-000000000000", "X-Team-Id": "team-111111111111"}

    assert client.get(ECHO_PATH, headers={**_bearer(token), **forged}).json() == {"x-team-id": [team_id]}
    refused = client.get(ECHO_PATH, headers=forged)  # a forged team is no credential
    assert refused.status_code == 401 and refused.json() == {"detail": "Unauthorized"}


def test_with_auth_unset_everything_is_as_before(runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUTH")
    open_gateway = Gateway(runtime.apps)
    assert not open_gateway.auth_required
    client = TestClient(open_gateway)
    assert client.get("/api/v1/presets").status_code == 200
    assert client.get("/api/schedules").json() == {"schedules": [], "count": 0}
    assert client.get("/v1/traces/tr-unknown").json()["error"]["code"] == "not_found"
    assert client.post("/api/tools/search", json={}).json()["error"] == "Invalid request"
    assert client.post("/search/semantic", json={}).json()["error_code"] == "INVALID_PARAMETER"
    # even without AUTH a client cannot name its team
    assert client.get(ECHO_PATH, headers={"x-team-id": "team-000000000000"}).json() == {"x-team-id": []}
    # the admin routes work as they do with AUTH (their own credential)
    assert (
        client.post("/admin/teams", json={"name": "Open", "tier": "basic"}, headers=ADMIN).status_code == 201
    )
