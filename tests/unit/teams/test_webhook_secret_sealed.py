"""Webhook secrets are stored sealed: with AES-GCM under a 0600 key file locally, with KMS (moto) on AWS;
bound to their team; never in plain text in the table."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from functions.common.secrets import (
    KEY_FILE,
    KmsSecretCipher,
    LocalSecretCipher,
    SecretUnreadable,
    UnconfiguredCipher,
    secret_cipher,
)
from functions.common.settings import Settings
from functions.teams.models import Team
from functions.teams.service import TeamService
from functions.teams.store import DynamoDbTeamStore
from tests.support.fakes.team_store import InMemoryTeamStore
from tests.support.tables import create_table

TEAM = Team(team_id="team-0123456789ab", name="A", tier="standard", created_at="2030-01-01T00:00:00Z")
OTHER = "team-ba9876543210"


def _teams_table() -> DynamoDbTeamStore:
    table = create_table("teams_table", "teams")
    return DynamoDbTeamStore(table)


@pytest.fixture
def aws() -> Iterator[None]:
    with mock_aws():
        yield


def _raw_items() -> str:
    table = boto3.resource("dynamodb", region_name="us-east-1").Table("teams")
    return repr(table.scan()["Items"])


@pytest.mark.usefixtures("aws")
def test_with_kms_the_table_holds_only_ciphertext_and_the_secret_comes_back() -> None:
    key_id = boto3.client("kms", region_name="us-east-1").create_key()["KeyMetadata"]["KeyId"]
    kms = lambda: boto3.client("kms", region_name="us-east-1")  # noqa: E731
    store = _teams_table()
    store.create_team(TEAM)
    service = TeamService(store, secret_cipher=KmsSecretCipher(key_id, client_factory=kms))

    secret = service.rotate_webhook_secret(TEAM.team_id)

    assert secret.startswith("whsec_") and secret not in _raw_items() and "whsec_" not in _raw_items()
    assert service.webhook_secret(TEAM.team_id) == secret
    stored = store.webhook_secret(TEAM.team_id)
    assert stored is not None and stored.startswith("kms:v1:")
    with pytest.raises(SecretUnreadable):  # the team id is in the encryption context
        KmsSecretCipher(key_id, client_factory=kms).open(stored, OTHER)


@pytest.mark.usefixtures("aws")
def test_locally_the_key_file_is_0600_and_reopens_after_a_restart(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        store = _teams_table()
        store.create_team(TEAM)
        cipher = secret_cipher(Settings(local_state_dir=str(tmp_path)))
        secret = TeamService(store, secret_cipher=cipher).rotate_webhook_secret(TEAM.team_id)
    finally:
        os.umask(previous)

    key = tmp_path / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and len(key.read_bytes()) == 32
    assert secret not in _raw_items()
    restarted = TeamService(store, secret_cipher=LocalSecretCipher(key))  # a new process, the same key
    assert restarted.webhook_secret(TEAM.team_id) == secret
    stored = store.webhook_secret(TEAM.team_id)
    assert stored is not None and stored.startswith("local:v1:")
    with pytest.raises(SecretUnreadable):
        LocalSecretCipher(key).open(stored, OTHER)  # sealed for its team only
    with pytest.raises(SecretUnreadable):
        LocalSecretCipher(tmp_path / "another.key").open(stored, TEAM.team_id)


def test_a_secret_stored_in_plain_text_before_is_still_read() -> None:
    store = InMemoryTeamStore()
    store.create_team(TEAM)
    store.put_webhook_secret(TEAM.team_id, "whsec_from-an-earlier-version", created_at=TEAM.created_at)
    assert TeamService(store).webhook_secret(TEAM.team_id) == "whsec_from-an-earlier-version"


def test_the_settings_choose_the_cipher(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    assert isinstance(secret_cipher(Settings(webhook_secret_key_id="alias/x")), KmsSecretCipher)
    assert isinstance(secret_cipher(Settings()), LocalSecretCipher)
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "research-orchestrate")
    unconfigured = secret_cipher(Settings())
    assert isinstance(unconfigured, UnconfiguredCipher)
    with pytest.raises(SecretUnreadable, match="WEBHOOK_SECRET_KEY_ID"):
        unconfigured.seal("whsec_x", TEAM.team_id)
