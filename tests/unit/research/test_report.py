"""A job's results document from typed inputs (functions/research/job/report.py): no I/O."""

from __future__ import annotations

from functions.research.checking.verifier import ClaimVerification
from functions.research.job.inputs import Extraction, ScreeningPayload
from functions.research.job.prisma import PrismaFlow
from functions.research.job.report import BUDGET_NOT_EXTRACTED, SearchSummary, build_results
from functions.research.retrieval.evidence import PAGE, EvidenceChunk
from functions.research.retrieval.screening import Candidate
from tests.unit.orchestrate.fixtures import paper, synthesis_result


def _candidate(index: int) -> Candidate:
    return Candidate(paper=paper(index), source_id=f"src-{index}", scores={"relevance": 0.9}, total_score=0.8)


def _evidence(evidence_id: str, source_id: str) -> EvidenceChunk:
    return EvidenceChunk(evidence_id, source_id, "A quote.", 0.5, PAGE, 1, 0, 8, kind="finding")


SYNTHESIS = synthesis_result(
    [
        ClaimVerification("c1", "A", "supported", ["e1"], 0.8, ""),
        ClaimVerification("c2", "B", "unsupported", ["e2"], 0.2, ""),  # removed by verification
    ],
    [_evidence("e1", "src-1"), _evidence("e2", "src-2")],
)


def test_each_source_says_how_it_was_extracted_and_whether_a_kept_claim_cites_it() -> None:
    sources = [_candidate(1), _candidate(2), _candidate(3)]
    extractions = [
        Extraction(source_id="src-1", success=True),
        Extraction(source_id="src-2", success=False, failure_reason="HTTP 403", unavailable=True),
    ]
    results = build_results(
        "job-1",
        "PARTIAL",
        SYNTHESIS,
        ScreeningPayload(validated=9, passed=4, budget_skipped=["src-3"]),
        sources,
        {"src-1": "smith2025a", "src-2": "smith2025b", "src-3": "smith2025c"},
        extractions,
        SearchSummary(requests_planned=6, not_run={"arxiv": 2}, failed_connectors=["crossref"], hits=40),
        ["crossref answered errors: HTTP 500"],
        {"report.md": "teams/t/jobs/job-1/report.md"},
        PrismaFlow(identified={"arxiv": 12}, duplicates_removed=3, screened=9, included=1),
    )
    by_id = {source.source_id: source for source in results.sources}
    assert [by_id[i].cited for i in ("src-1", "src-2", "src-3")] == [True, False, False]
    assert by_id["src-1"].extraction_success and by_id["src-1"].failure_reason is None
    assert by_id["src-2"].failure_reason == "HTTP 403"
    assert by_id["src-3"].failure_reason == BUDGET_NOT_EXTRACTED
    summary = results.execution_summary
    assert (summary.queries_executed, summary.extractions_successful, summary.extractions_failed) == (4, 1, 1)
    assert summary.queries_not_run == {"arxiv": "2 not run: arxiv's rate budget"}
    assert (summary.total_sources_discovered, summary.sources_validated, summary.search_hits) == (9, 4, 40)
    document = results.model_dump(mode="json")
    assert (
        document["synthesis"]["executive_summary"] == "summary"
        and document["synthesis"]["gaps_identified"] == []
    )
    assert document["artifact_keys"] == {"report.md": "teams/t/jobs/job-1/report.md"}
    flow = document["execution_summary"]["prisma_flow"]
    assert (flow["identified"], flow["duplicates_removed"], flow["screened"]) == ({"arxiv": 12}, 3, 9)
