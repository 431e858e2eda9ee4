"""The local gateway's team tokens (`AUTH=required`): who may pass, what a refusal looks like per contract,
and the `x-team-id` header the apps downstream see (never the client's own)."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI, Request
from fastapi.testclient import TestClient

from functions.local_runtime.gateway import Gateway, TokenCache, auth_required_from_env
from functions.teams import wiring
from functions.teams.service import TeamService
from functions.teams.tokens import new_token
from tests.support.fakes.team_store import InMemoryTeamStore

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

# one route per path family, each echoing the team headers it received
FAMILY_PATHS = {
    "/v1/query": "post",
    "/v1/documents/doc-1": "get",
    "/api/v1/ask": "post",
    "/api/tools/search": "post",
    "/api/tools/extract": "post",
    "/api/agent/status/job-1": "get",
    "/api/schedules": "get",
    "/api/webhooks/deliveries": "get",
    "/search/semantic": "post",
    "/entity/algorithm/4.1": "get",
    "/elsewhere/thing": "get",
}
EXEMPT_PATHS = {"/v1/health": "get", "/api/v1/health": "get", "/admin/teams": "post"}


def _echo_app() -> FastAPI:
    app = FastAPI()

    async def echo(request: Request) -> dict[str, Any]:
        return {"team": request.headers.getlist("x-team-id"), "path": request.url.path}

    for path, method in {**FAMILY_PATHS, **EXEMPT_PATHS}.items():
        app.add_api_route(path, echo, methods=[method.upper()])
    return app


class Teams:
    """The real TeamService on an in-memory store, as the gateway's lookup, counting lookups."""

    def __init__(self) -> None:
        self.service = TeamService(InMemoryTeamStore())
        self.lookups = 0
        self.in_event_loop: list[bool] = []

    def lookup(self, token: str) -> str | None:
        self.lookups += 1
        try:
            asyncio.get_running_loop()
            self.in_event_loop.append(True)
        except RuntimeError:
            self.in_event_loop.append(False)
        team = self.service.resolve(token)
        return team.team_id if team is not None else None


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def teams() -> Teams:
    return Teams()


def _client(teams: Teams, clock: Callable[[], float] | None = None, **options: Any) -> TestClient:
    gateway = Gateway(
        {"echo": _echo_app()}, auth_required=True, lookup=teams.lookup, clock=clock or Clock(), **options
    )
    return TestClient(gateway)


def _call(client: TestClient, path: str, headers: dict[str, str] | None = None) -> Any:
    method = {**FAMILY_PATHS, **EXEMPT_PATHS}.get(path, "get")
    return client.request(method.upper(), path, headers=headers)


# --- AUTH unset: today's gateway, minus a forgeable x-team-id ----------------------------------------------


def test_without_auth_every_route_is_open_and_a_client_team_header_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AUTH", raising=False)
    gateway = Gateway({"echo": _echo_app()})
    assert not gateway.auth_required
    client = TestClient(gateway)
    for path in FAMILY_PATHS:
        response = _call(client, path, {"X-Team-Id": "team-forged00000", "x-team-id": "team-forged11111"})
        assert response.status_code == 200, path
        assert response.json() == {"team": [], "path": path}


def test_auth_is_read_from_the_environment_when_the_gateway_is_built(
    monkeypatch: pytest.MonkeyPatch, teams: Teams
) -> None:
    monkeypatch.setenv("AUTH", "required")
    gateway = Gateway({"echo": _echo_app()}, lookup=teams.lookup)
    monkeypatch.delenv("AUTH")  # later changes do not matter: read once
    assert gateway.auth_required
    assert TestClient(gateway).get("/api/schedules").status_code == 401

    monkeypatch.setenv("AUTH", "Required")
    assert auth_required_from_env()
    monkeypatch.setenv("AUTH", "")
    assert not auth_required_from_env()
    monkeypatch.setenv("AUTH", "yes")
    with pytest.raises(ValueError, match="AUTH must be 'required' or unset"):
        Gateway({"echo": _echo_app()})


# --- refusals: 401 in each contract's format ---------------------------------------------------------------

MISSING = "A bearer token is required: Authorization: Bearer <token>"
INVALID = "The bearer token is unknown or revoked"


def _expected_body(path: str, message: str) -> dict[str, Any]:
    if path.startswith("/v1/"):
        return {"error": {"code": "unauthorized", "message": message, "details": {}}}
    if path.startswith("/api/v1/") or path.startswith("/elsewhere/"):
        return {"detail": "Unauthorized"}
    if path == "/api/tools/search":
        return {"error": "Unauthorized", "message": message}
    if path.startswith(("/api/tools/extract", "/api/agent/", "/api/schedules", "/api/webhooks/")):
        return {"error": "UNAUTHORIZED", "message": message}
    raise AssertionError(path)


