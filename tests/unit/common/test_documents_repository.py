"""The document repository, the same tests against DynamoDB (on moto, with the registry's key schema)
and the in-memory twin: records are keyed by team, and one team never reads another's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from moto import mock_aws

from functions.common import resources
from functions.common.documents import (
    DocumentRecord,
    DocumentRepository,
    DynamoDocumentRepository,
    InMemoryDocumentRepository,
)
from tests.support.tables import create_table

TEAM_A = "team-a"
TEAM_B = "team-b"
DOC = "doc-aaaaaaaaaaaaaaaaaaaaaaaa"


def _spec() -> resources.TableSpec:
    (spec,) = [table for table in resources.TABLES if table.setting == "documents_table"]
    return spec


def _record(team_id: str, document_id: str = DOC, title: str = "Sparse attention routing") -> DocumentRecord:
    return DocumentRecord(
        team_id=team_id,
        document_id=document_id,
        filename="routing.pdf",
        uploaded_at=datetime(2026, 1, 5, 12, 30, tzinfo=UTC),
        size_bytes=1234,
        status="indexed",
        pages=2,
        sha256="a" * 64,
        pdf_key=f"teams/{team_id}/documents/{document_id}/original.pdf",
        parsed_key=f"teams/{team_id}/documents/{document_id}/paper.json",
        title=title,
        authors=["Ada Lovelace"],
        abstract="Long documents.",
        year=2024,
        metadata={"year": 2024, "score": 0.5},
        search_text="routing attention",
    )


@contextmanager
def _dynamodb_repository() -> Iterator[DynamoDocumentRepository]:
    """The table created from the registry's spec, as the local runtime and CDK create it."""
    with mock_aws():
        yield DynamoDocumentRepository(create_table("documents_table", "documents"))


@pytest.fixture(params=["dynamodb", "memory"])
def repository(request: pytest.FixtureRequest) -> Iterator[DocumentRepository]:
    if request.param == "memory":
        yield InMemoryDocumentRepository()
        return
    with _dynamodb_repository() as dynamodb:
        yield dynamodb


def test_the_registry_keys_the_documents_table_by_team_then_document() -> None:
    spec = _spec()
    assert (spec.partition_key, spec.sort_key) == ("team_id", "document_id")


def test_put_then_get_round_trips_the_record(repository: DocumentRepository) -> None:
    record = _record(TEAM_A)
    repository.put(record)
    assert repository.get(TEAM_A, DOC) == record
    assert repository.get(TEAM_A, "doc-bbbbbbbbbbbbbbbbbbbbbbbb") is None


def test_another_team_never_sees_the_document(repository: DocumentRepository) -> None:
    repository.put(_record(TEAM_A))
    assert repository.get(TEAM_B, DOC) is None
    assert repository.all(TEAM_B) == []
    assert [r.document_id for r in repository.all(TEAM_A)] == [DOC]


def test_the_same_file_uploaded_by_two_teams_is_two_documents(repository: DocumentRepository) -> None:
    repository.put(_record(TEAM_A, title="A's copy"))
    repository.put(_record(TEAM_B, title="B's copy"))
    first, second = repository.get(TEAM_A, DOC), repository.get(TEAM_B, DOC)
    assert first is not None and second is not None
    assert (first.team_id, first.title) == (TEAM_A, "A's copy")
    assert (second.team_id, second.title) == (TEAM_B, "B's copy")
    assert [r.title for r in repository.all(TEAM_A)] == ["A's copy"]


def test_all_lists_only_the_team_and_honours_the_limit(repository: DocumentRepository) -> None:
    ids = [f"doc-{str(i) * 24}" for i in range(1, 6)]
    for document_id in ids:
        repository.put(_record(TEAM_A, document_id))
    repository.put(_record(TEAM_B, "doc-" + "f" * 24))
    assert sorted(r.document_id for r in repository.all(TEAM_A)) == ids
    assert len(repository.all(TEAM_A, limit=2)) == 2
    assert repository.all(TEAM_A, limit=0) == []
    assert all(r.team_id == TEAM_A for r in repository.all(TEAM_A))


def test_empty_team_or_id_reads_nothing(repository: DocumentRepository) -> None:
    repository.put(_record(TEAM_A))
    assert repository.get("", DOC) is None
    assert repository.get(TEAM_A, "") is None
    assert repository.all("") == []


def test_dynamodb_lists_a_team_with_a_query_never_a_scan() -> None:
    with _dynamodb_repository() as repository:
        for index in range(1, 4):
            repository.put(_record(TEAM_A, f"doc-{str(index) * 24}"))

        def no_scan(**_: Any) -> Any:
            raise AssertionError("a Scan reads every team's documents")

        repository._table.scan = no_scan  # type: ignore[method-assign]
        assert len(repository.all(TEAM_A)) == 3
        assert len(repository.all(TEAM_A, limit=1)) == 1
