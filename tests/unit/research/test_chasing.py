"""Citation chasing's domain: the depth's default, how chased works join the screening (de-duplicated against
the candidates, screened with the same scores), `discovered_via`, and the record of seeds not chased."""

from __future__ import annotations

from functions.research.planning.request import ScopeParameters
from functions.research.retrieval.chasing import (
    ChasingRecord,
    SeedOutcome,
    chase_query_id,
    discovered_via,
    joined_screening,
)
from functions.research.retrieval.relevance import RelevanceScorer
from functions.research.retrieval.screening import screen
from tests.unit.orchestrate.fixtures import paper, plan

LEXICAL = RelevanceScorer(None)


def test_the_thorough_depths_chase_both_ways_by_default_and_the_quick_ones_do_not() -> None:
    defaults = {depth: ScopeParameters(discovery_depth=depth).chasing for depth in ("rapid", "focused")}
    assert defaults == {"rapid": "off", "focused": "off"}
    assert ScopeParameters(discovery_depth="comprehensive").chasing == "both"
    assert ScopeParameters(discovery_depth="exhaustive").chasing == "both"
    assert ScopeParameters(discovery_depth="rapid", citation_chasing="forward").chasing == "forward"


def test_chased_works_are_deduplicated_against_the_candidates_and_screened_like_them() -> None:
    research = plan("rapid")  # 10 sources
    searched = [("q1", paper(i)) for i in range(4)]
    first = screen(searched, research, current_year=2026, allow_refinement=False, scorer=LEXICAL)
    seed = first.selected[0].source_id
    via = chase_query_id("references", seed, "semantic_scholar")
    same_work = paper(1, source="semantic_scholar", title=paper(1).title.upper())  # same arXiv id
    by_title = paper(2, arxiv_id=None, url="https://doi.org/10.9/other-copy", source="openalex")
    new = paper(
        7,
        title="Block-sparse attention kernels in transformer architectures",
        source="semantic_scholar",
        doi="10.9/new",
        arxiv_id=None,
        url="https://doi.org/10.9/new",
    )
    off_topic = paper(8, title="Crop yields from satellites", abstract="Farming.", arxiv_id="2501.20008")
    chased = [(via, same_work), (via, by_title), (via, new), (via, off_topic)]
    union = screen([*searched, *chased], research, current_year=2026, allow_refinement=False, scorer=LEXICAL)
    selection = [c.source_id for c in first.selected]

    joined, chosen = joined_screening(first.candidates, selection, union, affordable=10)

    assert [c.paper.doi for c in joined] == ["10.9/new", None]  # the two works no search had found
    assert [c.paper.doi for c in chosen] == ["10.9/new"]
    picked = chosen[0]
    assert set(picked.scores) == {"relevance", "citation_impact", "recency", "methodology", "accessibility"}
    assert next(c for c in joined if c is not picked).rejection == "below_relevance_threshold"
    assert discovered_via(picked) == {"method": "references", "seed": seed, "connector": "semantic_scholar"}
    merged = next(c for c in union.candidates if c.paper.arxiv_id == paper(1).arxiv_id)
    assert discovered_via(merged) == {"method": "search", "seed": None, "connector": merged.paper.source}
    assert joined_screening(first.candidates, selection, union, affordable=0)[1] == []


def test_a_seed_is_not_chased_only_when_every_direction_failed() -> None:
    record = ChasingRecord(
        mode="both",
        seeds=["src-a", "src-b"],
        outcomes=[
            SeedOutcome(seed="src-a", direction="references", connector="openalex", found=3),
            SeedOutcome(seed="src-a", direction="citations", not_chased_reason="semantic_scholar: HTTP 500"),
            SeedOutcome(seed="src-b", direction="references", not_chased_reason="openalex: HTTP 503"),
            SeedOutcome(seed="src-b", direction="citations", not_chased_reason="openalex: HTTP 503"),
        ],
    )
    assert record.not_chased() == {"src-b": "references: openalex: HTTP 503; citations: openalex: HTTP 503"}
    summary = record.summary()
    assert summary["seeds_chased"] == ["src-a"] and summary["not_chased"] == record.not_chased()
