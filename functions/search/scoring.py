"""Scores that mean the same thing whichever connector found a paper.

relevance_score (0..1), computed by us from the query and the paper, never taken from an upstream:

    Q       = distinct stemmed content terms of the query
    title   = |Q found in the title| / |Q|
    body    = |Q found in the abstract| / |Q|
    phrase  = 1 if the whole query (content words, in order) occurs in the title or abstract, else 0
    lexical = 0.55 * title + 0.30 * body + 0.15 * phrase          (abstract known)
            = 0.9 * (0.55 * title + 0.15 * phrase) / 0.70          (no abstract: renormalised, 10 % less
                                                                    for the missing evidence)
    prior   = 1 / log2(1 + best upstream rank)                     (1.0 for a first place, 0.5 for third)
    relevance_score = 0.8 * lexical + 0.2 * prior

So a paper with every query term in its title and abstract scores at least 0.68 whatever its rank,
one that matches half the terms of the title only stays below 0.5, and the orchestrator's 0.6 cut
means "most of the query is in the title and the abstract" for every source.

quality_score (0..1), for `min_quality_score`:

    citations = min(1, log10(1 + n) / 3)       (1000 citations -> 1.0; unknown -> 0.25)
    venue     = 1.0 named journal or conference, 0.5 preprint server or repository only, 0.0 none
    recency   = max(0, 1 - age_in_years / 20)  (unknown year -> 0)
    quality_score = 0.5 * citations + 0.25 * venue + 0.25 * recency
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from functions.common.models import Paper
from functions.common.text import stems
from functions.search.text import clean_text

_PREPRINT_VENUES = (
    "arxiv",
    "biorxiv",
    "medrxiv",
    "ssrn",
    "preprint",
    "research square",
    "zenodo",
    "repository",
)


def _matches(term: str, vocabulary: set[str]) -> bool:
    if term in vocabulary:
        return True
    if len(term) < 5:
        return False
    # hyphenated and compound forms: 'self-attention' vs 'self attention', 'pretraining' vs 'pre-training'
    joined = term.replace("-", "")
    return any(word.replace("-", "") == joined for word in vocabulary)


def lexical_match(query: str, title: str, abstract: str | None) -> float:
    query_stems = stems(query)
    query_terms = list(dict.fromkeys(query_stems))
    if not query_terms:
        return 0.0
    title_terms = stems(title)
    abstract_terms = stems(abstract or "")
    title_vocab, abstract_vocab = set(title_terms), set(abstract_terms)
    title_cov = sum(_matches(t, title_vocab) for t in query_terms) / len(query_terms)
    phrase_seq = " ".join(query_stems)
    phrase = float(
        len(query_terms) > 1
        and (phrase_seq in " ".join(title_terms) or phrase_seq in " ".join(abstract_terms))
    )
    if clean_text(abstract):
        body_cov = sum(_matches(t, abstract_vocab) for t in query_terms) / len(query_terms)
        return 0.55 * title_cov + 0.30 * body_cov + 0.15 * phrase
    return 0.9 * (0.55 * title_cov + 0.15 * phrase) / 0.70


def rank_prior(rank: int | None) -> float:
    if rank is None or rank < 1:
        return 0.0
    return 1.0 / math.log2(1 + rank)


def relevance_score(query: str, paper: Paper) -> float:
    value = 0.8 * lexical_match(query, paper.title, paper.abstract) + 0.2 * rank_prior(paper.upstream_rank)
    return round(min(1.0, max(0.0, value)), 4)


def quality_score(paper: Paper, now: datetime | None = None) -> float:
    current_year = (now or datetime.now(UTC)).year
    citations = 0.25 if paper.citations is None else min(1.0, math.log10(1 + max(0, paper.citations)) / 3)
    venue_name = (paper.venue or "").strip().lower()
    if not venue_name:
        venue = 0.0
    elif any(marker in venue_name for marker in _PREPRINT_VENUES):
        venue = 0.5
    else:
        venue = 1.0
    recency = 0.0 if paper.year is None else max(0.0, 1 - max(0, current_year - paper.year) / 20)
    return round(0.5 * citations + 0.25 * venue + 0.25 * recency, 4)
