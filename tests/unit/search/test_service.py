from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

import pytest

from functions.common.errors import InvalidInput, UpstreamError
from functions.search.models import ConnectorResult, FoundPaper, PaperQuery
from tests.support.fakes.connectors import StubConnector, crossref_stub, failing_stub, s2_stub, service_with

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def test_results_are_merged_scored_and_sorted() -> None:
    service = service_with(s2_stub(), crossref_stub())
    outcome = run(service.search(PaperQuery(query="transformer architectures", max_results=10)))
    assert outcome.connectors_used == ["semantic_scholar", "crossref"] and outcome.failed_connectors == {}
    assert outcome.total_found == 4 and len(outcome.papers) == 4
    scores = [p.relevance_score for p in outcome.papers]
    assert scores == sorted(scores, reverse=True)
    assert outcome.papers[0].title == "Mixture of Experts Transformer Architectures at Scale"
    assert all(isinstance(p, FoundPaper) and 0 <= p.quality_score <= 1 for p in outcome.papers)
    assert set(outcome.rrf_scores) == {p.canonical_id for p in outcome.papers}


def test_connectors_run_concurrently() -> None:
    s2, crossref = s2_stub(), crossref_stub()
    s2.meet = crossref.meet = asyncio.Barrier(2)  # each answers only while the other one runs too
    outcome = run(service_with(s2, crossref).search(PaperQuery(query="transformers")))
    assert outcome.failed_connectors == {} and outcome.connectors_used == ["semantic_scholar", "crossref"]


def test_partial_failure_reports_which_source_failed() -> None:
    service = service_with(s2_stub(), failing_stub("crossref", "HTTP 503 from crossref: down"))
    outcome = run(service.search(PaperQuery(query="transformers")))
    assert outcome.connectors_used == ["semantic_scholar"]
    assert outcome.failed_connectors == {"crossref": "HTTP 503 from crossref: down"}


def test_a_connector_that_raises_is_a_failed_source_not_a_crash() -> None:
    broken = s2_stub()
    broken.raises = RuntimeError("bug")
    outcome = run(service_with(broken, crossref_stub()).search(PaperQuery(query="transformers")))
    assert outcome.failed_connectors == {"semantic_scholar": "semantic_scholar failed: RuntimeError"}


def test_every_connector_failing_raises_upstream_error() -> None:
    service = service_with(failing_stub("arxiv", "arxiv timed out"), failing_stub("crossref", "HTTP 500"))
    with pytest.raises(UpstreamError) as raised:
        run(service.search(PaperQuery(query="x")))
    assert "arxiv: arxiv timed out" in raised.value.message and "crossref: HTTP 500" in raised.value.message


def test_repeat_is_answered_from_cache_and_failures_are_not_cached() -> None:
    s2, broken = s2_stub(), failing_stub("crossref")
    service = service_with(s2, broken)
    first = run(service.search(PaperQuery(query="Transformer  architectures")))
    second = run(service.search(PaperQuery(query="transformer architectures")))
    assert len(s2.calls) == 1 and len(broken.calls) == 2
    assert not first.from_cache and second.from_cache
    assert [p.title for p in first.papers] == [p.title for p in second.papers]


def test_filters_years_source_types_quality_and_limit() -> None:
    service = service_with(s2_stub(), crossref_stub())
    recent = run(service.search(PaperQuery(query="transformers", year_start=2023, year_end=2024)))
    assert {p.year for p in recent.papers} <= {2023, 2024} and recent.total_found == 2
    technical = run(service.search(PaperQuery(query="transformers", source_types=["technical"])))
    assert [p.title for p in technical.papers] == [
        "Efficient Training Methods for Transformer Language Models"
    ]
    quality = run(service.search(PaperQuery(query="transformers", min_quality_score=0.7)))
    assert all(p.quality_score >= 0.7 for p in quality.papers) and quality.total_found < 4
    limited = run(service.search(PaperQuery(query="transformers", max_results=1)))
    assert len(limited.papers) == 1 and limited.total_found == 4


