"""The same tests against the DynamoDB store (on moto) and the in-memory one."""

from __future__ import annotations

import pytest
from moto import mock_aws

from functions.common.errors import Conflict, NotFound
from functions.teams.models import ApiKeyRecord, Team, TokenRecord
from functions.teams.store import DynamoDbTeamStore, TeamStore
from tests.support.tables import create_table
from tests.unit.teams.deployed import teams_table_spec

TEAM = Team(
    team_id="team-0123456789ab", name="Platform research", tier="standard", created_at="2026-11-20T12:00:00Z"
)
OTHER = Team(team_id="team-ba9876543210", name="Other", tier="basic", created_at="2026-11-20T12:00:00Z")


def _record(
    token_id: str = "tok-000000000001", team_id: str = TEAM.team_id, hashed: str = "a" * 64
) -> TokenRecord:
    return TokenRecord(
        token_id=token_id, team_id=team_id, token_hash=hashed, created_at="2026-11-20T12:00:01Z"
    )


def test_the_registry_describes_the_teams_table() -> None:
    spec = teams_table_spec()
    assert (spec.partition_key, spec.sort_key, spec.ttl_attribute) == ("pk", "sk", None)


def test_a_team_is_created_once_and_read_back(store: TeamStore) -> None:
    store.create_team(TEAM)
    assert store.get_team(TEAM.team_id) == TEAM
    assert store.get_team(OTHER.team_id) is None
    with pytest.raises(Conflict):
        store.create_team(TEAM)


def test_a_token_is_found_by_its_hash(store: TeamStore) -> None:
    store.create_team(TEAM)
    record = _record()
    store.put_token(record)
    assert store.token_by_hash(record.token_hash) == record
    assert store.token_by_hash("b" * 64) is None


def test_a_token_needs_an_existing_team_and_a_fresh_id(store: TeamStore) -> None:
    with pytest.raises(NotFound):
        store.put_token(_record(team_id="team-000000000000"))
    assert store.token_by_hash("a" * 64) is None  # nothing half-written
    store.create_team(TEAM)
    store.put_token(_record())
    with pytest.raises(Conflict):
        store.put_token(_record(hashed="c" * 64))  # same token id
    assert store.token_by_hash("c" * 64) is None


def test_revocation_is_by_team_and_token_id_and_idempotent(store: TeamStore) -> None:
    store.create_team(TEAM)
    store.create_team(OTHER)
    store.put_token(_record())
    store.put_token(_record(token_id="tok-000000000002", hashed="d" * 64))
    assert not store.revoke_token(OTHER.team_id, "tok-000000000001")  # another team's token
    assert not store.revoke_token(TEAM.team_id, "tok-00000000ffff")
    assert store.token_by_hash("a" * 64).revoked_at is None  # type: ignore[union-attr]

    assert store.revoke_token(TEAM.team_id, "tok-000000000001", revoked_at="2026-11-21T08:00:00Z")
    assert store.token_by_hash("a" * 64).revoked_at == "2026-11-21T08:00:00Z"  # type: ignore[union-attr]
    assert store.revoke_token(TEAM.team_id, "tok-000000000001", revoked_at="2026-11-22T08:00:00Z")
    assert store.token_by_hash("a" * 64).revoked_at == "2026-11-21T08:00:00Z"  # type: ignore[union-attr]
    assert store.token_by_hash("d" * 64).revoked_at is None  # type: ignore[union-attr]


def test_revocation_without_a_time_stamps_now(store: TeamStore) -> None:
    store.create_team(TEAM)
    store.put_token(_record())
    assert store.revoke_token(TEAM.team_id, "tok-000000000001")
    revoked = store.token_by_hash("a" * 64)
    assert revoked is not None and revoked.revoked_at is not None and revoked.revoked_at.endswith("Z")


@mock_aws
def test_dynamodb_items_are_keyed_as_documented() -> None:
    table = create_table("teams_table", "teams")
    store = DynamoDbTeamStore(table)
    store.create_team(TEAM)
    store.put_token(_record())
    store.revoke_token(TEAM.team_id, "tok-000000000001", revoked_at="2026-11-21T08:00:00Z")
    keys = {(item["pk"], item["sk"]): item for item in table.scan()["Items"]}
    assert set(keys) == {
        ("TEAM#team-0123456789ab", "TEAM"),
        ("TOKEN#" + "a" * 64, "TOKEN"),
        ("TEAM#team-0123456789ab", "TOKEN#tok-000000000001"),
    }
    assert keys[("TEAM#team-0123456789ab", "TEAM")]["tier"] == "standard"
    for key in (("TOKEN#" + "a" * 64, "TOKEN"), ("TEAM#team-0123456789ab", "TOKEN#tok-000000000001")):
        assert keys[key]["revoked_at"] == "2026-11-21T08:00:00Z"
        assert keys[key]["team_id"] == TEAM.team_id


def _api_key(team_id: str = TEAM.team_id, key_id: str = "k7abc12def", hashed: str = "e" * 64) -> ApiKeyRecord:
    return ApiKeyRecord(
        api_key_id=key_id, team_id=team_id, key_hash=hashed, created_at="2026-11-20T12:00:02Z"
    )


def test_a_teams_api_key_is_found_by_its_hash_and_by_its_team(store: TeamStore) -> None:
    store.create_team(TEAM)
    store.create_team(OTHER)
    record = _api_key()
    store.put_api_key(record)
    assert store.api_key_by_hash("e" * 64) == record
    assert store.api_key_of_team(TEAM.team_id) == record
    assert store.api_key_by_hash("f" * 64) is None
    assert store.api_key_of_team(OTHER.team_id) is None


def test_an_api_key_needs_an_existing_team_and_a_team_has_at_most_one(store: TeamStore) -> None:
    with pytest.raises(NotFound):
        store.put_api_key(_api_key(team_id="team-000000000000"))
    assert store.api_key_by_hash("e" * 64) is None  # nothing half-written
    store.create_team(TEAM)
    store.create_team(OTHER)
    store.put_api_key(_api_key())
    with pytest.raises(Conflict):
        store.put_api_key(_api_key(key_id="k7second00", hashed="f" * 64))  # the team's second key
    with pytest.raises(Conflict):
        store.put_api_key(_api_key(team_id=OTHER.team_id, key_id="k7other000"))  # the same value
    assert store.api_key_by_hash("f" * 64) is None
    assert store.api_key_of_team(OTHER.team_id) is None


@mock_aws
def test_dynamodb_api_key_items_are_keyed_as_documented() -> None:
    spec = teams_table_spec()
    assert spec.sort_key is not None
    table = create_table("teams_table", "teams")
    store = DynamoDbTeamStore(table)
    store.create_team(TEAM)
    store.put_api_key(_api_key())
    keys = {(item["pk"], item["sk"]): item for item in table.scan()["Items"]}
    assert set(keys) == {
        ("TEAM#team-0123456789ab", "TEAM"),
        ("APIKEY#" + "e" * 64, "APIKEY"),
        ("TEAM#team-0123456789ab", "APIKEY"),
    }
    for key in (("APIKEY#" + "e" * 64, "APIKEY"), ("TEAM#team-0123456789ab", "APIKEY")):
        assert keys[key]["api_key_id"] == "k7abc12def" and keys[key]["team_id"] == TEAM.team_id
