from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from moto import mock_aws

from functions.common.errors import InvalidInput, NotFound
from functions.teams.service import TeamService
from functions.teams.store import DynamoDbTeamStore
from functions.teams.tokens import token_hash
from tests.support.fakes.team_store import InMemoryTeamStore
from tests.support.tables import create_table

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def _service(store: InMemoryTeamStore | None = None) -> TeamService:
    return TeamService(store or InMemoryTeamStore(), clock=lambda: NOW)


def test_create_team_returns_the_team_and_its_first_token() -> None:
    service = _service()
    team, token_id, token = service.create_team("  Platform research ", "premium")
    assert re.fullmatch(r"team-[0-9a-f]{12}", team.team_id)
    assert (team.name, team.tier, team.created_at) == ("Platform research", "premium", "2026-11-20T12:00:00Z")
    assert re.fullmatch(r"tok-[0-9a-f]{12}", token_id) and token.startswith("rt_")
    assert service.resolve(token) == team


@pytest.mark.parametrize(
    ("name", "tier", "field"),
    [
        ("", "basic", "name"),
        ("   ", "basic", "name"),
        ("x" * 101, "basic", "name"),
        ("A team", "gold", "tier"),
    ],
)
def test_create_team_rejects_an_empty_name_or_unknown_tier(name: str, tier: str, field: str) -> None:
    store = InMemoryTeamStore()
    with pytest.raises(InvalidInput) as raised:
        _service(store).create_team(name, tier)
    assert raised.value.field == field
    assert not store.teams and not store.tokens


def test_issued_tokens_resolve_to_their_team_each() -> None:
    service = _service()
    team, first_id, first = service.create_team("A", "basic")
    other, _, other_token = service.create_team("B", "standard")
    second_id, second = service.issue_token(team.team_id)
    assert second_id != first_id and second != first
    assert service.resolve(first) == service.resolve(second) == team
    assert service.resolve(other_token) == other


def test_issue_token_for_an_unknown_team_is_not_found() -> None:
    with pytest.raises(NotFound):
        _service().issue_token("team-000000000000")


def test_a_revoked_token_resolves_to_none_and_the_others_still_work() -> None:
    store = InMemoryTeamStore()
    service = _service(store)
    team, first_id, first = service.create_team("A", "basic")
    _, second = service.issue_token(team.team_id)
    service.revoke_token(team.team_id, first_id)
    assert service.resolve(first) is None
    assert service.resolve(second) == team
    assert store.tokens[token_hash(first)].revoked_at == "2026-11-20T12:00:00Z"
    service.revoke_token(team.team_id, first_id)  # revoking again is fine


def test_revoke_of_an_unknown_or_another_teams_token_is_not_found() -> None:
    service = _service()
    team, token_id, token = service.create_team("A", "basic")
    other, _, _ = service.create_team("B", "basic")
    with pytest.raises(NotFound):
        service.revoke_token(other.team_id, token_id)
    with pytest.raises(NotFound):
        service.revoke_token(team.team_id, "tok-000000000000")
    with pytest.raises(NotFound):
        service.revoke_token("team-000000000000", token_id)
    assert service.resolve(token) == team


@pytest.mark.parametrize("token", [None, "", "rt_unknown", "x" * 10_000])
def test_resolve_refuses_missing_unknown_and_oversized_tokens(token: str | None) -> None:
    service = _service()
    service.create_team("A", "basic")
    assert service.resolve(token) is None


@pytest.fixture
def dynamodb_service() -> Iterator[tuple[TeamService, object]]:
    with mock_aws():
        table = create_table("teams_table", "teams")
        yield TeamService(DynamoDbTeamStore(table), clock=lambda: NOW), table


def test_the_stored_records_never_contain_a_token(dynamodb_service: tuple[TeamService, object]) -> None:
    service, table = dynamodb_service
    team, token_id, token = service.create_team("A", "basic")
    _, second = service.issue_token(team.team_id)
    service.revoke_token(team.team_id, token_id)
    items = table.scan()["Items"]  # type: ignore[attr-defined]
    stored = json.dumps(items, default=str)
    assert len(items) == 5  # the team, and two items per token
    for secret in (token, second, token[3:], second[3:]):
        assert secret not in stored
    assert token_hash(token) in stored and token_hash(second) in stored
    assert service.resolve(token) is None and service.resolve(second) == team
