"""The uploaded documents a request names, read in full as sources that answer the question by choice."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from functions.common.errors import InvalidInput, NotFound
from functions.common.models import ExtractedPaper, FullTextPort
from functions.research.planning.plan import AnswerSettings, ResearchPlan
from functions.research.retrieval.evidence import SourceDoc, published_at, source_id_for
from functions.research.retrieval.fusion import SearchPort

FULL_TEXT_BUDGET_SECONDS = 12.0  # a slow PDF host must not hold the answer past API Gateway's 29 s


@dataclass(frozen=True)
class UploadedDocument:
    document_id: str
    title: str
    source_url: str  # what the extraction service reads it by


class DocumentPort(Protocol):
    def get(self, team_id: str, document_id: str) -> UploadedDocument | None:
        """The team's uploaded document; another team's id reads as unknown."""
        ...


async def uploaded_sources(
    plan: ResearchPlan[AnswerSettings],
    document_ids: Sequence[str],
    documents: DocumentPort | None,
    full_text: FullTextPort | None,
    search: SearchPort,
) -> list[tuple[SourceDoc, ExtractedPaper]]:
    """The uploaded documents a request names: unknown ids are the caller's error (404)."""
    if not document_ids:
        return []
    if documents is None or full_text is None or plan.settings.team_id is None:
        raise InvalidInput("documents: uploaded documents are not available here", field="documents")
    found: list[tuple[SourceDoc, ExtractedPaper]] = []
    for document_id in dict.fromkeys(document_ids):
        record = documents.get(plan.settings.team_id, document_id)
        if record is None:
            raise NotFound(f"document {document_id} not found")
        paper = await full_text.extract(
            record.source_url,
            focus_areas=[f.phrase for f in plan.facets],
            max_length=20000,
            budget_seconds=FULL_TEXT_BUDGET_SECONDS,
            team_id=plan.settings.team_id,
        )
        source = SourceDoc(
            source_id=source_id_for(search.connector_prefix("library"), record.source_url),
            title=paper.title or record.title,
            url=record.source_url,
            connector="library",
            score=1.0,
            snippet=paper.abstract,
            published_at=published_at(paper.year),
            year=paper.year,
            authors=list(paper.authors),
            relevance=1.0,
            answers_question=True,
            document_id=document_id,
        )
        found.append((source, paper))
    return found
