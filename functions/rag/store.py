"""Versioned index artifacts in a blob store (the data bucket on AWS, a local directory for `make run`),
and whether boto3 has credentials for the bucket (`location.py` decides where the index goes).

Layout under `kb/`:
    kb/<book_id>/<version>/manifest.json      counts, sources (sha256), parser version, created_at
    kb/<book_id>/<version>/entities.json      entities, passages and citation nodes
    kb/<book_id>/<version>/edges.json         [source, type, target] triples
    kb/<book_id>/<version>/vocabulary.json    the book's words, for typo suggestions
    kb/<book_id>/<version>/lexical/<file>     the BM25 index (bm25s arrays)
    kb/<book_id>/LATEST                        {"book_id", "version"} of the book's current index
    kb/LATEST                                  the same for the most recently ingested book

The version is a hash of the source PDFs and the parser version, so re-ingesting the same book writes
the same keys (and is skipped when its manifest already exists).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from functions.common.storage import BlobStore

KB_PREFIX = "kb"


class LocalDirBlobStore:
    """A BlobStore over a local directory (RAG_INDEX_PATH), for the local server and the ingest command."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if self.root.resolve() not in path.parents:
            raise ValueError(f"key escapes the index directory: {key}")
        return path

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".tmp")
        temporary.write_bytes(data)
        os.replace(temporary, path)

    def get_bytes(self, key: str) -> bytes | None:
        path = self._path(key)
        return path.read_bytes() if path.is_file() else None

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list_keys(self, prefix: str) -> list[str]:
        if not self.root.is_dir():
            return []
        keys = [str(path.relative_to(self.root)) for path in self.root.rglob("*") if path.is_file()]
        return sorted(key for key in keys if key.startswith(prefix))


def aws_credentials_found() -> bool:
    """Whether boto3 would find credentials to reach the data bucket (without waiting on the instance
    metadata service of a machine that has none)."""
    import botocore.session  # the SDK loads with the first AWS call (functions/common/aws.py)

    session = botocore.session.get_session()
    session.set_config_variable("metadata_service_num_attempts", 1)
    session.set_config_variable("metadata_service_timeout", 1)
    try:
        return session.get_credentials() is not None
    except Exception:  # a malformed profile or config file means no usable credentials
        return False


def version_prefix(book_id: str, version: str) -> str:
    return f"{KB_PREFIX}/{book_id}/{version}"


def pointer_key(book_id: str | None) -> str:
    return f"{KB_PREFIX}/{book_id}/LATEST" if book_id else f"{KB_PREFIX}/LATEST"


def put_json(store: BlobStore, key: str, value: Any) -> None:
    """Compact UTF-8 JSON (the book's text is most of the artifacts); read back with storage.get_json."""
    store.put_bytes(
        key, json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode(), "application/json"
    )
