"""A job's PRISMA 2020 flow (functions/research/job/prisma.py) and its diagram (prisma_diagram.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

from functions.orchestrate.checkpoints.review import added_candidate
from functions.research.job.inputs import Extraction, QueryResult, ScreeningPayload
from functions.research.job.prisma import PrismaFlow, flow_markdown, prisma_flow
from functions.research.job.prisma_diagram import WIDTH, prisma_svg
from functions.research.retrieval.screening import Candidate, source_id_for
from tests.unit.orchestrate.fixtures import paper

SVG = "{http://www.w3.org/2000/svg}"


def _candidate(index: int, rejection: str | None = None) -> Candidate:
    return Candidate(paper=paper(index), source_id=f"src-{index}", query_ids=["q1"], rejection=rejection)


@dataclass
class _Chased(Candidate):
    """A candidate as citation chasing adds it: with how it was found."""

    discovered_via: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "discovered_via": self.discovered_via}


SEARCHES = [
    QueryResult(query_id="q1", connector="arxiv", key="k1", count=6),
    QueryResult(query_id="q2", connector="openalex", key="k2", count=4),
    QueryResult(query_id="q3", connector="arxiv", key="k3", count=2),
    QueryResult(query_id="q4", connector="crossref", error="HTTP 500"),  # stored nothing
]


def _screening() -> ScreeningPayload:
    candidates = [
        *(_candidate(i) for i in range(1, 7)),  # selected
        _candidate(7),  # a reviewer deselected it at the screening checkpoint
        _candidate(8, "below_relevance_threshold"),
        _candidate(9, "below_relevance_threshold"),
        _candidate(10, "outside_temporal_boundary"),
    ]
    return ScreeningPayload(
        candidates=candidates,
        selected=["src-1", "src-2", "src-3", "src-4", "src-5"],  # src-6 dropped after it was read
        budget_skipped=["src-5"],
        discovered=12,
        duplicates=2,
        validated=10,
    )


EXTRACTIONS = [
    Extraction(source_id="src-1", success=True, evidence_count=3),
    Extraction(source_id="src-2", success=True, evidence_count=1),
    Extraction(source_id="src-3", success=False, failure_reason="HTTP 403", unavailable=True),
    Extraction(source_id="src-4", success=False, failure_reason="timed out"),
    Extraction(source_id="src-6", success=True, evidence_count=2),
]


def test_each_stage_is_the_previous_less_its_exclusions_with_their_reasons() -> None:
    flow = prisma_flow(SEARCHES, _screening(), EXTRACTIONS)
    assert flow.identified == {"arxiv": 8, "openalex": 4}
    assert (flow.duplicates_removed, flow.screened) == (2, 10)
    assert (flow.excluded_screening, flow.sought_for_retrieval) == (4, 6)
    assert (flow.not_retrieved, flow.assessed_full_text) == (3, 3)
    assert (flow.excluded_full_text, flow.included) == (1, 2)
    assert flow.exclusion_reasons.screening == {
        "below_relevance_threshold": 2,
        "excluded_by_reviewer": 1,
        "outside_temporal_boundary": 1,
    }
    assert flow.exclusion_reasons.not_retrieved == {
        "budget_reached": 1,
        "extraction_failed": 1,
        "no_open_full_text": 1,
    }
    assert flow.exclusion_reasons.full_text == {"excluded_by_reviewer": 1}
    chain = [
        (flow.total_identified - flow.duplicates_removed, flow.screened),
        (flow.screened - flow.excluded_screening, flow.sought_for_retrieval),
        (flow.sought_for_retrieval - flow.not_retrieved, flow.assessed_full_text),
        (flow.assessed_full_text - flow.excluded_full_text, flow.included),
    ]
    assert all(left == right for left, right in chain), chain


def test_a_source_found_not_relevant_after_its_reading_is_excluded_at_the_full_text() -> None:
    screening = _screening()
    screening.selected.remove("src-2")
    screening.not_relevant = ["src-2"]  # the extraction checkpoint took its record out of the extractions
    flow = prisma_flow(SEARCHES, screening, [item for item in EXTRACTIONS if item.source_id != "src-2"])
    assert (flow.sought_for_retrieval, flow.assessed_full_text, flow.included) == (6, 3, 1)
    assert flow.exclusion_reasons.full_text == {"excluded_by_reviewer": 2}


def test_chased_records_are_identified_by_citation_chasing() -> None:
    screening = _screening()
    chased = [
        _Chased(
            paper=paper(11), source_id="src-11", discovered_via={"method": "references", "seed": "src-1"}
        ),
        _Chased(paper=paper(12), source_id="src-12", discovered_via={"method": "citations", "seed": "src-2"}),
        _Chased(
            paper=paper(13),
            source_id="src-13",
            query_ids=["q2"],
            discovered_via={"method": "search", "seed": None},
        ),
    ]
    screening.candidates += chased
    screening.selected += ["src-11"]
    flow = prisma_flow(SEARCHES, screening, [*EXTRACTIONS, Extraction(source_id="src-11", success=True)])
    # src-13 came from a search: its record is among the searches' hits already
    assert flow.identified == {"arxiv": 8, "citation_chasing": 2, "openalex": 4}
    assert (flow.screened, flow.included) == (13, 3)
    assert flow.total_identified - flow.duplicates_removed == flow.screened


def test_a_job_without_chasing_has_no_citation_chasing_count() -> None:
    assert "citation_chasing" not in prisma_flow(SEARCHES, _screening(), EXTRACTIONS).identified


def test_papers_a_reviewer_added_are_identified_by_the_reviewer() -> None:
    screening = _screening()
    screening.candidates.append(added_candidate("doi:10.1/added"))
    screening.selected.append(source_id_for("doi:10.1/added"))
    flow = prisma_flow(SEARCHES, screening, EXTRACTIONS)
    assert flow.identified == {"arxiv": 8, "openalex": 4, "reviewer": 1}
    assert flow.total_identified - flow.duplicates_removed == flow.screened == 11
    assert flow.exclusion_reasons.not_retrieved["extraction_failed"] == 2  # never extracted
    assert "added by a reviewer (n = 1)" in _texts(prisma_svg(flow))


def _texts(svg: str) -> list[str]:
    return [node.text or "" for node in ET.fromstring(svg).iter(f"{SVG}text")]


def test_the_diagram_is_svg_with_every_box_and_count() -> None:
    flow = prisma_flow(SEARCHES, _screening(), EXTRACTIONS)
    svg = prisma_svg(flow)
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg" and root.get("width") == str(WIDTH)
    texts = _texts(svg)
    for expected in (
        "arxiv (n = 8)",
        "openalex (n = 4)",
        "Records screened (n = 10)",
        "Records excluded (n = 4)",
        "below relevance threshold (n = 2)",
        "Reports sought for retrieval (n = 6)",
        "Reports not retrieved (n = 3)",
        "Reports assessed for eligibility (n = 3)",
        "Reports excluded (n = 1)",
        "Studies included in review (n = 2)",
        "Identification",
        "Screening",
        "Included",
    ):
        assert expected in texts, (expected, texts)
    assert "Duplicate records removed (n = 2)" in texts
    assert len(list(root.iter(f"{SVG}line"))) == 8  # four arrows down, four to the removals
    assert all(
        float(rect.get("x", 0)) + float(rect.get("width", 0)) <= WIDTH for rect in root.iter(f"{SVG}rect")
    )


def test_the_diagrams_text_is_escaped() -> None:
    flow = PrismaFlow(
        identified={"<script>alert(1)</script>": 3},
        screened=3,
        excluded_screening=3,
        exclusion_reasons={"screening": {'a&b "quoted" <reason>': 3}},
    )
    svg = prisma_svg(flow)
    assert "<script>" not in svg
    texts = _texts(svg)
    assert "<script>alert(1)</script> (n = 3)" in texts
    assert 'a&b "quoted" <reason> (n = 3)' in texts


def test_the_reports_section_tables_the_flow() -> None:
    flow = prisma_flow(SEARCHES, _screening(), EXTRACTIONS)
    section = "\n".join(flow_markdown(flow))
    assert section.startswith("## PRISMA 2020 flow")
    assert "| Records identified | 12 | arxiv 8, openalex 4 |" in section
    assert (
        "| Reports not retrieved | 3 | budget reached: 1; extraction failed: 1; no open full text: 1 |"
        in section
    )
    assert "| Studies included in review | 2 |  |" in section
