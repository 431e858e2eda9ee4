from __future__ import annotations

from functions.orchestrate.screening import deduplicate, screen
from tests.unit.orchestrate.fixtures import paper, plan


def test_duplicates_merge_by_identifier_and_title() -> None:
    first = paper(1, source="arxiv", citations=None)
    same_id = paper(1, source="openalex", citations=80, doi="10.1/abc")
    same_title = paper(
        2, arxiv_id=None, url="https://doi.org/10.1/x", doi=None, title=paper(1).title.upper() + "."
    )
    other = paper(3)
    candidates, duplicates = deduplicate([("q1", first), ("q2", same_id), ("q3", same_title), ("q1", other)])
    assert duplicates == 2 and len(candidates) == 2
    merged = next(c for c in candidates if c.paper.arxiv_id == "2501.10001")
    assert merged.paper.citations == 80 and merged.paper.doi == "10.1/abc"
    assert set(merged.query_ids) == {"q1", "q2", "q3"}
    assert set(merged.paper.found_by) >= {"arxiv", "openalex"}


def test_five_dimensions_threshold_policies_and_refinement() -> None:
    research = plan("rapid")  # 10 sources, years 2023-2026
    hits = [("q1", paper(i)) for i in range(6)]
    hits.append(
        ("q1", paper(20, title="Crop yields from satellites", abstract="Farming.", relevance_score=0.2))
    )
    hits.append(("q1", paper(21, year=2015)))
    result = screen(hits, research, current_year=2026, allow_refinement=True)
    assert result.rejection_counts == {"below_relevance_threshold": 1, "outside_temporal_boundary": 1}
    assert len(result.selected) == 6 and result.needs_refinement  # 6 < 10 passed
    for candidate in result.selected:
        assert set(candidate.scores) == {
            "relevance",
            "citation_impact",
            "recency",
            "methodology",
            "accessibility",
        }
        assert abs(candidate.total_score - sum(candidate.scores.values())) < 0.01
        assert candidate.scores["relevance"] >= 0.6
    assert not screen(hits, research, current_year=2026, allow_refinement=False).needs_refinement


def test_diversity_caps_one_venue() -> None:
    research = plan("rapid")
    hits = [("q1", paper(i, venue="Same Venue")) for i in range(12)]
    hits += [("q1", paper(100 + i, venue=f"Other {i}", relevance_score=0.7)) for i in range(6)]
    result = screen(hits, research, current_year=2026, allow_refinement=False)
    venues = [c.paper.venue for c in result.selected]
    assert len(result.selected) == 10
    assert venues.count("Same Venue") <= 4  # ceil(0.34 * 10)
    assert result.rejection_counts["diversity_cap"] >= 8
    relaxed = plan("rapid", source_diversity_requirement=False)
    assert len(screen(hits, relaxed, current_year=2026, allow_refinement=False).selected) == 10
