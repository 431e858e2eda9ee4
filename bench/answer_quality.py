"""Benchmark: the answer engine (the synchronous /v1/query pipeline) on the research-quality goals.

    .venv/bin/python -m bench.answer_quality [--split dev|heldout|all] [--preset fast|comprehensive] [--verbose]
                                             [--no-politeness] [--no-latency]

The 21 goals of `bench.quality` (fixed before any tuning, dev and held-out halves) are asked of the
answer engine over the same offline scholarly web (`bench.corpus_web`: the 20 real corpus papers with
their real PDFs and ~1000 real distractors, every record re-dated into the last ten years as that bench
does). The engine is the API's own composition root (`functions.answer.wiring.build_service`) inside the
embedded AWS account, asked as `/v1/query` asks it (`routes.trust.answer_request` over a validated
`QueryRequest`), with no LLM configured (the extractive writer, lexical and numeric verification).
Presets: `fast` (abstracts only, reasoning_effort low) and `comprehensive` (full text of the top papers,
reasoning_effort medium); each preset runs with a fresh service and search cache. Conditions, printed in
the header: the project's real default provider intervals (`--no-politeness` zeroes them) and a simulated
network, 0.3-1.5 s per API call and 1-4 s per PDF (`--no-latency` answers at once).

Scored per goal and preset:
  - outcome: an answerable goal succeeds when the answer is not refused and at least one expected corpus
    paper is among the CITED sources; an unanswerable goal succeeds when it is refused (the refusal code
    is recorded);
  - cited recall: expected corpus papers among the cited sources / expected; precision: share of the cited
    sources that are expected corpus papers (a cited distractor is noise);
  - citation offsets: an "abstract" citation must equal the abstract the pipeline saw (its source's
    snippet) sliced [chunk_start:chunk_end]; a "page" citation must be found verbatim (after
    `bench.quality`'s normalisation) on that page of the real PDF, read here by pypdf;
  - claim verdicts: shares of the draft's claims supported, partially supported, unsupported (removed);
  - latency: wall seconds of the answer; and, per preset, the time to the first verified sentence (the
    first `answer_delta` a streaming client hears) against the whole stream, p50/p95 over the goals.
  - readability of an answer that is not refused (issue 21): shown sentences in a paper's first person or
    self-reference ("we", "our", "this paper"; target 0), the papers' own reference markers left in shown
    sentences ("[8, 9]", "(Smith et al., 2019)"; target 0), headings that are the plan's facets (100%),
    abbreviations expanded at their first use where the cited source defines them ("long form (ABBR)" in
    any of its retrieved chunks; >= 90%), a direct-answer paragraph first (100%), and each shown
    sentence's numbers and polarity the same as its quote's (100%: no number the quote lacks, none of the
    quote's numbers dropped, reference markers aside; negated exactly when the quote is).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import math
import os
import re
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bench.corpus_web import (
    CorpusMissing,
    CorpusWeb,
    Figure,
    WebPaper,
    add_condition_options,
    describe_conditions,
    figure_printer,
    literature,
)
from bench.quality import GOALS, WINDOW_YEARS, Goal, Matcher, _upstream_queries, quote_found

if TYPE_CHECKING:
    from functions.answer.service import AnswerService
    from functions.common.models import Paper
    from functions.research.pipeline import AnswerRequest, AnswerResult
    from functions.search.models import PaperQuery, SearchOutcome

# preset -> the reasoning effort it is asked with
PRESET_EFFORTS = {"fast": "low", "comprehensive": "medium"}
ANSWER_TIMEOUT_SECONDS = 120.0


# --- what the searches returned (for the failure analysis only) -------------------------------------------


@dataclass
class SearchRecord:
    query: str
    concepts: list[list[str]] | None
    papers: list[Paper]
    error: str | None = None


class RecordingSearch:
    """The search port, unchanged, remembering what every search of the current goal returned."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.records: list[SearchRecord] = []

    @property
    def connector_names(self) -> list[str]:
        names: list[str] = self.inner.connector_names
        return names

    def connector_prefix(self, name: str) -> str:
        prefix: str = self.inner.connector_prefix(name)
        return prefix

    async def search(self, query: PaperQuery) -> SearchOutcome:
        try:
            outcome: SearchOutcome = await self.inner.search(query)
        except Exception as exc:
            self.records.append(SearchRecord(query.query, query.concepts, [], f"{type(exc).__name__}: {exc}"))
            raise
        self.records.append(SearchRecord(query.query, query.concepts, list(outcome.papers)))
        return outcome