@pytest.mark.parametrize(
    ("query", "field"),
    [
        (PaperQuery(query="   "), "query"),
        (PaperQuery(query="x", connectors=["nope"]), "connectors"),
        (PaperQuery(query="x", connectors=[]), "connectors"),
        (PaperQuery(query="x", max_results=0), "max_results"),
        (PaperQuery(query="x", per_connector=500), "per_connector"),
        (PaperQuery(query="x", year_start=2024, year_end=2020), "year_range"),
        (PaperQuery(query="x", source_types=["blogs"]), "source_types"),
    ],
)
def test_invalid_queries_name_the_field(query: PaperQuery, field: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        run(service_with(s2_stub()).search(query))
    assert raised.value.field == field and raised.value.message.startswith(field)


def test_selected_connectors_only() -> None:
    s2, cr = s2_stub(), crossref_stub()
    outcome = run(service_with(s2, cr).search(PaperQuery(query="x", connectors=["crossref"])))
    assert outcome.connectors_used == ["crossref"] and not s2.calls


def test_in_process_sources_that_are_not_cacheable_are_asked_every_time() -> None:
    library = crossref_stub()
    library.name, library.cacheable = "library", False
    service = service_with(s2_stub(), library)
    for _ in range(2):
        run(service.search(PaperQuery(query="transformers")))
    assert len(library.calls) == 2


def test_an_unreachable_bucket_table_admits_the_client() -> None:
    class BrokenLimiter:
        def __init__(self) -> None:
            self.asked: list[str] = []

        def reserve(self, key: str, limit: object, max_wait: float = 0.0) -> float:
            self.asked.append(key)
            raise ConnectionError("table unreachable")

    service = service_with(s2_stub())
    limiter = BrokenLimiter()
    service.limiter = limiter
    service.admit_client("key:abc")  # admitted: no RateLimited, no ConnectionError
    assert limiter.asked == ["client:key:abc"]


def _library(found: bool) -> StubConnector:
    library = crossref_stub()
    if not found:
        library.answer = ConnectorResult(connector="library", papers=[])
    library.name, library.cacheable = "library", False
    return library


def test_upstreams_down_but_library_found_documents_is_an_answer() -> None:
    service = service_with(failing_stub("semantic_scholar", "HTTP 503"), _library(found=True))
    outcome = run(service.search(PaperQuery(query="transformers")))
    assert outcome.papers and outcome.failed_connectors == {"semantic_scholar": "HTTP 503"}


def test_upstreams_down_and_empty_library_is_the_unavailable_error() -> None:
    service = service_with(failing_stub("semantic_scholar", "HTTP 503"), _library(found=False))
    with pytest.raises(UpstreamError, match="semantic_scholar: HTTP 503"):
        run(service.search(PaperQuery(query="transformers")))


def test_an_identical_query_of_another_team_waits_for_the_first_and_lends_it_its_place_in_line() -> None:
    stub = s2_stub(delay=0.3)
    service = service_with(stub)
    sponsors: list[tuple[str, str, int]] = []

    async def scenario() -> list[Any]:
        query = {"query": "transformer architectures", "connectors": ["semantic_scholar"]}
        big = asyncio.create_task(service.search(PaperQuery(**query, team_id="big", job_id="b7", priority=3)))
        await asyncio.sleep(0.05)
        small = asyncio.create_task(
            service.search(PaperQuery(**query, team_id="small", job_id="s1", priority=0))
        )
        await asyncio.sleep(0.05)
        shared = stub.shared[0]
        assert shared is not None
        sponsors.extend(shared.sponsors())  # what the leader's wait for its turn reads
        return list(await asyncio.gather(big, small))

    big, small = run(scenario())
    assert len(stub.calls) == 1  # made once
    assert sponsors == [("small", "s1", 0)]
    assert small.coalesced == 1 and big.coalesced == 0
    assert [p.canonical_id for p in small.papers] == [p.canonical_id for p in big.papers]
