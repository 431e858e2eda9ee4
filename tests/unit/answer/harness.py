"""An AnswerService over the real pipeline with in-memory twins: the search port, the trace store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from functions.answer.service import AnswerService
from functions.common.traces import InMemoryTraceStore
from functions.research.pipeline import AnswerPipeline
from functions.research.retrieval.fusion import SearchPort
from functions.research.retrieval.retriever import Retriever
from functions.search.models import FoundPaper, PaperQuery, SearchOutcome
from tests.support.fakes.answer_search import InMemorySearch, paper

RAG = [
    paper(
        "Retrieval augmented generation for knowledge intensive tasks",
        "Retrieval augmented generation is a method that combines a neural retriever with a sequence "
        "generator. The retriever fetches passages from a large corpus and the generator conditions on "
        "them. Retrieval augmented generation improved exact match on open-domain question answering by "
        "11 points.",
        source="arxiv",
        year=2021,
    ),
    paper(
        "Dense passage retrieval for open-domain question answering",
        "Dense passage retrieval learns dual encoders for questions and passages. Dense retrieval "
        "outperforms BM25 on question answering benchmarks. Retrieval augmented generation systems use "
        "dense passage retrieval to find evidence.",
        year=2025,
    ),
    paper(
        "Crop rotation and soil nitrogen",
        "Crop rotation increases soil nitrogen in temperate farms over five seasons of field trials.",
        year=2019,
    ),
]
QUESTION = "How does retrieval augmented generation work?"


@dataclass
class BrokenSearch:
    """A search port with a bug in it: every search raises a non-domain exception."""

    connector_names: list[str] = field(default_factory=lambda: ["openalex"])

    def connector_prefix(self, name: str) -> str:
        return name[:2]

    async def search(self, query: PaperQuery) -> SearchOutcome:
        raise RuntimeError("boom at /srv/secret/path")


@dataclass
class Harness:
    search: SearchPort
    traces: InMemoryTraceStore = field(default_factory=InMemoryTraceStore)
    broken_pipeline: bool = False  # building the pipeline raises (a bug in the composition)
    opened: int = 0
    closed: int = 0

    def service(self) -> AnswerService:
        @asynccontextmanager
        async def pipeline() -> AsyncIterator[AnswerPipeline]:
            self.opened += 1
            if self.broken_pipeline:
                raise RuntimeError("pipeline wiring failed at /srv/secret/path")
            try:
                yield AnswerPipeline(Retriever(service.search_port))
            finally:
                self.closed += 1

        service = AnswerService(pipeline, self.traces, self.search)
        return service


def harness(papers: list[FoundPaper] | None = None, *, fail: bool = False) -> Harness:
    return Harness(InMemorySearch(list(RAG if papers is None else papers), fail=fail))