# --- one goal --------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    goal: Goal
    preset: str
    status: str = "NOT_RUN"  # answered | refused | error
    seconds: float = 0.0
    refusal_code: str | None = None
    refusal_reason: str | None = None
    confidence: float = 0.0
    cited_sources: list[str] = field(default_factory=list)  # source ids
    cited_expected: list[str] = field(default_factory=list)  # expected corpus ids among the cited sources
    cited_expected_sources: int = 0  # cited sources that are an expected corpus paper
    kept_expected: list[str] = field(default_factory=list)  # expected corpus ids among the kept sources
    offsets_abstract: int = 0
    offsets_abstract_ok: int = 0
    offsets_page: int = 0
    offsets_page_ok: int = 0
    offsets_page_elsewhere: int = 0  # in the PDF, not on the cited page
    offsets_page_unverifiable: int = 0  # a page citation of a source with no corpus PDF
    offset_failures: list[str] = field(default_factory=list)
    verdicts: Counter[str] = field(default_factory=Counter)
    first_sentence: float | None = None  # seconds to the first verified sentence (answer_delta)
    details: list[str] = field(default_factory=list)  # the failure analysis, printed with --verbose
    cause: str = ""  # one line: why an answerable goal missed, or why a refusal did not happen
    error: str | None = None
    readability: Readability = field(default_factory=lambda: Readability())

    @property
    def answerable(self) -> bool:
        return bool(self.goal.expected)

    @property
    def recall(self) -> float:
        return len(self.cited_expected) / len(self.goal.expected) if self.goal.expected else 0.0

    @property
    def precision(self) -> float | None:
        return self.cited_expected_sources / len(self.cited_sources) if self.cited_sources else None

    @property
    def success(self) -> bool:
        if not self.answerable:
            return self.status == "refused"
        return self.status == "answered" and bool(self.cited_expected)


@dataclass
class Readability:
    """What a reader of one answer meets (issue 21's figures); all zero for a refusal."""

    sentences: int = 0
    first_person: int = 0
    foreign_markers: int = 0
    headings: int = 0
    facet_headings: int = 0
    abbreviations_defined: int = 0
    abbreviations_expanded: int = 0
    direct_answer: bool = False
    faithful: int = 0  # numbers and polarity as the quote's
    unfaithful: list[str] = field(default_factory=list)


_NEGATION = re.compile(r"\b(?:no|not|never|cannot|neither|nor|without|fails? to|failed to)\b|n't\b", re.I)


def _faithful(claim: str, quote: str) -> bool:
    from functions.research.checking.verifier import numbers_in
    from functions.research.writing.attribution import without_markers

    source = without_markers(quote)
    same_numbers = sorted(set(numbers_in(claim))) == sorted(set(numbers_in(source)))
    return same_numbers and bool(_NEGATION.search(claim)) == bool(_NEGATION.search(source))


