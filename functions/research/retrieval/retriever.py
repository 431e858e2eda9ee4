"""Retriever: every planned search at once, fused by reciprocal rank (functions/research/retrieval/fusion.py),
sources ranked by calibrated relevance to the question, and evidence chunks cut from abstracts (and from
the full text of the top sources when the preset and effort allow) and ranked against the question.
Three steps, each a stage of the answer engine: `rank` searches, ranks the sources and starts reading
the full text of the top ones; while it is read, `abstracts` gives the evidence of the abstracts alone
(the answer engine writes and streams its direct answer from it instead of waiting for the PDFs); `read`
awaits the full text and gives the whole evidence.

Retrieved text is data: chunks that carry instructions aimed at the model are quarantined here, never
shown to the writer, and reported by the Red-Team.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace

from functions.common.errors import DomainError
from functions.common.ml.embedder import MemoEmbedder
from functions.common.models import ExtractedPaper, FullTextPort, Paper
from functions.research.planning.answer import broadened
from functions.research.planning.plan import AnswerSettings, ResearchPlan
from functions.research.presets import EFFORT_LOW
from functions.research.retrieval.chunks import Bm25Index, bounded, chunk_spans
from functions.research.retrieval.evidence import (
    ABSTRACT,
    PAGE,
    EvidenceChunk,
    SourceDoc,
    chunk_id_for,
    published_at,
    source_id_for,
)
from functions.research.retrieval.fusion import FusedResults, SearchPort, fused_search
from functions.research.retrieval.relevance import RelevanceScorer
from functions.research.retrieval.screening import document_text
from functions.research.retrieval.untrusted_text import (
    Screened,
    hostile_source,
    own_links,
    prime,
    screen_in_order,
    tainted_sources,
    without_hostile,
)
from functions.research.retrieval.uploads import FULL_TEXT_BUDGET_SECONDS, DocumentPort, uploaded_sources
from functions.research.trace import RETRIEVER, TraceRecorder

MIN_COVERAGE = 0.5  # below this share of concepts covered, one broader round of searches runs
RELEVANCE_THRESHOLD = 0.5  # the relevance model's decision boundary (as in screening)
MAX_CHUNKS_PER_SOURCE = 3
# Chunk rank: its own match to the question, its source's relevance, and the focus mode's cues.
CHUNK_WEIGHTS = (0.6, 0.4, 0.15)


@dataclass
class Retrieval:
    sources: list[SourceDoc]
    chunks: list[EvidenceChunk]  # ranked, the ones the writer may use
    connectors_used: list[str]
    failed_connectors: dict[str, str]
    total_found: int
    filtered_sources: int  # fused sources left out as not relevant to the question
    # What was withheld as text addressed to the reader or a model: (chunk, the signals found).
    quarantined: list[tuple[EvidenceChunk, str]] = field(default_factory=list)
    hostile_sources: list[str] = field(default_factory=list)  # sources full of it: nothing of them used
    # Sources with some of it: their other sentences are evidence, but they have lost their authority
    # (never the direct answer, never a source that answers the question as a whole).
    tainted_sources: list[str] = field(default_factory=list)
    full_text_read: list[str] = field(default_factory=list)  # source ids
    notes: list[str] = field(default_factory=list)


FullTexts = tuple[dict[str, ExtractedPaper], list[str]]  # the papers read in full by source id, and notes


@dataclass
class Ranked:
    """The ranked sources, and the reading of the top ones' full text, under way."""

    plan: ResearchPlan[AnswerSettings]
    found: FusedResults
    filtered: int
    uploads: list[tuple[SourceDoc, ExtractedPaper]]
    sources: list[SourceDoc]
    reading: asyncio.Task[FullTexts]


def abstract_chunks(source: SourceDoc, abstract: str) -> list[EvidenceChunk]:
    chunks = []
    for start, end in chunk_spans(abstract):
        start, end = bounded(abstract, start, end)
        chunks.append(
            EvidenceChunk(
                chunk_id=chunk_id_for(source.source_id, ABSTRACT, None, start),
                source_id=source.source_id,
                text=abstract[start:end],
                score=0.0,
                origin=ABSTRACT,
                page=None,
                char_start=start,
                char_end=end,
            )
        )
    return chunks


