"""`research-agent admin webhook-secret TEAM_ID` against the admin app itself (in-process, no sockets)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from functions.admin.app import app
from functions.cli.main import main
from functions.common.settings import reset_settings_cache
from functions.teams.models import Team
from functions.teams.routes import get_team_service
from functions.teams.service import TeamService
from tests.support.cli_client import cli_client
from tests.support.fakes.team_store import InMemoryTeamStore

ADMIN = "admin-secret-for-cli-tests"
TEAM = Team(team_id="team-0123456789ab", name="A", tier="basic", created_at="2030-01-01T00:00:00Z")


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


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with cli_client(app, base_url="http://admin.test") as client:  # an httpx.Client on the app
        code = main(list(argv), client=client, out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_the_command_prints_the_new_secret_once(service: TeamService) -> None:
    code, out, err = _run("admin", "webhook-secret", TEAM.team_id, "--admin-token", ADMIN)
    assert code == 0, err
    assert json.loads(out) == {"webhook_secret": service.webhook_secret(TEAM.team_id)}


def test_the_command_reports_an_unknown_team_and_a_missing_credential(service: TeamService) -> None:
    code, out, err = _run("admin", "webhook-secret", "team-ffffffffffff", "--admin-token", ADMIN)
    assert code == 1 and out == "" and "404 not_found" in err
    code, _, err = _run("admin", "webhook-secret", TEAM.team_id, "--admin-token", "")
    assert code == 1 and "admin token is required" in err