def score_readability(outcome: Outcome, result: AnswerResult, request: AnswerRequest) -> None:
    from functions.research.pipeline import plan_for
    from functions.research.writing.abbreviations import defines, definition_of, definitions, used
    from functions.research.writing.attribution import foreign_markers, speaks_for_itself
    from functions.research.writing.writer import facet_heading

    if result.decision.refusal:
        return
    score = outcome.readability
    chunks = {chunk.chunk_id: chunk for chunk in result.chunks}
    facets = {facet_heading(facet) for facet in plan_for(request).facets}
    headings = re.findall(r"^#+\s*(.+?)\s*$", result.answer, flags=re.M)
    score.headings, score.facet_headings = len(headings), sum(1 for h in headings if h in facets)
    opening = result.answer.split("\n\n", 1)[0]
    score.direct_answer = not opening.startswith("#") and "the question as a whole" in opening
    by_source: dict[str, list[tuple[str, str]]] = {}
    for chunk in result.chunks:
        by_source.setdefault(chunk.source_id, []).append((chunk.chunk_id, chunk.text))
    seen: set[str] = set()
    for sentence in result.sentences:
        score.sentences += 1
        score.first_person += speaks_for_itself(sentence.text)
        score.foreign_markers += foreign_markers(sentence.text)
        quote = chunks[sentence.chunk_ids[0]]
        if _faithful(sentence.claim, quote.text):
            score.faithful += 1
        else:
            score.unfaithful.append(f"{sentence.claim[:90]!r} <- {quote.text[:90]!r}")
        known = definitions(by_source.get(quote.source_id, []))
        for token in used(sentence.text):
            definition = definition_of(token, known)
            if definition is None or definition.abbreviation in seen:
                continue
            seen.add(definition.abbreviation)
            score.abbreviations_defined += 1
            before = sentence.text.split(token, 1)[0].lower()
            score.abbreviations_expanded += (
                defines(sentence.text, token) or definition.long_form.lower() in before
            )


def _paper_record(paper: Paper) -> dict[str, Any]:
    return {"doi": paper.doi, "url": paper.url, "title": paper.title}


def score_citations(outcome: Outcome, result: AnswerResult, matcher: Matcher) -> dict[str, WebPaper | None]:
    sources = {source.source_id: source for source in result.sources}
    corpus_of = {sid: matcher.corpus_paper(source.to_dict()) for sid, source in sources.items()}
    expected = set(outcome.goal.expected)
    outcome.kept_expected = sorted(
        {p.corpus_id for p in corpus_of.values() if p is not None and p.corpus_id in expected}
    )
    outcome.cited_sources = list(dict.fromkeys(c.source_id for c in result.citations))
    for sid in outcome.cited_sources:
        paper = corpus_of.get(sid)
        if paper is not None and paper.corpus_id in expected:
            outcome.cited_expected_sources += 1
            if paper.corpus_id not in outcome.cited_expected:
                outcome.cited_expected.append(paper.corpus_id)
    for citation in result.citations:
        source = sources.get(citation.source_id)
        if citation.origin == "abstract":
            outcome.offsets_abstract += 1
            seen = source.snippet if source is not None else ""
            if seen[citation.chunk_start : citation.chunk_end] == citation.snippet:
                outcome.offsets_abstract_ok += 1
            else:
                outcome.offset_failures.append(
                    f"{citation.citation_id} abstract[{citation.chunk_start}:{citation.chunk_end}] of "
                    f"{citation.source_id} != snippet {citation.snippet[:80]!r}"
                )
        elif citation.origin == "page":
            outcome.offsets_page += 1
            paper = corpus_of.get(citation.source_id)
            if paper is None or paper.pdf_path is None:
                outcome.offsets_page_unverifiable += 1
                continue
            on_page, anywhere = quote_found(citation.snippet, paper.pdf_path, int(citation.page or 0))
            if on_page:
                outcome.offsets_page_ok += 1
            else:
                outcome.offsets_page_elsewhere += anywhere
                where = "elsewhere in the PDF" if anywhere else "nowhere in the PDF"
                outcome.offset_failures.append(
                    f"{citation.citation_id} page {citation.page} of {paper.corpus_id}: {where}: "
                    f"{citation.snippet[:80]!r}"
                )
    return corpus_of


