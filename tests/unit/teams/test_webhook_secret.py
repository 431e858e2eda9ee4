"""The per-team webhook secret: the admin route (201, rotation, §8.4 errors), the service and both stores."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from functions.admin.app import app
from functions.common.errors import NotFound
from functions.common.settings import reset_settings_cache
from functions.teams.models import Team
from functions.teams.routes import get_team_service
from functions.teams.service import TeamService
from functions.teams.store import TeamStore
from tests.support.fakes.team_store import InMemoryTeamStore

ADMIN = "admin-secret-for-tests"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
TEAM = Team(
    team_id="team-0123456789ab", name="Platform research", tier="standard", created_at="2030-01-01T00:00:00Z"
)


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, TeamService]]:
    monkeypatch.setenv("ADMIN_TOKEN", ADMIN)
    monkeypatch.delenv("ADMIN_AUTH", raising=False)
    reset_settings_cache()
    service = TeamService(InMemoryTeamStore())
    app.dependency_overrides[get_team_service] = lambda: service
    yield TestClient(app), service
    app.dependency_overrides.clear()


def test_the_route_creates_then_rotates_the_secret(client: tuple[TestClient, TeamService]) -> None:
    http, service = client
    team_id = http.post("/admin/teams", json={"name": "A", "tier": "basic"}, headers=AUTH).json()["team_id"]
    assert service.webhook_secret(team_id) is None
    first = http.post(f"/admin/teams/{team_id}/webhook-secret", headers=AUTH)
    assert first.status_code == 201 and set(first.json()) == {"webhook_secret"}
    assert first.json()["webhook_secret"].startswith("whsec_")
    assert service.webhook_secret(team_id) == first.json()["webhook_secret"]
    rotated = http.post(f"/admin/teams/{team_id}/webhook-secret", headers=AUTH).json()["webhook_secret"]
    assert rotated != first.json()["webhook_secret"] and service.webhook_secret(team_id) == rotated


def test_the_route_answers_like_the_other_admin_routes(client: tuple[TestClient, TeamService]) -> None:
    http, _ = client
    unknown = http.post("/admin/teams/team-ffffffffffff/webhook-secret", headers=AUTH)
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "not_found"
    anonymous = http.post("/admin/teams/team-ffffffffffff/webhook-secret")
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"] == "unauthorized"
    wrong = http.post("/admin/teams/team-ffffffffffff/webhook-secret", headers={"Authorization": "Bearer x"})
    assert wrong.status_code == 401


def test_without_admin_token_the_route_is_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADMIN_TOKEN", raising=False)
    monkeypatch.delenv("ADMIN_AUTH", raising=False)
    reset_settings_cache()
    response = TestClient(app).post("/admin/teams/team-0123456789ab/webhook-secret", headers=AUTH)
    assert response.status_code == 503 and response.json()["error"]["code"] == "admin_disabled"


def test_the_stores_keep_one_secret_per_team(store: TeamStore) -> None:
    with pytest.raises(NotFound):
        store.put_webhook_secret(TEAM.team_id, "whsec_a", "2030-01-01T00:00:00Z")
    store.create_team(TEAM)
    assert store.webhook_secret(TEAM.team_id) is None
    store.put_webhook_secret(TEAM.team_id, "whsec_a", "2030-01-01T00:00:00Z")
    store.put_webhook_secret(TEAM.team_id, "whsec_b", "2030-01-02T00:00:00Z")
    assert store.webhook_secret(TEAM.team_id) == "whsec_b"
    assert store.webhook_secret("team-ba9876543210") is None
    assert store.get_team(TEAM.team_id) == TEAM  # the team item is untouched
