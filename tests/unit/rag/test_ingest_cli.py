"""`python -m functions.rag.ingest PDF...`: without AWS it writes where the local server reads, and a
bad input ends in one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from functions.common.aws import reset_clients
from functions.common.resources import REPO_ROOT
from functions.common.settings import reset_settings_cache
from functions.rag import location
from functions.rag.config import reset_rag_settings_cache
from functions.rag.index import load_knowledge_base
from functions.rag.ingest import main as ingest_main
from functions.rag.store import LocalDirBlobStore
from tests.unit.rag.tiny_book import tiny_book


@pytest.fixture
def no_aws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """No AWS configuration at all, and the repository's index directory moved into tmp_path."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_ENDPOINT_URL", "AWS_LAMBDA_FUNCTION_NAME", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
                 "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_WEB_IDENTITY_TOKEN_FILE", "DATA_BUCKET",
                 "RAG_INDEX_PATH", "RAG_EMBEDDING_MODEL_DIR"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # boto3's default session keeps the credentials it resolved for earlier tests: start a fresh one.
    monkeypatch.setattr(boto3, "DEFAULT_SESSION", None)
    local_index = tmp_path / ".rag-index"
    monkeypatch.setattr(location, "LOCAL_INDEX_DIR", local_index)
    reset_rag_settings_cache()
    reset_settings_cache()
    reset_clients()
    yield local_index
    reset_rag_settings_cache()
    reset_settings_cache()
    reset_clients()


@pytest.fixture
def pdfs(tmp_path: Path) -> list[str]:
    paths = []
    for source in tiny_book():
        path = tmp_path / source.name
        path.write_bytes(source.data)
        paths.append(str(path))
    return paths


def test_without_aws_the_command_writes_where_the_local_server_reads(
    no_aws: Path, pdfs: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert not location.aws_configured()
    assert ingest_main(pdfs) == 0
    out = capsys.readouterr().out
    assert f"into directory {no_aws} " in out and "written" in out
    served = location.serving_store()
    assert isinstance(served, LocalDirBlobStore) and served.root == no_aws
    assert load_knowledge_base(served).book_id == "decisions-under-uncertainty"
    # A bucket name alone (no credentials, no endpoint) does not send the index to S3 either.
    monkeypatch.setenv("DATA_BUCKET", "some-bucket")
    assert ingest_main(pdfs) == 0
    assert f"into directory {no_aws} " in capsys.readouterr().out


def test_missing_credentials_for_a_configured_bucket_are_one_line(
    no_aws: Path, pdfs: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # An endpoint but no credentials: boto3 refuses to sign, before any connection is made.
    monkeypatch.setenv("DATA_BUCKET", "some-bucket")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    reset_settings_cache()
    reset_clients()
    assert ingest_main(pdfs) == 1
    err = capsys.readouterr().err
    assert (
        err
        == "error: no AWS credentials to write to bucket s3://some-bucket: configure AWS or pass --index-dir\n"
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("missing.pdf", None, "no such file"),
        ("notes.txt", b"plain text", "not a PDF file"),
        ("broken.pdf", b"%PDF-1.4\nnot really a pdf", "unreadable PDF"),
    ],
)
def test_bad_input_is_one_line_and_a_non_zero_exit(
    no_aws: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    content: bytes | None,
    message: str,
) -> None:
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    assert ingest_main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: {message}") and err.count("\n") == 1
    assert not no_aws.exists()


def test_a_pdf_that_is_not_a_book_is_one_line(
    no_aws: Path, pdfs: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    chapter_only_toc = [path for path in pdfs if "contents" in path]
    # The table of contents alone: no chapter to index.
    assert ingest_main(chapter_only_toc) == 1
    err = capsys.readouterr().err
    assert err == "error: no chapter found in the given PDFs\n"


def test_the_command_never_ends_in_a_traceback(tmp_path: Path) -> None:
    directory = tmp_path / "a-directory"
    directory.mkdir()
    completed = subprocess.run(
        [sys.executable, "-m", "functions.rag.ingest", str(directory)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 1
    assert completed.stderr == f"error: {directory}: not a file\n"
    assert "Traceback" not in completed.stdout + completed.stderr


def test_the_503_advice_names_the_command_and_where_it_writes(
    no_aws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    advice = location.missing_index_advice()
    assert (
        "ingest the book first (python -m functions.rag.ingest <table of contents and chapter PDFs>" in advice
    )
    assert "it writes .rag-index/, which this server reads on the next request" in advice
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "rag")
    monkeypatch.setenv("DATA_BUCKET", "the-data")
    reset_settings_cache()
    assert location.missing_index_advice() == (
        "knowledge base is not loaded: upload the book's PDFs to s3://the-data/kb-source/<book-id>/ to ingest it"
    )