def analyse(
    outcome: Outcome,
    result: AnswerResult,
    request: AnswerRequest,
    events: list[dict[str, Any]],
    records: list[SearchRecord],
    matcher: Matcher,
    corpus_of: dict[str, WebPaper | None],
    upstream: list[str],
) -> None:
    """What the planner searched, which sources were kept or filtered and why, what the gate decided."""
    from functions.answer.wiring import relevance_scorer
    from functions.research.pipeline import plan_for
    from functions.research.retrieval.relevance import RelevanceScorer
    from functions.research.retrieval.screening import document_text

    out = outcome.details
    by_name: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_name.setdefault(str(event.get("name")), []).append(event.get("payload") or {})
    plan = (by_name.get("plan_created") or [{}])[0]
    out.append(f"plan: concepts {plan.get('concepts')}; queries {plan.get('queries')}")
    for expanded in by_name.get("search_expanded", []):
        out.append(f"search expanded (coverage {expanded.get('coverage')}): {expanded.get('queries')}")
    for record in records:
        found = f"error {record.error}" if record.error else f"{len(record.papers)} papers"
        out.append(f"search {record.query!r} concepts={record.concepts}: {found}")
    out.append(f"upstream requests ({len(upstream)}):")
    out += [f"  {line[:150]}" for line in upstream]
    ranked = (by_name.get("sources_ranked") or [{}])[0]
    out.append(
        f"sources: fused {ranked.get('fused')}, kept {len(result.sources)}, filtered {ranked.get('filtered')} "
        f"(method {ranked.get('method')})"
    )
    chunk_source = {chunk.chunk_id: chunk.source_id for chunk in result.chunks}
    draft = (by_name.get("draft_written") or [{}])[0]
    drafted_sources = {chunk_source.get(str(i)) for i in draft.get("cited_chunk_ids") or []}
    draft_line = f"draft: {draft.get('writer')} writer, {draft.get('sentences')} sentence(s) citing {len(drafted_sources)} source(s)"

    expected = set(outcome.goal.expected)
    for source in result.sources:
        match = corpus_of.get(source.source_id)
        corpus_id = match.corpus_id if match is not None else None
        tag = ("EXPECTED " if corpus_id in expected else "corpus ") + corpus_id if corpus_id else "distractor"
        cited = "cited" if source.source_id in outcome.cited_sources else "-"
        if cited == "-" and source.source_id in drafted_sources:
            cited = "draft"
        out.append(
            f"  kept {source.source_id} rel {source.relevance:.2f} whole-q {source.answers_question!s:<5} "
            f"{cited:<5} [{tag}] {source.title[:70]}"
        )
    for read in by_name.get("full_text_read", []):
        out.append(f"full text requested {read.get('requested')} read {read.get('read')}")
    out.append(draft_line)

    # each expected paper's fate: never returned / filtered as irrelevant / cut by max_sources / not cited
    plan_obj = plan_for(request)
    scorer = relevance_scorer() if plan_obj.settings.effort.embedded_sources > 0 else RelevanceScorer(None)
    fates: list[str] = []
    for corpus_id in outcome.goal.expected:
        if corpus_id in outcome.cited_expected:
            fates.append(f"{corpus_id}: cited")
            continue
        kept = [sid for sid, p in corpus_of.items() if p is not None and p.corpus_id == corpus_id]
        if kept:
            source = next(s for s in result.sources if s.source_id == kept[0])
            own = [c for c in result.chunks if c.source_id == kept[0]]
            drafted = "cited by the draft" if kept[0] in drafted_sources else "not cited by the draft"
            relevance = scorer.score(plan_obj.goal, plan_obj.aspects, [f"{source.title}. {source.snippet}"])[
                0
            ]
            fates.append(
                f"{corpus_id}: kept (rank {result.sources.index(source) + 1}, whole-question "
                f"{source.answers_question}; {relevance.explain()}) with {len(own)} chunk(s) among the "
                f"writer's {len(result.chunks)}, {drafted}"
            )
            continue
        hits: list[tuple[str, int, Paper]] = []
        for record in records:
            for rank, returned in enumerate(record.papers, start=1):
                located = matcher.corpus_paper(_paper_record(returned))
                if located is not None and located.corpus_id == corpus_id:
                    hits.append((record.query, rank, returned))
        if not hits:
            fates.append(f"{corpus_id}: returned by no search")
            continue
        query, rank, best = min(hits, key=lambda hit: hit[1])
        relevance = scorer.score(plan_obj.goal, plan_obj.aspects, [document_text(best)])[0]
        verdict = (
            "filtered as irrelevant (< 0.5)"
            if relevance.probability < 0.5
            else "relevant, cut by max_sources"
        )
        fates.append(f"{corpus_id}: returned (rank {rank} of {query!r}) but {verdict}: {relevance.explain()}")
    out += [f"expected {fate}" for fate in fates]

    verification = (by_name.get("verification_completed") or [{}])[0]
    out.append(f"claims: {dict(outcome.verdicts)}; removed {verification.get('removed')}")
    out += [f"removed: {v.claim_text[:110]!r} ({v.notes})" for v in result.claim_verifications if not v.kept]
    critique = by_name.get("critique_generated")
    if critique:
        out.append(f"critic: uncovered {critique[0].get('uncovered_sub_questions')}")
    redteam = (by_name.get("redteam_completed") or [{}])[0]
    if redteam.get("flags"):
        out.append(f"red-team: flags {[f.get('kind', f) for f in redteam.get('flags') or []]}")
    decision = result.decision
    out.append(
        f"gate: {'REFUSE ' + str(decision.reason_code) if decision.refusal else 'answer'} "
        f"(confidence {decision.confidence}); {decision.rationale}"
        + (f"; reason: {decision.reason}" if decision.refusal else "")
    )
    out += [f"note: {note}" for note in result.notes]
    out += ["answer:", *(f"  {line}" for line in result.answer.splitlines() if line.strip())]
    out.append("timeline: " + ", ".join(_timeline(events)))
    out += [f"OFFSET {failure}" for failure in outcome.offset_failures]

    if outcome.answerable and not outcome.success:
        if decision.refusal:
            missed = "; ".join(f for f in fates if not f.endswith(": cited"))
            outcome.cause = f"refused {decision.reason_code}; {missed}"
        else:
            outcome.cause = "; ".join(fates)
    elif not outcome.answerable and not outcome.success:
        cited_titles = [s.title[:60] for s in result.sources if s.source_id in outcome.cited_sources]
        outcome.cause = f"answered (confidence {decision.confidence}) from {cited_titles}"


