"""The research job's evidence: the extracted quotes of the screened sources, screened sentence by sentence
for text addressed to the reader or a model, as evidence chunks with opaque ids ("ev-…") the writer cites;
and the methodologies the sources use.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass

from functions.common.models import EvidenceQuote, ExtractedPaper, short_hash
from functions.research.retrieval.evidence import PAGE, EvidenceChunk
from functions.research.retrieval.screening import Candidate
from functions.research.retrieval.untrusted_text import (
    Screened,
    hostile_source,
    own_links,
    prime,
    screen_in_order,
)

METHODOLOGY_PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern, re.IGNORECASE)
    for name, pattern in {
        "Randomized controlled trial": r"randomi[sz]ed (controlled )?trial|\bRCT\b",
        "Meta-analysis / systematic review": r"meta-analys|systematic (literature )?review",
        "Benchmark evaluation": r"benchmark",
        "Ablation study": r"ablation",
        "Simulation": r"simulat",
        "Survey / questionnaire": r"questionnaire|survey(ed)? (of )?\d+|respondents",
        "Case study": r"case stud",
        "User study": r"user stud|participants",
        "Interviews / qualitative analysis": r"interview|qualitative|thematic analysis",
        "Observational / cohort study": r"observational|cohort|longitudinal",
        "Theoretical analysis": r"\btheorem\b|we prove|formal analysis",
        "Controlled experiment": r"\bexperiment(s|al)?\b",
    }.items()
}


@dataclass
class ScreenedEvidence:
    """The evidence of the screened sources, and what was withheld from it as text addressed to the
    reader or a model: (quote span, signals) per sentence, and the sources full of it."""

    evidence: list[EvidenceChunk]  # ids "ev-…"
    quarantined: list[tuple[EvidenceChunk, str]]
    hostile_sources: list[str]


def _screened_quotes(
    quotes: list[EvidenceQuote], links: frozenset[str]
) -> list[tuple[EvidenceQuote, Screened]]:
    """A paper's quotes screened in reading order: a quote that directly follows another on its page is
    judged in its context (functions/research/retrieval/untrusted_text.py, screen_in_order)."""
    order = sorted(range(len(quotes)), key=lambda i: (quotes[i].page, quotes[i].char_start))

    def follows(n: int) -> bool:
        before, quote = quotes[order[n - 1]], quotes[order[n]]
        return (
            n > 0 and before.page == quote.page and before.char_end <= quote.char_start <= before.char_end + 3
        )

    results = screen_in_order([(quotes[i].quote, links, follows(n)) for n, i in enumerate(order)])
    by_index = dict(zip(order, results, strict=True))
    return [(quote, by_index[i]) for i, quote in enumerate(quotes)]


def _quarantined(
    source_id: str, screened: list[tuple[EvidenceQuote, Screened]]
) -> list[tuple[EvidenceChunk, str]]:
    """The spans withheld from a source's quotes, each with its signals (the span's text is not kept)."""
    return [
        (
            EvidenceChunk(
                "quarantined",
                source_id,
                "",
                0.0,
                PAGE,
                quote.page,
                quote.char_start + clause.start,
                quote.char_start + clause.end,
            ),
            ", ".join(clause.verdict.signals),
        )
        for quote, result in screened
        for clause in result.hostile
    ]


def _clean_evidence(source_id: str, screened: list[tuple[EvidenceQuote, Screened]]) -> list[EvidenceChunk]:
    """A source's runs of clean sentences, verbatim with their own offsets (runs under 20 characters go)."""
    evidence = []
    for quote, result in screened:
        for start, end in result.clean_runs:
            text = " ".join(quote.quote[start:end].split())
            if len(text) < 20:
                continue
            char_start = quote.char_start + start
            evidence_id = "ev-" + short_hash(f"{source_id}|{quote.page}|{char_start}|{text}", 10)
            evidence.append(
                EvidenceChunk(
                    chunk_id=evidence_id,
                    source_id=source_id,
                    text=text,
                    score=quote.relevance_score,
                    origin=PAGE,
                    page=quote.page,
                    char_start=char_start,
                    char_end=quote.char_start + end,
                    section=quote.section,
                    kind=quote.kind,
                )
            )
    return evidence


def screen_evidence(sources: list[tuple[Candidate, ExtractedPaper]]) -> ScreenedEvidence:
    """Each quote judged sentence by sentence: its runs of clean sentences are evidence (verbatim, with
    their own offsets); the rest is quarantined, and a source full of it gives no evidence at all."""
    evidence: dict[str, EvidenceChunk] = {}
    quarantined: list[tuple[EvidenceChunk, str]] = []
    hostile: list[str] = []
    prime(quote.quote for _, paper in sources for quote in paper.evidence)
    for candidate, paper in sources:
        links = own_links(candidate.paper.url, candidate.paper.doi, paper.source_url)
        screened = _screened_quotes(paper.evidence, links)
        quarantined += _quarantined(candidate.source_id, screened)
        if hostile_source(result for _, result in screened):
            hostile.append(candidate.source_id)
            continue
        for item in _clean_evidence(candidate.source_id, screened):
            evidence.setdefault(item.chunk_id, item)
    return ScreenedEvidence(list(evidence.values()), quarantined, hostile)


def count_methodologies(
    sources: list[tuple[Candidate, ExtractedPaper]], evidence: list[EvidenceChunk]
) -> dict[str, int]:
    """How many sources use each methodology, from their methodology text and method evidence."""
    method_quotes: dict[str, list[str]] = defaultdict(list)
    for item in evidence:
        if item.kind == "method":
            method_quotes[item.source_id].append(item.text)
    counts: Counter[str] = Counter()
    for candidate, paper in sources:
        text = " ".join([paper.methodology, *method_quotes.get(candidate.source_id, [])])
        for name, pattern in METHODOLOGY_PATTERNS.items():
            if pattern.search(text):
                counts[name] += 1
    return dict(counts.most_common())