@pytest.mark.parametrize("path", sorted(FAMILY_PATHS))
def test_a_request_without_a_token_gets_its_contracts_401(path: str, teams: Teams) -> None:
    client = _client(teams)
    for headers in (None, {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": "Bearer"}):
        response = _call(client, path, headers)
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert UUID.match(response.headers["x-request-id"])  # a new request id, as the apps give one
        body = response.json()
        if path.startswith(("/search/", "/entity/")):  # the knowledge base's body
            assert set(body) == {"detail", "status_code", "error_code", "timestamp"}
            assert body["detail"] == MISSING and body["status_code"] == 401
            assert body["error_code"] == "UNAUTHORIZED"
            assert re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", body["timestamp"])
            assert response.headers["cache-control"] == "no-store"
        else:
            assert body == _expected_body(path, MISSING)
    assert teams.lookups == 0  # nothing to look up


@pytest.mark.parametrize("path", ["/v1/query", "/api/v1/ask", "/api/agent/status/job-1", "/search/semantic"])
def test_an_unknown_token_gets_401_invalid_token(path: str, teams: Teams) -> None:
    client = _client(teams)
    response = _call(client, path, {"Authorization": f"Bearer {new_token()}", "X-Request-Id": "req-42"})
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert response.headers["x-request-id"] == "req-42"  # echoed, as every app does
    body = response.json()
    if path.startswith("/search/"):
        assert body["detail"] == INVALID
    else:
        assert body == _expected_body(path, INVALID)


def test_exempt_routes_need_no_token(teams: Teams) -> None:
    client = _client(teams)
    for path in EXEMPT_PATHS:
        response = _call(client, path, {"x-team-id": "team-forged00000"})
        assert response.status_code == 200, path
        assert response.json()["team"] == []  # still never the client's
    assert client.get("/openapi.json").status_code == 200
    assert client.get("/docs").status_code == 200
    assert client.get("/redoc").status_code == 200
    assert client.get("/no/such/path").status_code == 404  # nothing owns it: no authorizer runs
    assert teams.lookups == 0


# --- a valid token: the team goes downstream ---------------------------------------------------------------


def test_a_valid_token_passes_with_the_team_and_never_the_clients_team(teams: Teams) -> None:
    team, _, token = teams.service.create_team("Oncology", "premium")
    client = _client(teams)
    for path in FAMILY_PATHS:
        response = _call(
            client,
            path,
            {"authorization": f"bearer {token}", "X-Team-Id": "team-forged00000", "x-team-id": "team-other"},
        )
        assert response.status_code == 200, path
        assert response.json() == {"team": [team.team_id], "path": path}
    assert teams.in_event_loop and not any(teams.in_event_loop)  # looked up off the event loop


def test_the_default_lookup_goes_through_the_teams_wiring(monkeypatch: pytest.MonkeyPatch) -> None:
    service = TeamService(InMemoryTeamStore())
    monkeypatch.setattr(wiring, "team_service", lambda: service)
    team, _, token = service.create_team("Wired", "basic")
    client = TestClient(Gateway({"echo": _echo_app()}, auth_required=True))
    assert client.get("/api/schedules", headers={"Authorization": f"Bearer {token}"}).json()["team"] == [
        team.team_id
    ]
    assert client.get("/api/schedules", headers={"Authorization": f"Bearer {new_token()}"}).status_code == 401


def test_a_resolved_token_is_cached_for_the_ttl_so_revocation_takes_at_most_that_long(teams: Teams) -> None:
    team, token_id, token = teams.service.create_team("Cached", "standard")
    clock = Clock()
    client = _client(teams, clock, token_cache_seconds=30)
    bearer = {"Authorization": f"Bearer {token}"}

    assert client.get("/api/schedules", headers=bearer).status_code == 200
    assert client.get("/api/agent/status/job-1", headers=bearer).status_code == 200
    assert teams.lookups == 1  # one read for both requests

    teams.service.revoke_token(team.team_id, token_id)
    clock.now += 29
    assert client.get("/api/schedules", headers=bearer).status_code == 200  # within the TTL
    clock.now += 1
    response = client.get("/api/schedules", headers=bearer)
    assert response.status_code == 401 and teams.lookups == 2
    assert response.headers["www-authenticate"] == 'Bearer error="invalid_token"'


def test_unknown_tokens_are_not_cached_and_a_zero_ttl_caches_nothing(teams: Teams) -> None:
    client = _client(teams, token_cache_seconds=0)
    unknown = {"Authorization": f"Bearer {new_token()}"}
    assert client.get("/api/schedules", headers=unknown).status_code == 401
    assert client.get("/api/schedules", headers=unknown).status_code == 401
    _, _, token = teams.service.create_team("Uncached", "basic")
    for _ in range(3):
        assert client.get("/api/schedules", headers={"Authorization": f"Bearer {token}"}).status_code == 200
    assert teams.lookups == 5


def test_concurrent_requests_each_get_their_own_team(teams: Teams) -> None:
    created = [teams.service.create_team(f"Team {n}", "basic") for n in range(6)]
    tokens = {team.team_id: token for team, _, token in created}
    client = _client(teams)
    seen: dict[str, list[str]] = {}

    def call(team_id: str) -> None:
        response = client.get("/api/schedules", headers={"Authorization": f"Bearer {tokens[team_id]}"})
        seen[team_id] = response.json()["team"]

    threads = [threading.Thread(target=call, args=(team_id,)) for team_id in tokens for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {team_id: [team_id] for team_id in tokens}


# --- the cache itself ------------------------------------------------------------------------------------


def test_the_cache_keeps_no_token_and_stays_bounded() -> None:
    clock = Clock()
    cache = TokenCache(30, clock, max_entries=3)
    tokens = [new_token() for _ in range(4)]
    for n, token in enumerate(tokens):
        cache.put(token, f"team-{n}")
    assert cache.get(tokens[0]) is None  # the oldest made room
    assert [cache.get(token) for token in tokens[1:]] == ["team-1", "team-2", "team-3"]
    assert not any(token in repr(vars(cache)) for token in tokens)
    clock.now += 10
    cache.put(tokens[0], "team-0")  # full: the oldest live entry goes
    assert cache.get(tokens[1]) is None and cache.get(tokens[0]) == "team-0"
    clock.now += 25  # tokens 2 and 3 have expired, token 0 has not
    assert cache.get(tokens[0]) == "team-0"
    assert cache.get(tokens[2]) is None and cache.get(tokens[3]) is None