def _timeline(events: list[dict[str, Any]]) -> list[str]:
    """Seconds from the request to each stage's last event (where an answer's time goes)."""
    from datetime import datetime

    if not events:
        return []
    moments = [
        (str(e.get("name")), datetime.fromisoformat(str(e["timestamp"]).replace("Z", "+00:00")))
        for e in events
    ]
    start = moments[0][1]
    last: dict[str, float] = {}
    for name, moment in moments:
        last[name] = (moment - start).total_seconds()
    return [f"{name} {seconds:.1f}s" for name, seconds in last.items() if name != "search_started"]


async def run_goal(
    service: AnswerService,
    recorder: RecordingSearch,
    goal: Goal,
    preset: str,
    matcher: Matcher,
    site: CorpusWeb,
) -> Outcome:
    from functions.answer.routes.trust import answer_request
    from functions.answer.schemas import QueryRequest
    from functions.answer.service import Listeners, new_trace_id
    from functions.common.tenancy import DEFAULT_TEAM

    outcome = Outcome(goal, preset)
    body = QueryRequest.model_validate(
        {"query": goal.text, "options": {"preset": preset, "reasoning_effort": PRESET_EFFORTS[preset]}}
    )
    request = answer_request(body, service, DEFAULT_TEAM)
    events: list[dict[str, Any]] = []

    async def heard(event: dict[str, Any]) -> None:
        events.append(event)

    async def first_sentence(text: str) -> None:
        if outcome.first_sentence is None:
            outcome.first_sentence = time.perf_counter() - started

    recorder.records = []
    site.web.reset_requests()
    started = time.perf_counter()
    listeners = Listeners(on_trace=heard, on_delta=first_sentence)
    async with asyncio.timeout(ANSWER_TIMEOUT_SECONDS):
        result = await service.answer(request, trace_id=new_trace_id(), listeners=listeners)
    outcome.seconds = time.perf_counter() - started
    decision = result.decision
    outcome.status = "refused" if decision.refusal else "answered"
    outcome.refusal_code = decision.reason_code
    outcome.refusal_reason = decision.reason
    outcome.confidence = decision.confidence
    outcome.verdicts = Counter(claim.verdict for claim in result.claim_verifications)
    corpus_of = score_citations(outcome, result, matcher)
    score_readability(outcome, result, request)
    analyse(outcome, result, request, events, recorder.records, matcher, corpus_of, _upstream_queries(site))
    return outcome


