"""A finished job's results document (results.json) for tests that play Finalize's part themselves."""

from __future__ import annotations

from typing import Any

from functions.research.job.prisma import PrismaFlow
from functions.research.job.report import ExecutionSummary, ResearchResults


def results_document(job_id: str, artifact_keys: dict[str, str], synthesis: dict[str, Any]) -> bytes:
    """What Finalize stores: a COMPLETED job's results with `synthesis` and no sources."""
    results = ResearchResults(
        job_id=job_id,
        status="COMPLETED",
        synthesis=synthesis,
        execution_summary=ExecutionSummary(
            total_sources_discovered=12,
            search_hits=40,
            sources_validated=10,
            sources_selected=10,
            extractions_successful=9,
            extractions_failed=1,
            queries_executed=5,
            failed_connectors=[],
            queries_not_run={},
            partial_reasons=[],
            search_stats={"requests_planned": 5, "cache_hits": 0, "coalesced": 0},
            prisma_flow=PrismaFlow(
                identified={"arxiv": 25, "openalex": 15},
                duplicates_removed=28,
                screened=12,
                excluded_screening=2,
                sought_for_retrieval=10,
                not_retrieved=1,
                assessed_full_text=9,
                included=9,
            ),
        ),
        sources=[],
        evidence=[],
        claims=[],
        methodologies={},
        confidence_score=0.71,
        confidence_rationale=None,
        refusal=False,
        refusal_reason=None,
        writer="extractive",
        artifact_keys=artifact_keys,
    )
    return results.model_dump_json().encode()
