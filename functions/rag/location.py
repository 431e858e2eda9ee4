"""Where the knowledge-base index lives, for the server that reads it and the command that writes it.

The server reads, in order: `RAG_INDEX_PATH`; the repository's `.rag-index/` when an ingest wrote
one; the data bucket. The ingest command writes to `--index-dir`; else `RAG_INDEX_PATH`; else the
data bucket when one is configured (`DATA_BUCKET`) and AWS is reachable (credentials,
`AWS_ENDPOINT_URL`, or running in Lambda); else `.rag-index/`. So on a laptop without AWS,
`python -m functions.rag.ingest PDF...` writes exactly where `make run` reads.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from functions.common.resources import REPO_ROOT
from functions.common.settings import get_settings
from functions.common.storage import BlobStore, S3BlobStore
from functions.rag.config import get_rag_settings
from functions.rag.store import LocalDirBlobStore, aws_credentials_found

LOCAL_INDEX_DIR = REPO_ROOT / ".rag-index"
INGEST_COMMAND = "python -m functions.rag.ingest"


def serving_store() -> BlobStore:
    """RAG_INDEX_PATH if set; else the repository's `.rag-index/` when an ingest wrote one; else S3."""
    settings = get_rag_settings()
    if settings.index_path:
        return LocalDirBlobStore(settings.index_path)
    if (LOCAL_INDEX_DIR / "kb" / "LATEST").is_file():
        return LocalDirBlobStore(LOCAL_INDEX_DIR)
    return S3BlobStore()


def _env(name: str) -> str:
    # The settings read the environment case-insensitively; so does this.
    return next((value for key, value in os.environ.items() if key.upper() == name and value), "")


def in_lambda() -> bool:
    return bool(_env("AWS_LAMBDA_FUNCTION_NAME"))


def aws_configured() -> bool:
    """An endpoint (the one the S3 client is made with), a Lambda, or credentials that boto3 would find."""
    return bool(get_settings().aws_endpoint_url) or in_lambda() or aws_credentials_found()


@dataclass
class IngestDestination:
    store: BlobStore
    description: str  # "directory /abs/path" or "bucket s3://name"
    local_default: bool = False  # the repository's .rag-index/, chosen because no AWS is configured


def ingest_destination(index_dir: Path | None = None) -> IngestDestination:
    directory = index_dir or get_rag_settings().index_path
    if directory:
        return IngestDestination(LocalDirBlobStore(directory), f"directory {Path(directory).resolve()}")
    bucket = _env("DATA_BUCKET")
    if bucket and aws_configured():
        return IngestDestination(S3BlobStore(bucket=bucket), f"bucket s3://{bucket}")
    return IngestDestination(
        LocalDirBlobStore(LOCAL_INDEX_DIR), f"directory {LOCAL_INDEX_DIR}", local_default=True
    )


def missing_index_advice() -> str:
    """What the 503 answer tells the caller to do, for the store this server reads."""
    settings = get_rag_settings()
    if settings.index_path:
        return (
            f"knowledge base is not loaded: no index in {settings.index_path}; ingest the book first "
            f"({INGEST_COMMAND} --index-dir {settings.index_path} <table of contents and chapter PDFs>)"
        )
    if in_lambda():
        return (
            "knowledge base is not loaded: upload the book's PDFs to "
            f"s3://{get_settings().data_bucket}/{settings.source_prefix}<book-id>/ to ingest it"
        )
    return (
        f"knowledge base is not loaded: ingest the book first ({INGEST_COMMAND} "
        "<table of contents and chapter PDFs>, run from the repository root; without AWS it writes "
        ".rag-index/, which this server reads on the next request)"
    )