async def run_preset(
    goals: list[Goal], preset: str, matcher: Matcher, site: CorpusWeb, verbose: bool, figure: Figure = print
) -> list[Outcome]:
    from functions.answer.service import GuardedSearch
    from functions.answer.wiring import build_service
    from functions.common.settings import get_settings

    service = build_service(get_settings())
    # The composition root's own service; its search port is wrapped to remember what came back.
    recorder = RecordingSearch(service.search_port.inner)
    service.search_port = GuardedSearch(recorder)
    outcomes: list[Outcome] = []
    for goal in goals:
        try:
            outcome = await run_goal(service, recorder, goal, preset, matcher, site)
        except Exception as exc:  # one crash must not hide the other goals' figures
            outcome = Outcome(goal, preset, status="error", error=f"{type(exc).__name__}: {exc}")
            outcome.cause = outcome.error or ""
        outcomes.append(outcome)
        figure(_line(outcome), flush=True)
        if verbose:
            _details(outcome)
        elif outcome.cause and not outcome.success:
            print(f"       why: {outcome.cause[:400]}")
    return outcomes


def run(
    goals: list[Goal], presets: list[str], *, verbose: bool, no_politeness: bool, latency: bool
) -> list[Outcome]:
    from functions.local_runtime.aws import EmbeddedAws

    papers = literature(redate_years=WINDOW_YEARS)
    relevant = sum(1 for p in papers if p.corpus_id)
    print(
        f"corpus web: {relevant} corpus papers with PDFs, {len(papers) - relevant} distractors; years re-dated "
        f"into the last {WINDOW_YEARS}; presets {', '.join(f'{p} (effort {PRESET_EFFORTS[p]})' for p in presets)}; "
        f"no LLM; cores {os.cpu_count()}, load average {os.getloadavg()[0]:.1f} (latency depends on it)"
    )
    print(f"conditions: {describe_conditions(no_politeness=no_politeness, latency=latency)}")
    matcher = Matcher(papers)
    site = CorpusWeb(papers, latency=latency)
    site.start()
    outcomes: list[Outcome] = []
    try:
        for preset in presets:
            print(f"\n--- preset {preset} ---")
            print(_header())
            # A fresh account per preset: no search cache carried from the other preset's answers.
            with EmbeddedAws(extra_environment=site.environment(no_politeness=no_politeness)):
                outcomes += asyncio.run(
                    run_preset(goals, preset, matcher, site, verbose, figure_printer(no_politeness))
                )
    finally:
        site.stop()
    return outcomes


# --- reporting -------------------------------------------------------------------------------------------


def _header() -> str:
    return (
        f"  {'':4} {'goal':<21} {'split':<8} {'kind':<12} {'status':<9} {'refusal code':<24} "
        f"{'cited recall':<12} {'precision':<9} {'latency':>8}"
    )


