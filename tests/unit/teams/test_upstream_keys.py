"""A team's own upstream API keys through the admin app, on moto (the teams table, KMS): PUT/GET/DELETE,
the admin error format, sealed at rest under the upstream-key purpose, and never answered back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from functions.admin.app import app
from functions.common.secrets import UPSTREAM_KEY_PURPOSE, KmsSecretCipher, SecretUnreadable
from functions.common.settings import reset_settings_cache
from functions.teams.routes import get_team_service
from functions.teams.service import TeamService
from functions.teams.store import DynamoDbTeamStore
from tests.support.tables import create_table
from tests.unit.teams.deployed import REGION

ADMIN = "admin-secret-for-tests"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
S2_KEY = "s2-Team-Key-0123456789abcdefghijklmnop"
OA_KEY = "oa_team_key_!#$%~"


class Deployed:
    def __init__(self) -> None:
        self.table = create_table("teams_table", "teams")
        self.key_id = boto3.client("kms", region_name=REGION).create_key()["KeyMetadata"]["KeyId"]
        self.service = TeamService(
            DynamoDbTeamStore(self.table),
            secret_cipher=self.cipher("webhook-secret"),
            upstream_key_cipher=self.cipher(UPSTREAM_KEY_PURPOSE),
        )

    def cipher(self, purpose: str) -> KmsSecretCipher:
        return KmsSecretCipher(
            self.key_id, client_factory=lambda: boto3.client("kms", region_name=REGION), purpose=purpose
        )

    def raw_items(self) -> str:
        return repr(self.table.scan()["Items"])


@pytest.fixture
def deployed(monkeypatch: pytest.MonkeyPatch) -> Iterator[Deployed]:
    monkeypatch.setenv("ADMIN_TOKEN", ADMIN)
    monkeypatch.delenv("ADMIN_AUTH", raising=False)
    reset_settings_cache()
    with mock_aws():
        aws = Deployed()
        app.dependency_overrides[get_team_service] = lambda: aws.service
        yield aws
        app.dependency_overrides.clear()


@pytest.fixture
def client(deployed: Deployed) -> TestClient:
    return TestClient(app)


def _team(client: TestClient) -> str:
    created = client.post("/admin/teams", json={"name": "Keys", "tier": "basic"}, headers=AUTH)
    return str(created.json()["team_id"])


def _error_code(body: Any) -> str:
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    return str(body["error"]["code"])


def test_put_list_and_delete_a_teams_own_keys(client: TestClient, deployed: Deployed) -> None:
    team_id = _team(client)
    keys = f"/admin/teams/{team_id}/upstream-keys"
    assert client.get(keys, headers=AUTH).json() == {"providers": []}

    put = client.put(f"{keys}/semantic_scholar", json={"api_key": S2_KEY}, headers=AUTH)
    assert put.status_code == 204 and put.content == b""
    assert client.put(f"{keys}/openalex", json={"api_key": OA_KEY}, headers=AUTH).status_code == 204
    listed = client.get(keys, headers=AUTH)
    assert listed.status_code == 200 and listed.json() == {"providers": ["openalex", "semantic_scholar"]}
    assert S2_KEY not in listed.text and OA_KEY not in listed.text
    assert deployed.service.upstream_keys(team_id) == {"semantic_scholar": S2_KEY, "openalex": OA_KEY}

    replaced = client.put(f"{keys}/semantic_scholar", json={"api_key": "another-key"}, headers=AUTH)
    assert replaced.status_code == 204
    assert deployed.service.upstream_keys(team_id)["semantic_scholar"] == "another-key"

    assert client.delete(f"{keys}/semantic_scholar", headers=AUTH).status_code == 204
    assert client.delete(f"{keys}/semantic_scholar", headers=AUTH).status_code == 204  # idempotent
    assert client.get(keys, headers=AUTH).json() == {"providers": ["openalex"]}
    assert deployed.service.upstream_keys(team_id) == {"openalex": OA_KEY}


def test_the_key_is_sealed_at_rest_for_its_team_and_purpose(client: TestClient, deployed: Deployed) -> None:
    team_id = _team(client)
    client.put(
        f"/admin/teams/{team_id}/upstream-keys/semantic_scholar", json={"api_key": S2_KEY}, headers=AUTH
    )
    raw = deployed.raw_items()
    assert S2_KEY not in raw and "kms:v1:" in raw
    (sealed,) = deployed.service.store.upstream_keys(team_id).values()
    upstream_cipher = deployed.cipher(UPSTREAM_KEY_PURPOSE)
    assert upstream_cipher.open(sealed, team_id) == S2_KEY
    with pytest.raises(SecretUnreadable):  # another team's
        upstream_cipher.open(sealed, "team-000000000000")
    with pytest.raises(SecretUnreadable):  # the webhook-secret purpose does not open it
        deployed.cipher("webhook-secret").open(sealed, team_id)


def test_bad_requests_answer_in_the_admin_error_format(client: TestClient) -> None:
    team_id = _team(client)
    keys = f"/admin/teams/{team_id}/upstream-keys"
    unknown_team = client.put(
        "/admin/teams/team-ffffffffffff/upstream-keys/openalex", json={"api_key": "k"}, headers=AUTH
    )
    assert unknown_team.status_code == 404 and _error_code(unknown_team.json()) == "not_found"
    for method in ("get", "delete"):
        path = "/admin/teams/team-ffffffffffff/upstream-keys" + ("/openalex" if method == "delete" else "")
        answer = client.request(method.upper(), path, headers=AUTH)
        assert answer.status_code == 404 and _error_code(answer.json()) == "not_found", method
    unknown_provider = client.put(f"{keys}/crossref", json={"api_key": "k"}, headers=AUTH)
    assert unknown_provider.status_code == 400 and _error_code(unknown_provider.json()) == "invalid_request"
    for bad in ("", "has space", "x" * 257, "tab\tkey", "ünïcode", None, 5):
        answer = client.put(f"{keys}/openalex", json={"api_key": bad}, headers=AUTH)
        assert answer.status_code == 400 and _error_code(answer.json()) == "invalid_request", bad
    assert client.put(f"{keys}/openalex", json={}, headers=AUTH).status_code == 400
    stranger = client.put(f"{keys}/openalex", json={"api_key": OA_KEY})
    assert stranger.status_code == 401 and OA_KEY not in stranger.text
    assert client.get(keys, headers=AUTH).json() == {"providers": []}


def test_the_service_refuses_what_the_route_would(deployed: Deployed) -> None:
    from functions.common.errors import InvalidInput, NotFound

    team = deployed.service.onboard("Direct", "basic").team
    with pytest.raises(NotFound):
        deployed.service.set_upstream_key(team.team_id, "arxiv", "key")
    with pytest.raises(InvalidInput):
        deployed.service.set_upstream_key(team.team_id, "openalex", "two words")
    with pytest.raises(NotFound):
        deployed.service.upstream_key_providers("team-ffffffffffff")