def page_chunks(source_id: str, paper: ExtractedPaper) -> list[EvidenceChunk]:
    return [
        EvidenceChunk(
            chunk_id=chunk_id_for(source_id, PAGE, quote.page, quote.char_start),
            source_id=source_id,
            text=quote.quote,
            score=0.0,
            origin=PAGE,
            page=quote.page,
            char_start=quote.char_start,
            char_end=quote.char_end,
            section=quote.section,
        )
        for quote in paper.evidence
        if len(quote.quote) >= 20
    ]


class Retriever:
    def __init__(
        self,
        search: SearchPort,
        full_text: FullTextPort | None = None,
        documents: DocumentPort | None = None,
        scorer: RelevanceScorer | None = None,
        lexical_scorer: RelevanceScorer | None = None,
    ) -> None:
        self.search = search
        self.full_text = full_text
        self.documents = documents
        self._semantic = scorer
        self._lexical = lexical_scorer or RelevanceScorer(None)

    def _scorer(self, plan: ResearchPlan[AnswerSettings]) -> RelevanceScorer:
        if plan.settings.effort.embedded_sources > 0 and self._semantic is not None:
            return self._semantic
        return self._lexical

    def rank_sources(
        self,
        plan: ResearchPlan[AnswerSettings],
        fused: Sequence[tuple[Paper, float]],
        scorer: RelevanceScorer | None = None,
    ) -> tuple[list[SourceDoc], int]:
        if not fused:
            return [], 0
        scorer = scorer or self._scorer(plan)
        relevance = scorer.score(
            plan.goal,
            plan.aspects,
            [document_text(paper) for paper, _ in fused],
            max_embedded=plan.settings.effort.embedded_sources,
        )
        ranked: list[tuple[float, SourceDoc]] = []
        filtered = 0
        for (paper, rrf), found in zip(fused, relevance, strict=True):
            if found.probability < RELEVANCE_THRESHOLD:
                filtered += 1
                continue
            prefix = self.search.connector_prefix(paper.source)
            source = SourceDoc(
                source_id=source_id_for(prefix, paper.url),
                title=paper.title,
                url=paper.url,
                connector=paper.source,
                score=round(rrf, 5),
                snippet=paper.abstract or "",
                published_at=published_at(paper.year),
                year=paper.year,
                authors=list(paper.authors),
                doi=paper.doi,
                venue=paper.venue,
                citations=paper.citations,
                relevance=round(found.ranking_score, 4),
                answers_question=found.goal_probability >= RELEVANCE_THRESHOLD,
            )
            key = found.ranking_score
            if plan.settings.focus.prefer_peer_reviewed:
                reviewed = 0.1 * bool(paper.venue and paper.doi) + 0.05 * min(
                    1.0, math.log1p(paper.citations or 0) / 6
                )
                key += reviewed
            if plan.settings.focus.recent_years is not None and paper.year:
                key += 0.02 * paper.year  # newest first among relevant sources
            ranked.append((key, source))
        ranked.sort(key=lambda item: (-item[0], -item[1].score, item[1].source_id))
        unique: dict[str, SourceDoc] = {}
        for _, source in ranked:
            unique.setdefault(source.source_id, source)
        kept = list(unique.values())
        return kept[: plan.settings.max_sources], filtered + max(0, len(kept) - plan.settings.max_sources)

    def _prefetching_scorer(
        self, plan: ResearchPlan[AnswerSettings]
    ) -> tuple[RelevanceScorer, Callable[[list[Paper]], None] | None, list[asyncio.Task[object]]]:
        """The scorer for this answer and a hook that embeds each search's top papers (and the
        question's aspects) in a worker thread as soon as that search returns, so the embedding
        overlaps the wait for the slowest search instead of following it."""
        scorer = self._scorer(plan)
        tasks: list[asyncio.Task[object]] = []
        if scorer.embedder is None:
            return scorer, None, tasks
        memo = MemoEmbedder(scorer.embedder)
        per_search = max(2, plan.settings.effort.embedded_sources // max(1, len(plan.settings.searches)) + 1)
        aspects = list(dict.fromkeys([plan.goal, *plan.aspects]))
        tasks.append(asyncio.create_task(asyncio.to_thread(memo.embed, aspects)))

        def prefetch(papers: list[Paper]) -> None:
            texts = [document_text(paper) for paper in papers[:per_search]]
            if texts:
                tasks.append(asyncio.create_task(asyncio.to_thread(memo.embed, texts)))

        return RelevanceScorer(memo), prefetch, tasks

    async def _read_full_text(
        self, sources: list[SourceDoc], plan: ResearchPlan[AnswerSettings], trace: TraceRecorder
    ) -> FullTexts:
        if self.full_text is None or plan.settings.full_text_papers <= 0:
            return {}, []
        chosen = [s for s in sources if s.document_id is None][: plan.settings.full_text_papers]
        notes: list[str] = []
        full_text = self.full_text
        focus = [facet.phrase for facet in plan.facets]

        async def one(source: SourceDoc) -> tuple[str, ExtractedPaper | None]:
            try:
                paper = await full_text.extract(
                    source.url,
                    focus_areas=focus,
                    max_length=20000,
                    budget_seconds=FULL_TEXT_BUDGET_SECONDS,
                    team_id=plan.settings.team_id,
                )
            except DomainError as exc:
                notes.append(f"full text of {source.source_id} unavailable: {exc.message}")
                return source.source_id, None
            except Exception as exc:  # an extraction bug must not lose the abstracts' answer
                notes.append(f"full text of {source.source_id} failed: {type(exc).__name__}")
                return source.source_id, None
            return source.source_id, paper if paper.success else None

        try:
            async with asyncio.timeout(FULL_TEXT_BUDGET_SECONDS + 1):
                results = await asyncio.gather(*(one(source) for source in chosen))
        except TimeoutError:
            notes.append(f"full text reading stopped at its {FULL_TEXT_BUDGET_SECONDS:.0f} s budget")
            results = []
        papers = {source_id: paper for source_id, paper in results if paper is not None}
        await trace.emit(
            RETRIEVER,
            "retrieve",
            "full_text_read",
            requested=[s.source_id for s in chosen],
            read=sorted(papers),
        )
        return papers, notes

    def rank_chunks(
        self, plan: ResearchPlan[AnswerSettings], sources: list[SourceDoc], chunks: list[EvidenceChunk]
    ) -> list[EvidenceChunk]:
        if not chunks:
            return []
        query = " ".join([plan.goal, *(facet.phrase for facet in plan.facets)])
        lexical = Bm25Index([chunk.text for chunk in chunks]).scores(query)
        relevance = {source.source_id: source.relevance for source in sources}
        w_text, w_source, w_cue = CHUNK_WEIGHTS
        scored = []
        for chunk, text_score in zip(chunks, lexical, strict=True):
            cue = 1.0 if any(c in chunk.text.lower() for c in plan.settings.focus.chunk_cues) else 0.0
            value = w_text * text_score + w_source * relevance.get(chunk.source_id, 0.0) + w_cue * cue
            scored.append(_with_score(chunk, min(1.0, value)))
        scored.sort(key=lambda c: (-c.score, c.chunk_id))
        picked: list[EvidenceChunk] = []
        per_source: dict[str, int] = {}
        for chunk in scored:
            if per_source.get(chunk.source_id, 0) >= MAX_CHUNKS_PER_SOURCE:
                continue
            per_source[chunk.source_id] = per_source.get(chunk.source_id, 0) + 1
            picked.append(chunk)
            if len(picked) >= plan.settings.effort.chunks:
                break
        return picked

    async def rank(
        self, plan: ResearchPlan[AnswerSettings], trace: TraceRecorder, documents: Sequence[str] = ()
    ) -> Ranked:
        """Every planned search (and one broader round when concepts are left uncovered), the sources
        ranked, and the full text of the top ones being read (a task: `read` awaits it)."""
        uploads = await uploaded_sources(plan, documents, self.documents, self.full_text, self.search)
        scorer, prefetch, prefetched = self._prefetching_scorer(plan)
        found = await fused_search(self.search, plan, trace, prefetch)
        await asyncio.gather(*prefetched)
        sources, filtered = await asyncio.to_thread(self.rank_sources, plan, found.fused, scorer)
        coverage = concept_coverage(plan, sources)
        wider = broadened(plan) if plan.settings.effort.name != EFFORT_LOW else []
        if wider and coverage < MIN_COVERAGE:  # the plan's searches left concepts uncovered: look wider
            await trace.emit(
                RETRIEVER, "search", "search_expanded", coverage=coverage, queries=[s.text for s in wider]
            )
            more = await fused_search(
                self.search, replace(plan, settings=replace(plan.settings, searches=wider)), trace, prefetch
            )
            await asyncio.gather(*prefetched)
            found = found.merged(more)
            sources, filtered = await asyncio.to_thread(self.rank_sources, plan, found.fused, scorer)
        await trace.emit(
            RETRIEVER,
            "rank",
            "sources_ranked",
            fused=len(found.fused),
            kept=[s.source_id for s in sources],
            filtered=filtered,
            method=self._scorer(plan).method,
        )
        reading = asyncio.create_task(self._read_full_text(sources, plan, trace))
        return Ranked(plan, found, filtered, uploads, sources, reading)

    async def abstracts(self, ranked: Ranked, trace: TraceRecorder) -> Retrieval:
        """The evidence of the ranked sources' abstracts (and uploads) alone, while the full text is read
        (not announced in the trace: `read` announces the whole evidence)."""
        early = await self._evidence(ranked.plan, trace, ranked.sources, {}, ranked.uploads, announce=False)
        return self._retrieval(ranked, early, {}, [])

    async def read(self, ranked: Ranked, trace: TraceRecorder) -> Retrieval:
        """The whole evidence, once the full text is read."""
        full_texts, notes = await ranked.reading
        evidence = await self._evidence(ranked.plan, trace, ranked.sources, full_texts, ranked.uploads)
        return self._retrieval(ranked, evidence, full_texts, notes)

    def reads_full_text(self, plan: ResearchPlan[AnswerSettings]) -> bool:
        return self.full_text is not None and plan.settings.full_text_papers > 0

    @staticmethod
    def _retrieval(
        ranked: Ranked,
        evidence: tuple[list[SourceDoc], list[EvidenceChunk], list[tuple[EvidenceChunk, str]], list[str]],
        full_texts: dict[str, ExtractedPaper],
        notes: list[str],
    ) -> Retrieval:
        found, uploads = ranked.found, ranked.uploads
        sources, chunks, quarantined, hostile = evidence
        used = found.connectors_used
        tainted = sorted(
            tainted_sources((chunk.source_id, signals) for chunk, signals in quarantined) - set(hostile)
        )
        return Retrieval(
            sources=sources,
            chunks=chunks,
            connectors_used=used + (["library"] if uploads and "library" not in used else []),
            failed_connectors=found.failed_connectors,
            total_found=len(found.fused),
            filtered_sources=ranked.filtered,
            quarantined=quarantined,
            hostile_sources=hostile,
            tainted_sources=tainted,
            full_text_read=sorted(full_texts),
            notes=notes,
        )

    async def _evidence(
        self,
        plan: ResearchPlan[AnswerSettings],
        trace: TraceRecorder,
        sources: list[SourceDoc],
        full_texts: dict[str, ExtractedPaper],
        uploads: list[tuple[SourceDoc, ExtractedPaper]],
        *,
        announce: bool = True,
    ) -> tuple[list[SourceDoc], list[EvidenceChunk], list[tuple[EvidenceChunk, str]], list[str]]:
        """The chunks of the kept sources' abstracts, of what was read in full and of the uploaded
        documents, screened, ranked and cut to the effort's budget (`announce`: in the trace)."""
        candidates: list[EvidenceChunk] = []
        for source in sources:
            candidates += abstract_chunks(source, source.snippet)
            if source.source_id in full_texts:
                candidates += page_chunks(source.source_id, full_texts[source.source_id])
        for source, paper in uploads:
            candidates += page_chunks(source.source_id, paper)
        sources = [source for source, _ in uploads] + sources
        # off the event loop: the embedder may judge a few sentences (functions/research/retrieval/directive_intents.py)
        clean, quarantined, hostile = await asyncio.to_thread(screen_chunks, candidates, sources)
        tainted = tainted_sources((chunk.source_id, signals) for chunk, signals in quarantined)
        sources = [scrubbed(source, hostile, tainted) for source in sources]
        chunks = await asyncio.to_thread(self.rank_chunks, plan, sources, clean)
        if not announce:
            return sources, chunks, quarantined, sorted(hostile)
        covered = covered_sub_questions(plan, chunks)
        await trace.emit(
            RETRIEVER,
            "retrieve",
            "retrieval_completed",
            sources=len(sources),
            chunks=[c.chunk_id for c in chunks],
            quarantined=[c.chunk_id for c, _ in quarantined],
            hostile_sources=sorted(hostile),
            coverage=round(len(covered) / len(plan.sub_questions), 3) if plan.sub_questions else 0.0,
        )
        return sources, chunks, quarantined, sorted(hostile)


def concept_coverage(plan: ResearchPlan[AnswerSettings], sources: Sequence[SourceDoc]) -> float:
    """Share of the question's concepts that some kept source's abstract mentions."""
    if not plan.facets:
        return 1.0
    texts = [f"{source.title}. {source.snippet}" for source in sources]
    if not texts:
        return 0.0
    index = Bm25Index(texts)
    hit = sum(1 for facet in plan.facets if index.mentions(facet.phrase))
    return round(hit / len(plan.facets), 3)


def covered_sub_questions(plan: ResearchPlan[AnswerSettings], chunks: Sequence[EvidenceChunk]) -> list[str]:
    if not chunks:
        return []
    index = Bm25Index([chunk.text for chunk in chunks])
    phrases = ["", *(facet.phrase for facet in plan.facets)]  # the whole question, then each concept
    return [
        question
        for question, phrase in zip(plan.sub_questions, phrases, strict=False)
        if index.mentions(phrase or question)
    ]


def source_links(source: SourceDoc) -> frozenset[str]:
    return own_links(source.url, source.doi)


def screen_chunks(
    candidates: Sequence[EvidenceChunk], sources: Sequence[SourceDoc]
) -> tuple[list[EvidenceChunk], list[tuple[EvidenceChunk, str]], set[str]]:
    """Retrieved text is data: each chunk is judged sentence by sentence, and only its runs of clean
    sentences (verbatim, with their own offsets) stay evidence; a sentence addressed to the reader or
    to a model is quarantined, and a source full of them is withheld whole. Duplicate texts count once."""
    links = {source.source_id: source_links(source) for source in sources}
    prime(chunk.text for chunk in candidates)
    order = sorted(range(len(candidates)), key=lambda i: _place(candidates[i]))
    results = screen_in_order(
        [
            (
                candidates[i].text,
                links.get(candidates[i].source_id, frozenset()),
                n > 0 and _follows(candidates[order[n - 1]], candidates[i]),
            )
            for n, i in enumerate(order)
        ]
    )
    by_index = dict(zip(order, results, strict=True))
    screened: list[tuple[EvidenceChunk, Screened]] = [
        (chunk, by_index[i]) for i, chunk in enumerate(candidates)
    ]
    by_source: dict[str, list[Screened]] = {}
    for chunk, result in screened:
        by_source.setdefault(chunk.source_id, []).append(result)
    hostile = {source_id for source_id, results in by_source.items() if hostile_source(results)}
    clean: list[EvidenceChunk] = []
    quarantined: list[tuple[EvidenceChunk, str]] = []
    seen_text: set[str] = set()
    for chunk, result in screened:
        for clause in result.hostile:
            quarantined.append((_part(chunk, clause.start, clause.end), ", ".join(clause.verdict.signals)))
        if chunk.source_id in hostile:
            continue
        for start, end in result.clean_runs:
            part = _part(chunk, start, end)
            key = " ".join(part.text.lower().split())
            if len(key) < 20 or key in seen_text:
                continue
            seen_text.add(key)
            clean.append(part)
    return clean, quarantined, hostile


def _place(chunk: EvidenceChunk) -> tuple[str, str, int, int]:
    return chunk.source_id, chunk.origin, chunk.page or 0, chunk.char_start


def _follows(before: EvidenceChunk, chunk: EvidenceChunk) -> bool:
    """`chunk` continues the text of `before` (same passage, no gap but white space)."""
    return (
        _place(before)[:3] == _place(chunk)[:3]
        and before.char_start < chunk.char_start <= before.char_end + 3
    )


def _part(chunk: EvidenceChunk, start: int, end: int) -> EvidenceChunk:
    """The span [start, end) of a chunk's text as a chunk of its own (offsets into the same origin)."""
    if start == 0 and end == len(chunk.text):
        return chunk
    char_start = chunk.char_start + start
    return replace(
        chunk,
        chunk_id=chunk_id_for(chunk.source_id, chunk.origin, chunk.page, char_start),
        text=chunk.text[start:end],
        char_start=char_start,
        char_end=chunk.char_start + end,
    )


def scrubbed(source: SourceDoc, hostile: set[str], tainted: Collection[str] = ()) -> SourceDoc:
    """The source as a response shows it: its abstract without sentences addressed to the reader or a
    model (nothing of it when the source is full of them); one that carries such a sentence no longer
    answers the question as a whole."""
    if source.source_id in hostile:
        return replace(source, snippet="", answers_question=False)
    snippet = without_hostile(source.snippet, source_links(source))
    if source.source_id in tainted:
        return replace(source, snippet=snippet, answers_question=False)
    return source if snippet == source.snippet else replace(source, snippet=snippet)


def _with_score(chunk: EvidenceChunk, score: float) -> EvidenceChunk:
    return replace(chunk, score=round(score, 4))