def _line(o: Outcome) -> str:
    verdict = "ok  " if o.success else "MISS"
    recall = f"{len(o.cited_expected)}/{len(o.goal.expected)}" if o.answerable else "-"
    precision = f"{o.precision:.2f}" if o.precision is not None else "-"
    return (
        f"  {verdict} {o.goal.goal_id:<21} {o.goal.split:<8} {o.goal.kind:<12} {o.status:<9} "
        f"{o.refusal_code or '-':<24} {recall:<12} {precision:<9} {o.seconds:7.1f}s"
        + (f" (first sentence {o.first_sentence:.1f}s)" if o.first_sentence is not None else "")
    )


def _details(o: Outcome) -> None:
    print(f"       goal: {o.goal.text}")
    if o.error:
        print(f"       bench error: {o.error}")
    for line in o.details:
        print(f"       {line}")
    if o.cause and not o.success:
        print(f"       why: {o.cause}")


def _share(part: float, whole: float) -> str:
    return f"{part:g}/{whole:g} = {100 * part / whole:.0f}%" if whole else f"{part:g}/0 = n/a"


def summary(outcomes: list[Outcome], label: str, figure: Figure = print) -> None:
    if not outcomes:
        return
    answerable = [o for o in outcomes if o.answerable]
    unanswerable = [o for o in outcomes if not o.answerable]
    ok_answerable = sum(1 for o in answerable if o.success)
    refused = sum(1 for o in unanswerable if o.success)
    recall = sum(o.recall for o in answerable) / len(answerable) if answerable else 0.0
    kept_recall = (
        sum(len(o.kept_expected) / len(o.goal.expected) for o in answerable) / len(answerable)
        if answerable
        else 0.0
    )
    cited = sum(len(o.cited_sources) for o in answerable)
    cited_expected = sum(o.cited_expected_sources for o in answerable)
    noise = sum(len(o.cited_sources) for o in unanswerable)
    verdicts: Counter[str] = Counter()
    for o in outcomes:
        verdicts.update(o.verdicts)
    claims = sum(verdicts.values())
    latencies = [o.seconds for o in outcomes if o.status != "error"]
    figure(
        f"\n{label}: {len(outcomes)} goals ({len(answerable)} answerable, {len(unanswerable)} unanswerable)"
    )
    figure(
        f"  outcome: {ok_answerable + refused}/{len(outcomes)} (answerable answered citing an expected paper "
        f"{ok_answerable}/{len(answerable)}; unanswerable refused {refused}/{len(unanswerable)})"
    )
    figure(
        f"  refusal codes: {dict(Counter(o.refusal_code for o in outcomes if o.status == 'refused'))}; "
        f"errors {sum(1 for o in outcomes if o.status == 'error')}"
    )
    figure(
        f"  mean cited recall {recall:.2f} (mean recall among kept sources {kept_recall:.2f}); "
        f"citation precision on answerable goals {_share(cited_expected, cited)}; "
        f"sources cited on unanswerable goals {noise}"
    )
    abstract = sum(o.offsets_abstract for o in outcomes)
    abstract_ok = sum(o.offsets_abstract_ok for o in outcomes)
    page = sum(o.offsets_page for o in outcomes)
    page_ok = sum(o.offsets_page_ok for o in outcomes)
    figure(
        f"  citation offsets: abstract slices exact {_share(abstract_ok, abstract)}; page snippets on the "
        f"cited PDF page {_share(page_ok, page)} (elsewhere in the PDF "
        f"{sum(o.offsets_page_elsewhere for o in outcomes)}, no corpus PDF "
        f"{sum(o.offsets_page_unverifiable for o in outcomes)})"
    )
    figure(
        f"  claims {claims}: supported {_share(verdicts['supported'], claims)}, partially "
        f"{_share(verdicts['partially_supported'], claims)}, unsupported and removed "
        f"{_share(verdicts['unsupported'], claims)}"
    )
    readability(outcomes, figure)
    if latencies:
        figure(
            f"  latency: mean {statistics.mean(latencies):.1f} s, median {statistics.median(latencies):.1f} s, "
            f"max {max(latencies):.1f} s; wall {sum(latencies):.0f} s"
        )


