"""A webhook secret made in one life of the runtime opens in the next (the local key is kept with the
state, 0600), and the journal on disk holds it sealed only."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from functions.common.secrets import KEY_FILE, LocalSecretCipher
from functions.local_runtime.aws import EmbeddedAws

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]


def test_a_sealed_webhook_secret_survives_a_restart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from functions.teams import wiring

    with EmbeddedAws(step_functions=(), state_machines=(), state_dir=tmp_path):
        team, _, _ = wiring.team_service().create_team("Kept", "basic")
        secret = wiring.team_service().rotate_webhook_secret(team.team_id)

    # another process: no key of this one survives, only what is on disk
    monkeypatch.setattr(LocalSecretCipher, "_process_key", None)
    key = tmp_path / KEY_FILE
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert secret.encode() not in b"".join(
        path.read_bytes() for path in tmp_path.rglob("*") if path.is_file()
    )

    with EmbeddedAws(step_functions=(), state_machines=(), state_dir=tmp_path):
        assert wiring.team_service().webhook_secret(team.team_id) == secret
