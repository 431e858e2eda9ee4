"""The `library` search connector over uploaded documents (in-memory repository): per team."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from functions.common.documents import DocumentRecord, InMemoryDocumentRepository
from functions.search.connectors.base import ConnectorContext
from functions.search.connectors.library import LibraryConnector
from functions.search.models import PaperQuery

TEAM_A = "team-a"
TEAM_B = "team-b"


def _record(
    document_id: str,
    title: str,
    abstract: str,
    year: int,
    status: str = "indexed",
    team_id: str = TEAM_A,
) -> DocumentRecord:
    return DocumentRecord(
        team_id=team_id,
        document_id=document_id,
        filename=f"{document_id}.pdf",
        uploaded_at=datetime(2026, 1, 5, tzinfo=UTC),
        size_bytes=1000,
        status=status,
        sha256="0" * 64,
        pdf_key=f"teams/{team_id}/documents/{document_id}/original.pdf",
        title=title,
        abstract=abstract,
        year=year,
        search_text=abstract,
    )


def test_library_ranks_matching_documents_and_links_them_for_extraction() -> None:
    repository = InMemoryDocumentRepository()
    repository.put(
        _record(
            "doc-aaaaaaaaaaaaaaaaaaaaaaaa", "Sparse attention routing", "Long document transformers.", 2024
        )
    )
    repository.put(
        _record("doc-bbbbbbbbbbbbbbbbbbbbbbbb", "Soil carbon", "Cover crops and attention to soil.", 2021)
    )
    repository.put(
        _record(
            "doc-cccccccccccccccccccccccc", "Transformers draft", "Attention routing.", 2024, status="failed"
        )
    )
    connector = LibraryConnector(ConnectorContext(), repository)
    result = asyncio.run(
        connector.search(PaperQuery(query="attention routing transformers", team_id=TEAM_A), limit=10)
    )
    assert result.ok and [p.url for p in result.papers] == [
        "library://doc-aaaaaaaaaaaaaaaaaaaaaaaa",
        "library://doc-bbbbbbbbbbbbbbbbbbbbbbbb",
    ]
    assert result.papers[0].source == "library" and result.papers[0].upstream_rank == 1
    dated = asyncio.run(
        connector.search(PaperQuery(query="attention", year_start=2023, team_id=TEAM_A), limit=10)
    )
    assert [p.year for p in dated.papers] == [2024]


def test_library_returns_only_the_query_teams_documents() -> None:
    repository = InMemoryDocumentRepository()
    repository.put(_record("doc-aaaaaaaaaaaaaaaaaaaaaaaa", "Sparse attention routing", "Routing.", 2024))
    repository.put(
        _record("doc-bbbbbbbbbbbbbbbbbbbbbbbb", "Attention for soil", "Soil.", 2022, team_id=TEAM_B)
    )
    connector = LibraryConnector(ConnectorContext(), repository)

    def urls(team_id: str | None) -> list[str]:
        result = asyncio.run(connector.search(PaperQuery(query="attention", team_id=team_id), limit=10))
        assert result.ok, result.error
        return [p.url for p in result.papers]

    assert urls(TEAM_A) == ["library://doc-aaaaaaaaaaaaaaaaaaaaaaaa"]
    assert urls(TEAM_B) == ["library://doc-bbbbbbbbbbbbbbbbbbbbbbbb"]
    assert urls("team-c") == []
    assert urls(None) == [], "no team: no library results, and not an error"


def test_library_without_a_team_does_not_read_the_repository() -> None:
    class Unreadable(InMemoryDocumentRepository):
        def all(self, team_id: str, limit: int = 1000) -> list[DocumentRecord]:
            raise AssertionError("read without a team")

    result = asyncio.run(LibraryConnector(ConnectorContext(), Unreadable()).search(PaperQuery(query="x"), 5))
    assert result.ok and result.papers == []


def test_library_failure_is_a_result_not_an_exception() -> None:
    class Broken(InMemoryDocumentRepository):
        def all(self, team_id: str, limit: int = 1000) -> list[DocumentRecord]:
            raise ConnectionError("table unreachable")

    result = asyncio.run(
        LibraryConnector(ConnectorContext(), Broken()).search(PaperQuery(query="x y", team_id=TEAM_A), 5)
    )
    assert not result.ok and "library unavailable" in (result.error or "")