def _percentile(values: list[float], share: float) -> float:
    """Nearest rank: the smallest value with at least `share` of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def time_to_first_sentence(outcomes: list[Outcome], preset: str, figure: Figure = print) -> None:
    """When the first verified sentence reaches a streaming client, against the whole stream (the
    request to `final`), over the answered goals of one preset (a refusal streams no sentence)."""
    streamed = [o for o in outcomes if o.preset == preset and o.first_sentence is not None]
    if not streamed:
        print(f"{preset}: no answer streamed a sentence")
        return
    first = [o.first_sentence or 0.0 for o in streamed]
    total = [o.seconds for o in streamed]
    lead = [o.seconds - (o.first_sentence or 0.0) for o in streamed]
    figure(
        f"{preset}: time to the first verified sentence p50 {_percentile(first, 0.5):.1f} s, "
        f"p95 {_percentile(first, 0.95):.1f} s; whole stream p50 {_percentile(total, 0.5):.1f} s, "
        f"p95 {_percentile(total, 0.95):.1f} s; first sentence ahead of final by p50 "
        f"{_percentile(lead, 0.5):.2f} s, max {max(lead):.2f} s ({len(streamed)} streamed answers)"
    )


def readability(outcomes: list[Outcome], figure: Figure = print) -> None:
    """Issue 21's readability figures over the answers that were not refused."""
    scores = [o.readability for o in outcomes if o.status == "answered"]
    sentences = sum(r.sentences for r in scores)
    figure(
        f"  readability of {len(scores)} answer(s), {sentences} shown sentence(s): first person or "
        f"self-reference {sum(r.first_person for r in scores)} (target 0); foreign reference markers "
        f"{sum(r.foreign_markers for r in scores)} (target 0); headings that are plan facets "
        f"{_share(sum(r.facet_headings for r in scores), sum(r.headings for r in scores))}; abbreviations "
        f"expanded at first use {_share(sum(r.abbreviations_expanded for r in scores), sum(r.abbreviations_defined for r in scores))}; "
        f"direct answer first {_share(sum(r.direct_answer for r in scores), len(scores))}; numbers and "
        f"polarity as the quote's {_share(sum(r.faithful for r in scores), sentences)}"
    )
    for r in scores:
        for line in r.unfaithful:
            print(f"    not as the quote: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", choices=["dev", "heldout", "all"], default="all")
    parser.add_argument("--preset", choices=sorted(PRESET_EFFORTS), action="append", default=[])
    parser.add_argument(
        "--verbose", action="store_true", help="per-goal plan, searches, sources, fates, gate"
    )
    parser.add_argument("--goal", action="append", default=[], help="run only this goal id (repeatable)")
    add_condition_options(parser)
    args = parser.parse_args()
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    presets = args.preset or list(PRESET_EFFORTS)
    goals = [g for g in GOALS if args.split in ("all", g.split) and (not args.goal or g.goal_id in args.goal)]
    started = time.perf_counter()
    try:
        outcomes = run(
            goals,
            presets,
            verbose=args.verbose,
            no_politeness=args.no_politeness,
            latency=not args.no_latency,
        )
    except CorpusMissing as exc:
        sys.exit(f"bench.answer_quality: {exc}")
    figure = figure_printer(args.no_politeness)
    for preset in presets:
        for split in ("dev", "heldout"):
            summary(
                [o for o in outcomes if o.preset == preset and o.goal.split == split],
                f"{preset} / {split}",
                figure,
            )
    print()
    for preset in presets:
        time_to_first_sentence(outcomes, preset, figure)
    figure(f"\ntotal wall {time.perf_counter() - started:.0f} s")
    print(f"conditions: {describe_conditions(no_politeness=args.no_politeness, latency=not args.no_latency)}")


if __name__ == "__main__":
    main()
