"""library: the team's own uploaded documents (POST /v1/documents), matched on title, abstract,
headings and findings. Results link as `library://<document_id>`, which extraction accepts.

Only the query's team's documents are read (`PaperQuery.team_id`); a query without a team finds none.
The connector is not cacheable, so its team-specific results never enter the shared response cache."""

from __future__ import annotations

import asyncio
import time

from functions.common.documents import DocumentRecord, DocumentRepository, DynamoDocumentRepository
from functions.common.text import stems
from functions.search.connectors.base import ConnectorContext, SharedRequest
from functions.search.models import ConnectorResult, FoundPaper, PaperQuery

NAME = "library"


def match_score(query_terms: list[str], record: DocumentRecord) -> float:
    """Share of the query's terms found in the document (title matches count double)."""
    if not query_terms:
        return 0.0
    title = set(stems(record.title))
    body = set(stems(f"{record.abstract}\n{record.search_text}"))
    score = sum(2.0 if t in title else 1.0 if t in body else 0.0 for t in query_terms)
    return score / (2.0 * len(query_terms))


def to_paper(record: DocumentRecord, rank: int) -> FoundPaper:
    return FoundPaper(
        title=record.title or record.filename,
        url=record.source_url,
        abstract=record.abstract or None,
        year=record.year,
        authors=record.authors,
        source=NAME,
        found_by=[NAME],
        upstream_rank=rank,
        open_access=True,
        connector_ranks={NAME: rank},
    )


class LibraryConnector:
    name = NAME
    prefix = "lib"
    cacheable = False

    def __init__(self, context: ConnectorContext, repository: DocumentRepository | None = None) -> None:
        self._context = context
        self._repository = repository

    def _documents(self) -> DocumentRepository:
        if self._repository is None:
            self._repository = DynamoDocumentRepository()
        return self._repository

    async def search(
        self, query: PaperQuery, limit: int, shared: SharedRequest | None = None
    ) -> ConnectorResult:
        started = time.perf_counter()
        if not query.team_id:  # no team, no library: an empty answer, not a failure
            return ConnectorResult(connector=NAME, elapsed_ms=(time.perf_counter() - started) * 1000)
        team_id = query.team_id
        try:
            records = await asyncio.to_thread(self._documents().all, team_id)
        except Exception as exc:  # the connector contract: failures are results, never exceptions
            return ConnectorResult(connector=NAME, error=f"library unavailable: {exc.__class__.__name__}")
        query_terms = stems(query.query)
        scored = []
        for record in records:
            if record.team_id != team_id or record.status != "indexed":
                continue
            if query.year_start and record.year and record.year < query.year_start:
                continue
            if query.year_end and record.year and record.year > query.year_end:
                continue
            score = match_score(query_terms, record)
            if score > 0:
                scored.append((score, record))
        scored.sort(key=lambda item: (-item[0], item[1].document_id))
        papers = [to_paper(record, rank) for rank, (_, record) in enumerate(scored[:limit], start=1)]
        return ConnectorResult(
            connector=NAME,
            papers=papers,
            total=len(scored),
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )
