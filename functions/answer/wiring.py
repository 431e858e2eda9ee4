"""The answer function's composition root: the deployed (and local-runtime) adapters behind the pipeline.

Per container: the search service (its breakers, HTTP clients and cache outlive a request), the
uploaded-documents adapter, the relevance scorer (MiniLM weights load once) and the answer service. Per
request: the extraction service (it owns an HTTP client, closed when the answer is done) and the LLM
provider.

The pipeline, the services and the adapters are imported by the first request (`answer_service`), not
with the app (bench/cold_start.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from functions.common.settings import Settings, get_settings

if TYPE_CHECKING:
    from functions.answer.service import AnswerService
    from functions.common.documents import DocumentRepository
    from functions.extract.service import ExtractionService
    from functions.references.checker import ReferenceChecker
    from functions.research.pipeline import AnswerPipeline
    from functions.research.retrieval.fusion import SearchPort
    from functions.research.retrieval.relevance import RelevanceScorer
    from functions.research.retrieval.retriever import Retriever
    from functions.research.retrieval.uploads import DocumentPort, UploadedDocument


class UploadedDocuments:
    """The Retriever's document port over the extract function's document records."""

    def __init__(self, repository: DocumentRepository) -> None:
        self._repository = repository

    def get(self, team_id: str, document_id: str) -> UploadedDocument | None:
        from functions.research.retrieval.uploads import UploadedDocument

        record = self._repository.get(team_id, document_id)
        if record is None or record.status != "indexed":
            return None
        return UploadedDocument(
            document_id=record.document_id,
            title=record.title or record.filename,
            source_url=record.source_url,
        )


@cache
def relevance_scorer() -> RelevanceScorer:
    from functions.common.ml.embedder import default_embedder
    from functions.research.retrieval.relevance import RelevanceScorer

    return RelevanceScorer(default_embedder())


@dataclass(frozen=True)
class Reading:
    """One request's reading: its retriever, and the extraction service behind its full-text port."""

    retriever: Retriever
    extraction: ExtractionService


@asynccontextmanager
async def reading(settings: Settings, search: SearchPort, documents: DocumentPort) -> AsyncIterator[Reading]:
    """One request's retriever: the search port, the team's documents, and an extraction service of its
    own (its HTTP client is closed when the request is done), its sources counted (functions/metering)."""
    from functions.extract.service import ExtractionService
    from functions.metering.meter import MeteredFullText
    from functions.research.retrieval.retriever import Retriever

    # The first request loads the MiniLM weights: off the event loop, so a stream's first event is
    # written meanwhile.
    scorer = await asyncio.to_thread(relevance_scorer)
    extraction = ExtractionService.from_settings(settings)
    try:
        retriever = Retriever(
            search=search, full_text=MeteredFullText(extraction), documents=documents, scorer=scorer
        )
        yield Reading(retriever, extraction)
    finally:
        await extraction.aclose()


_service: tuple[Settings, AnswerService] | None = None


def answer_service() -> AnswerService:
    """One service per container and settings (tests and the local runtime change the settings)."""
    global _service
    settings = get_settings()
    if _service is None or _service[0] is not settings:
        _service = (settings, build_service(settings))
    return _service[1]


def build_service(settings: Settings) -> AnswerService:
    from functions.answer.service import AnswerService
    from functions.common.documents import DynamoDocumentRepository
    from functions.common.llm import provider_from_settings
    from functions.common.traces import DynamoDbTraceStore
    from functions.metering.meter import metered_llm
    from functions.research.pipeline import AnswerPipeline
    from functions.search.service import SearchService

    search = SearchService.from_settings(settings)
    documents = UploadedDocuments(DynamoDocumentRepository())

    @asynccontextmanager
    async def pipeline() -> AsyncIterator[AnswerPipeline]:
        async with reading(settings, service.search_port, documents) as read:
            retriever = read.retriever
            # Metered: the request's tokens and sources count for its team (functions/metering).
            yield AnswerPipeline(retriever, llm=metered_llm(provider_from_settings(settings)))

    service = AnswerService(
        pipeline,
        DynamoDbTraceStore(ttl_days=settings.trace_ttl_days),
        search,
        llm_configured=settings.llm_provider != "none",
        admit=search.admit_client_async,
    )
    return service


# A reference check's lookups wait for their turns no longer than this (the answer function runs 60 s).
REFERENCE_CHECK_BUDGET_SECONDS = 50.0


@asynccontextmanager
async def reference_checking() -> AsyncIterator[ReferenceChecker]:
    """A checker over the registries for one check (its HTTP client is closed when the check is done)."""
    from functions.references.checker import ReferenceChecker
    from functions.references.registries import connector_registries

    async with connector_registries(get_settings()) as registries:
        yield ReferenceChecker(registries, budget_seconds=REFERENCE_CHECK_BUDGET_SECONDS)
