"""The `library` search connector over uploaded documents (in-memory repository)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from functions.extract.documents import DocumentRecord, InMemoryDocumentRepository
from functions.search.connectors.base import ConnectorContext
from functions.search.connectors.library import LibraryConnector
from functions.search.models import PaperQuery


def _record(
    document_id: str, title: str, abstract: str, year: int, status: str = "indexed"
) -> DocumentRecord:
    return DocumentRecord(
        document_id=document_id,
        filename=f"{document_id}.pdf",
        uploaded_at=datetime(2026, 1, 5, tzinfo=UTC),
        size_bytes=1000,
        status=status,
        sha256="0" * 64,
        pdf_key="pdfs/x.pdf",
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
    result = asyncio.run(connector.search(PaperQuery(query="attention routing transformers"), limit=10))
    assert result.ok and [p.url for p in result.papers] == [
        "library://doc-aaaaaaaaaaaaaaaaaaaaaaaa",
        "library://doc-bbbbbbbbbbbbbbbbbbbbbbbb",
    ]
    assert result.papers[0].source == "library" and result.papers[0].upstream_rank == 1
    dated = asyncio.run(connector.search(PaperQuery(query="attention", year_start=2023), limit=10))
    assert [p.year for p in dated.papers] == [2024]


def test_library_failure_is_a_result_not_an_exception() -> None:
    class Broken(InMemoryDocumentRepository):
        def all(self, limit: int = 1000) -> list[DocumentRecord]:
            raise ConnectionError("table unreachable")

    result = asyncio.run(LibraryConnector(ConnectorContext(), Broken()).search(PaperQuery(query="x y"), 5))
    assert not result.ok and "library unavailable" in (result.error or "")
