"""ClaimChecker: the evidence for one claim, read from the sources the caller names or found by search,
and the claim's verdict over it (functions/research/claims/verdict.py).

With sources (URLs, DOIs, arXiv ids, the team's library documents, mixed), each is read in full through
the extraction service, the answer pipeline's full-text port, under the same budget and provider turns
as the answer pipeline's reading; a library document is the team's own (another team's id is not found).
A source that cannot be read is a note, not a failure. Without sources, the answer pipeline's retrieval
finds the evidence: the claim is planned and searched as a question would be, the top sources read in
full as the default preset reads them. Either way the evidence is screened as the pipeline screens it:
sentences addressed to the reader or a model are never evidence.

Domain code only: the ports (full text, documents, the retriever, how a named source is read) are handed
in by a composition root (functions/answer/wiring.py for the API).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from functions.common.errors import DomainError, NotFound
from functions.common.models import ExtractedPaper, FullTextPort
from functions.research.claims.verdict import INSUFFICIENT, ON_TOPIC, ClaimVerdict, claim_coverage, judge
from functions.research.planning.answer import plan_answer
from functions.research.planning.plan import AnswerSettings, ResearchPlan
from functions.research.retrieval import evidence as located
from functions.research.retrieval.evidence import EvidenceChunk, SourceDoc, published_at, source_id_for
from functions.research.retrieval.retriever import Retriever, abstract_chunks, page_chunks, screen_chunks
from functions.research.retrieval.uploads import FULL_TEXT_BUDGET_SECONDS, DocumentPort
from functions.research.trace import TraceRecorder

# A source the caller names has this id prefix; a library document the library connector's.
NAMED_PREFIX = "src"
LIBRARY = "library"


@dataclass(frozen=True)
class NamedSource:
    """A source as the caller named it, and what the extraction service reads it by."""

    given: str
    address: str
    document_id: str | None = None  # a library document


SourceLocator = Callable[[str, int], NamedSource]  # (as given, its index): raises InvalidInput


class PagesPort(Protocol):
    async def page_texts(self, source_url: str, team_id: str | None = None) -> list[tuple[int, str]]:
        """The normalised text of each page of a source already extracted (its evidence offsets index
        into these); empty when none is kept."""
        ...


@dataclass(frozen=True)
class SourceRead:
    """A source of the evidence: the caller's (`given` as named) or one the search found."""

    given: str
    source_id: str
    title: str
    url: str
    read: bool
    note: str | None = None
    page_count: int = 0


@dataclass
class ClaimCheck:
    claim: str
    verdict: ClaimVerdict
    sources: list[SourceRead]
    notes: list[str] = field(default_factory=list)


@dataclass
class Evidence:
    """What was gathered for the claim: the screened chunks, their sources and what went wrong."""

    chunks: list[EvidenceChunk]
    sources: list[SourceRead]
    notes: list[str]


