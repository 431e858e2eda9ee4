"""A team's monthly budget: the store (DynamoDB on moto and in memory), the service, PATCH /admin/teams/{id}
and `research-agent admin set-budget`."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from functions.admin.app import app
from functions.cli.main import main
from functions.common.errors import InvalidInput, NotFound
from functions.common.settings import reset_settings_cache
from functions.teams.models import Team
from functions.teams.routes import get_team_service
from functions.teams.service import TeamService
from functions.teams.store import TeamStore
from tests.support.cli_client import cli_client
from tests.support.fakes.team_store import InMemoryTeamStore

ADMIN = "admin-secret-for-budget-tests"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
TEAM = Team(
    team_id="team-0123456789ab", name="Platform research", tier="standard", created_at="2026-11-20T12:00:00Z"
)


def test_the_store_sets_and_removes_a_monthly_budget(store: TeamStore) -> None:
    store.create_team(TEAM)
    assert store.get_team(TEAM.team_id) == TEAM and TEAM.monthly_budget_usd is None
    updated = store.set_monthly_budget(TEAM.team_id, 250.5)
    assert updated is not None and updated.monthly_budget_usd == 250.5
    assert store.get_team(TEAM.team_id) == updated
    cleared = store.set_monthly_budget(TEAM.team_id, None)
    assert cleared == TEAM
    assert store.set_monthly_budget("team-ffffffffffff", 1.0) is None
    assert store.get_team("team-ffffffffffff") is None  # not created by the update


def test_a_team_created_with_a_budget_keeps_it(store: TeamStore) -> None:
    team = Team(
        team_id="team-aaaaaaaaaaaa",
        name="B",
        tier="basic",
        created_at="2026-11-20T12:00:00Z",
        monthly_budget_usd=0.25,
    )
    store.create_team(team)
    assert store.get_team(team.team_id) == team


def test_the_service_validates_the_budget() -> None:
    service = TeamService(InMemoryTeamStore())
    service.store.create_team(TEAM)
    assert service.set_monthly_budget(TEAM.team_id, 0.0).monthly_budget_usd == 0.0
    for bad in (-1.0, float("inf"), float("nan")):
        with pytest.raises(InvalidInput):
            service.set_monthly_budget(TEAM.team_id, bad)
    with pytest.raises(NotFound):
        service.set_monthly_budget("team-ffffffffffff", 1.0)


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[TeamService]:
    monkeypatch.setenv("ADMIN_TOKEN", ADMIN)
    monkeypatch.delenv("ADMIN_AUTH", raising=False)
    reset_settings_cache()
    team_service = TeamService(InMemoryTeamStore())
    team_service.store.create_team(TEAM)
    app.dependency_overrides[get_team_service] = lambda: team_service
    yield team_service
    app.dependency_overrides.clear()


def test_patch_sets_the_budget_and_answers_the_team(service: TeamService) -> None:
    client = TestClient(app)
    response = client.patch(f"/admin/teams/{TEAM.team_id}", json={"monthly_budget_usd": 120}, headers=AUTH)
    assert response.status_code == 200
    assert response.json() == {
        "team_id": TEAM.team_id,
        "name": TEAM.name,
        "tier": "standard",
        "created_at": TEAM.created_at,
        "monthly_budget_usd": 120.0,
    }
    cleared = client.patch(f"/admin/teams/{TEAM.team_id}", json={"monthly_budget_usd": None}, headers=AUTH)
    assert cleared.status_code == 200 and cleared.json()["monthly_budget_usd"] is None
    team = service.store.get_team(TEAM.team_id)
    assert team is not None and team.monthly_budget_usd is None


@pytest.mark.parametrize(
    ("path", "body", "headers", "status", "code"),
    [
        (f"/admin/teams/{TEAM.team_id}", {"monthly_budget_usd": -5}, AUTH, 400, "invalid_request"),
        (f"/admin/teams/{TEAM.team_id}", {"monthly_budget_usd": "lots"}, AUTH, 400, "invalid_request"),
        (f"/admin/teams/{TEAM.team_id}", {}, AUTH, 400, "invalid_request"),
        ("/admin/teams/team-ffffffffffff", {"monthly_budget_usd": 5}, AUTH, 404, "not_found"),
        (f"/admin/teams/{TEAM.team_id}", {"monthly_budget_usd": 5}, {}, 401, "unauthorized"),
    ],
)
def test_patch_errors_are_in_the_admin_format(
    service: TeamService, path: str, body: dict[str, object], headers: dict[str, str], status: int, code: str
) -> None:
    response = TestClient(app).patch(path, json=body, headers=headers)
    assert response.status_code == status
    error = response.json()["error"]
    assert error["code"] == code and set(error) == {"code", "message", "details"}
    team = service.store.get_team(TEAM.team_id)
    assert team is not None and team.monthly_budget_usd is None


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with cli_client(app, base_url="http://admin.test") as client:  # an httpx.Client over the app
        code = main(list(argv), client=client, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_cli_sets_and_removes_the_budget(service: TeamService) -> None:
    code, out, err = _run("admin", "set-budget", TEAM.team_id, "75.5", "--admin-token", ADMIN)
    assert code == 0, err
    assert json.loads(out)["monthly_budget_usd"] == 75.5
    code, out, err = _run("admin", "set-budget", TEAM.team_id, "none", "--admin-token", ADMIN)
    assert code == 0 and json.loads(out)["monthly_budget_usd"] is None
    code, out, err = _run("admin", "set-budget", "team-ffffffffffff", "1", "--admin-token", ADMIN)
    assert code == 1 and "404 not_found" in err


def test_the_cli_refuses_a_bad_amount(service: TeamService) -> None:
    with pytest.raises(SystemExit):
        _run("admin", "set-budget", TEAM.team_id, "-3", "--admin-token", ADMIN)
