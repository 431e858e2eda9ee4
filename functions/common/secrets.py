"""Webhook secrets are sealed before they are stored and opened when a webhook is signed.

A webhook secret is an HMAC key the service must sign with, so it cannot be hashed like a token; it is
encrypted instead, bound to its team (the team id is authenticated with it, so a sealed secret copied
to another team's item does not open):

- on AWS, with KMS (`WEBHOOK_SECRET_KEY_ID`, the key CDK creates): `kms:v1:<base64 ciphertext blob>`,
  encryption context `{"purpose": "webhook-secret", "team_id": ...}`; the admin function may only
  encrypt, the functions that sign webhooks may only decrypt (infra/components/functions.py);
- locally, with AES-256-GCM (`cryptography`) under a key kept in `LOCAL_STATE_DIR/webhook-secret.key`
  (0600; made on first use), or a key of the process when state is kept in memory:
  `local:v1:<base64 nonce + ciphertext + tag>`.

A secret stored in plain text by an earlier version (`whsec_...`) is still read as it is; rotating it
stores it sealed.

The same key seals the teams' own upstream API keys (functions/teams/service.py) under another purpose,
`upstream-key`: a cipher is made for one purpose, which is its KMS encryption context (and the local
associated data), so a value sealed for one purpose never opens for the other and KMS grants can be
given per purpose.
"""

from __future__ import annotations

import base64
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from functions.common.settings import Settings, on_lambda

PURPOSE = "webhook-secret"
UPSTREAM_KEY_PURPOSE = "upstream-key"
KEY_FILE = "webhook-secret.key"
_KMS_PREFIX = "kms:v1:"
_LOCAL_PREFIX = "local:v1:"
_PLAINTEXT_PREFIX = "whsec_"  # an unsealed secret of an earlier version


class SecretCipher(Protocol):
    def seal(self, secret: str, team_id: str) -> str: ...

    def open(self, sealed: str, team_id: str) -> str: ...


class SecretUnreadable(Exception):
    """A sealed secret that this cipher cannot open (another key, another team, a damaged value)."""


def _context(purpose: str, team_id: str) -> dict[str, str]:
    return {"purpose": purpose, "team_id": team_id}


@dataclass
class KmsSecretCipher:
    key_id: str
    client_factory: Any = None  # () -> a boto3 KMS client; the first seal or open builds it
    purpose: str = PURPOSE

    _client: Any = field(default=None, init=False, repr=False)

    def _kms(self) -> Any:
        if self._client is None:
            if self.client_factory is not None:
                self._client = self.client_factory()
            else:
                from functions.common.aws import generic_client

                self._client = generic_client("kms")
        return self._client

    def seal(self, secret: str, team_id: str) -> str:
        blob = self._kms().encrypt(
            KeyId=self.key_id,
            Plaintext=secret.encode("utf-8"),
            EncryptionContext=_context(self.purpose, team_id),
        )["CiphertextBlob"]
        return _KMS_PREFIX + base64.b64encode(blob).decode("ascii")

    def open(self, sealed: str, team_id: str) -> str:
        if not sealed.startswith(_KMS_PREFIX):
            raise SecretUnreadable("not sealed with KMS")
        try:
            plain = self._kms().decrypt(
                KeyId=self.key_id,
                CiphertextBlob=base64.b64decode(sealed[len(_KMS_PREFIX) :]),
                EncryptionContext=_context(self.purpose, team_id),
            )["Plaintext"]
        except Exception as exc:  # botocore's InvalidCiphertextException and kin, never the value
            raise SecretUnreadable(f"KMS could not open the secret: {exc.__class__.__name__}") from None
        return bytes(plain).decode("utf-8")


class LocalSecretCipher:
    """AES-256-GCM under a key file (created 0600), or under a key of this process when `key_file` is None."""

    _process_key: bytes | None = None
    _lock = threading.Lock()

    def __init__(self, key_file: Path | None, purpose: str = PURPOSE) -> None:
        self._key_file = key_file
        self.purpose = purpose
        self._key: bytes | None = None

    def _aead(self) -> Any:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        if self._key is None:
            self._key = self._load_key()
        return AESGCM(self._key)

    def _load_key(self) -> bytes:
        with LocalSecretCipher._lock:
            if self._key_file is None:
                if LocalSecretCipher._process_key is None:
                    LocalSecretCipher._process_key = os.urandom(32)
                return LocalSecretCipher._process_key
            self._key_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            try:
                fd = os.open(self._key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                key = self._key_file.read_bytes()
                if len(key) != 32:
                    raise SecretUnreadable(f"{self._key_file} is not a 32-byte key") from None
                return key
            key = os.urandom(32)
            with os.fdopen(fd, "wb") as handle:
                handle.write(key)
                handle.flush()
                os.fsync(handle.fileno())
            return key

    def seal(self, secret: str, team_id: str) -> str:
        nonce = os.urandom(12)
        sealed = self._aead().encrypt(nonce, secret.encode("utf-8"), _aad(self.purpose, team_id))
        return _LOCAL_PREFIX + base64.b64encode(nonce + sealed).decode("ascii")

    def open(self, sealed: str, team_id: str) -> str:
        from cryptography.exceptions import InvalidTag

        if not sealed.startswith(_LOCAL_PREFIX):
            raise SecretUnreadable("not sealed with the local key")
        raw = base64.b64decode(sealed[len(_LOCAL_PREFIX) :])
        try:
            plain = self._aead().decrypt(raw[:12], raw[12:], _aad(self.purpose, team_id))
        except (InvalidTag, ValueError):
            raise SecretUnreadable("the local key does not open this secret (another key or team)") from None
        return bytes(plain).decode("utf-8")


class UnconfiguredCipher:
    """On Lambda without WEBHOOK_SECRET_KEY_ID: refuses, rather than sealing under a per-container key."""

    def seal(self, secret: str, team_id: str) -> str:
        raise SecretUnreadable("WEBHOOK_SECRET_KEY_ID is not set: webhook secrets cannot be sealed")

    def open(self, sealed: str, team_id: str) -> str:
        raise SecretUnreadable("WEBHOOK_SECRET_KEY_ID is not set: webhook secrets cannot be opened")


def _aad(purpose: str, team_id: str) -> bytes:
    return f"{purpose}:{team_id}".encode()


def is_plaintext(stored: str) -> bool:
    return stored.startswith(_PLAINTEXT_PREFIX)


def secret_cipher(settings: Settings, purpose: str = PURPOSE) -> SecretCipher:
    """KMS where a key is configured; the local key elsewhere (never on Lambda: a key per container would
    seal secrets no other container could open)."""
    if settings.webhook_secret_key_id:
        return KmsSecretCipher(settings.webhook_secret_key_id, purpose=purpose)
    if on_lambda():
        return UnconfiguredCipher()
    state_dir = settings.local_state_dir.strip()
    return LocalSecretCipher(Path(state_dir) / KEY_FILE if state_dir else None, purpose)