@dataclass
class ClaimChecker:
    """`locate` says what a named source is; `pages` gives a read source's whole text (without it, the
    extraction's own evidence quotes stand for it); `library_prefix` is the library connector's id prefix."""

    retriever: Retriever
    full_text: FullTextPort
    locate: SourceLocator
    pages: PagesPort | None = None
    documents: DocumentPort | None = None
    library_prefix: str = "lib"

    def named(self, sources: Sequence[str], team_id: str) -> list[NamedSource]:
        """The sources the caller names, checked before anything is fetched: an id that names nothing
        is InvalidInput, a library document the team does not have is NotFound. Duplicates count once."""
        named: dict[str, NamedSource] = {}
        for index, given in enumerate(sources):
            source = self.locate(given, index)
            if source.document_id is not None and (
                self.documents is None or self.documents.get(team_id, source.document_id) is None
            ):
                raise NotFound(f"document {source.document_id} not found")
            named.setdefault(source.address, source)
        return list(named.values())

    async def check(self, claim: str, sources: Sequence[str], team_id: str) -> ClaimCheck:
        plan = plan_answer(claim, team_id=team_id)
        if sources:
            evidence = await self.read_named(plan, self.named(sources, team_id))
        else:
            evidence = await self.searched(plan)
        source_of = {source.source_id: source.given for source in evidence.sources}
        verdict = judge(claim, evidence.chunks, source_of)
        if not any(source.read for source in evidence.sources):
            why = "no source could be read" if sources else "the search found no source on the claim"
            verdict = ClaimVerdict(INSUFFICIENT, 0.0, [], [why])
        return ClaimCheck(claim, verdict, evidence.sources, [*evidence.notes, *verdict.notes])

    async def read_named(self, plan: ResearchPlan[AnswerSettings], named: Sequence[NamedSource]) -> Evidence:
        """Every named source read at once; each one's page evidence and abstract, screened."""
        focus = [facet.phrase for facet in plan.facets]
        papers = await asyncio.gather(*(self._read(source, focus, plan.settings.team_id) for source in named))
        evidence = Evidence([], [], [])
        candidates: list[EvidenceChunk] = []
        docs: list[SourceDoc] = []
        for source, (paper, failure) in zip(named, papers, strict=True):
            prefix = self.library_prefix if source.document_id else NAMED_PREFIX
            doc = as_source(source, paper, source_id_for(prefix, source.address))
            if paper is None:
                evidence.sources.append(
                    SourceRead(source.given, doc.source_id, "", source.address, False, failure)
                )
                evidence.notes.append(f"{source.given} could not be read: {failure}")
                continue
            docs.append(doc)
            candidates += abstract_chunks(doc, paper.abstract) + await self._page_chunks(
                source, doc, paper, plan
            )
            evidence.sources.append(
                SourceRead(source.given, doc.source_id, doc.title, doc.url, True, page_count=paper.page_count)
            )
        clean, quarantined, hostile = await asyncio.to_thread(screen_chunks, candidates, docs)
        evidence.chunks = clean
        evidence.notes += screening_notes(len(quarantined), hostile)
        return evidence

    async def _page_chunks(
        self, source: NamedSource, doc: SourceDoc, paper: ExtractedPaper, plan: ResearchPlan[AnswerSettings]
    ) -> list[EvidenceChunk]:
        """The extraction's evidence quotes and every sentence of the source's pages, at their page
        offsets: a claim may restate any sentence, not only the ones the extraction picked."""
        texts: list[tuple[int, str]] = []
        if self.pages is not None:
            with contextlib.suppress(DomainError):  # gone since it was read: its quotes still stand
                texts = await self.pages.page_texts(source.address, plan.settings.team_id)
        # The extraction's quotes first: its sentences are cut by layout, without a page's running heads.
        # Of the rest, only what is about the claim is screened and weighed (most of a paper is not).
        claim = plan.goal
        whole = [
            chunk
            for number, text in texts
            for chunk in text_chunks(doc, number, text)
            if claim_coverage(claim, chunk.text) >= ON_TOPIC
        ]
        return page_chunks(doc.source_id, paper) + whole

    async def _read(
        self, source: NamedSource, focus: list[str], team_id: str | None
    ) -> tuple[ExtractedPaper | None, str | None]:
        """The source's extracted paper, or why it could not be read."""
        try:
            paper = await self.full_text.extract(
                source.address,
                focus_areas=focus,
                max_length=20000,
                budget_seconds=FULL_TEXT_BUDGET_SECONDS,
                team_id=team_id,
            )
        except DomainError as exc:
            return None, exc.message
        if not paper.success:
            return None, paper.failure_reason or "its content could not be parsed"
        return paper, None

    async def searched(self, plan: ResearchPlan[AnswerSettings]) -> Evidence:
        """The answer pipeline's retrieval for the claim as a question: ranked, read, screened chunks."""
        trace = TraceRecorder(f"claim-{uuid.uuid4().hex}")
        ranked = await self.retriever.rank(plan, trace)
        retrieval = await self.retriever.read(ranked, trace)
        read = set(retrieval.full_text_read)
        evidence = Evidence(list(retrieval.chunks), [], list(retrieval.notes))
        for source in retrieval.sources:
            evidence.sources.append(
                SourceRead(
                    source.url,
                    source.source_id,
                    source.title,
                    source.url,
                    True,
                    None if source.source_id in read else "abstract only",
                )
            )
        for connector, why in sorted(retrieval.failed_connectors.items()):
            evidence.notes.append(f"the {connector} search failed: {why}")
        evidence.notes += screening_notes(len(retrieval.quarantined), retrieval.hostile_sources)
        return evidence


def as_source(source: NamedSource, paper: ExtractedPaper | None, source_id: str) -> SourceDoc:
    """A named source as the screening and the evidence see it."""
    found = paper or ExtractedPaper(source_url=source.address, canonical_id=source.address, success=False)
    return SourceDoc(
        source_id=source_id,
        title=found.title,
        url=source.address,
        connector=LIBRARY if source.document_id else NAMED_PREFIX,
        score=1.0,
        snippet=found.abstract,
        published_at=published_at(found.year),
        year=found.year,
        authors=list(found.authors),
        doi=found.identifiers.get("doi"),
        venue=found.venue,
        relevance=1.0,
        document_id=source.document_id,
    )


def text_chunks(doc: SourceDoc, page: int, text: str) -> list[EvidenceChunk]:
    """A page's sentences as evidence chunks, cut as abstracts are, each located by its page offsets (the
    page text keeps the PDF's line breaks; a chunk has them as spaces, the same length)."""
    return [
        replace(
            chunk,
            chunk_id=located.chunk_id_for(doc.source_id, located.PAGE, page, chunk.char_start),
            text=chunk.text.replace("\n", " "),
            origin=located.PAGE,
            page=page,
        )
        for chunk in abstract_chunks(doc, text)
    ]


def screening_notes(quarantined: int, hostile: Sequence[str] | set[str]) -> list[str]:
    notes = []
    if quarantined:
        notes.append(f"{quarantined} passage(s) addressed to the reader or a model were not used as evidence")
    if hostile:
        notes.append(f"{len(hostile)} source(s) full of such text were not used at all")
    return notes
