from __future__ import annotations

import json
from datetime import UTC, datetime

from functions.search.connectors import arxiv, crossref, openalex, semantic_scholar
from functions.search.merge import merge_papers, merge_results, rrf_score
from functions.search.models import ConnectorResult, FoundPaper
from functions.search.scoring import quality_score, rank_prior, relevance_score
from tests.support import scholarly_fixtures as fx

PAPERS = fx.TRANSFORMER_PAPERS


def _all_results() -> list[ConnectorResult]:
    return [
        arxiv.parse_response(200, fx.arxiv_feed(PAPERS)),
        semantic_scholar.parse_response(200, json.dumps(fx.semantic_scholar_search(PAPERS))),
        openalex.parse_response(200, json.dumps(fx.openalex_works(PAPERS))),
        crossref.parse_response(200, json.dumps(fx.crossref_works(PAPERS))),
    ]


def test_same_work_from_four_connectors_is_merged_once() -> None:
    merged = merge_results(_all_results())
    assert len(merged) == len(PAPERS)
    sparse = next(p for p in merged if p.arxiv_id == "2301.00001")
    assert sorted(sparse.found_by) == ["arxiv", "crossref", "openalex", "semantic_scholar"]
    assert sparse.doi == "10.1234/sparse.2023.001" and sparse.citations == 120
    assert sparse.url == "https://arxiv.org/abs/2301.00001"
    assert sparse.pdf_url == "https://arxiv.org/pdf/2301.00001v2"  # arXiv's own PDF link wins
    assert sparse.connector_ranks == {"arxiv": 1, "semantic_scholar": 1, "openalex": 1, "crossref": 1}
    assert rrf_score(sparse) == round(4 / 61, 6)


def _paper(title: str, **kwargs: object) -> FoundPaper:
    base: dict[str, object] = {"url": "https://example.org/x", "source": "openalex", "found_by": ["openalex"]}
    base.update(kwargs)
    return FoundPaper(title=title, **base)


def test_title_match_joins_only_works_of_close_years() -> None:
    title = "A Survey of Graph Neural Networks for Chemistry"
    same = merge_papers([_paper(title, year=2020), _paper(title.upper() + "!", year=2021, source="crossref")])
    assert len(same) == 1
    apart = merge_papers([_paper(title, year=2001), _paper(title, year=2020)])
    assert len(apart) == 2
    short = merge_papers([_paper("Introduction", year=2020), _paper("Introduction", year=2020)])
    assert len(short) == 2  # too generic to be a key


def test_groups_are_bridged_by_a_paper_with_both_ids() -> None:
    merged = merge_papers(
        [
            _paper("Alpha Paper One", doi="10.1/a", source="crossref"),
            _paper("Alpha Paper Two", arxiv_id="2101.00001", source="arxiv"),
            _paper("Alpha Paper", doi="10.1/a", arxiv_id="2101.00001", source="semantic_scholar"),
        ]
    )
    assert len(merged) == 1 and merged[0].doi == "10.1/a" and merged[0].arxiv_id == "2101.00001"


def test_relevance_is_computed_from_the_query_not_the_upstream() -> None:
    query = "sparse attention transformers"
    on_topic = _paper(
        "Sparse Attention Transformers", abstract="Sparse attention for transformers.", upstream_rank=10
    )
    off_topic = _paper("Soil microbiome diversity", abstract="Microbes in alpine soil.", upstream_rank=1)
    assert relevance_score(query, on_topic) >= 0.6 > relevance_score(query, off_topic)
    half = _paper("Sparse coding in the visual cortex", abstract="Neurons and sparse codes.", upstream_rank=1)
    assert relevance_score(query, half) < 0.6
    # same text, different connector rank: close scores, better rank slightly higher
    first = relevance_score(query, on_topic.model_copy(update={"upstream_rank": 1}))
    assert 0 < first - relevance_score(query, on_topic) <= 0.2
    assert 0.0 <= relevance_score("the of and", on_topic) <= 1.0


def test_rank_prior() -> None:
    assert rank_prior(1) == 1.0 and rank_prior(3) == 0.5 and rank_prior(None) == 0.0


def test_quality_rewards_citations_venue_and_recency() -> None:
    now = datetime(2025, 6, 1, tzinfo=UTC)
    strong = _paper("x", citations=1000, venue="Nature", year=2025)
    preprint = _paper("x", citations=None, venue="arXiv", year=2015)
    assert quality_score(strong, now) == 1.0
    assert quality_score(preprint, now) == round(0.5 * 0.25 + 0.25 * 0.5 + 0.25 * 0.5, 4)
    assert quality_score(_paper("x"), now) == 0.125
