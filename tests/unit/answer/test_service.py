"""AnswerService over the real pipeline (in-memory search and trace store): traces, faces, search."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from functions.answer.errors import InternalFailure, NoResults, SearchUnavailable
from functions.answer.schemas import QueryResponse, ResearchResponse, TraceResponse, TrustSearchRequest
from functions.answer.service import (
    freshness_year_start,
    new_answer_id,
    new_trace_id,
    to_query_response,
    to_research_response,
)
from functions.common.errors import InvalidInput, NotFound, UpstreamError
from functions.research.pipeline import AnswerRequest
from tests.support.fakes.answer_search import InMemorySearch, paper
from tests.unit.answer.harness import QUESTION, RAG, BrokenSearch, Harness, harness


def test_ids_have_their_prefixes_and_are_unique() -> None:
    assert new_answer_id().startswith("ans-") and len(new_answer_id()) == 4 + 32
    assert new_trace_id().startswith("trace-")
    assert len({new_trace_id() for _ in range(100)}) == 100


def test_an_answer_stores_its_whole_trace_and_maps_to_the_trust_face() -> None:
    rig = harness()
    service = rig.service()
    request = AnswerRequest(question=QUESTION, reasoning_effort="low")
    result = asyncio.run(service.answer(request, trace_id="trace-1", received={"user_id": "usr-1"}))
    assert rig.opened == rig.closed == 1
    body = to_query_response("ans-1", result)
    QueryResponse.model_validate(body)
    assert body["answer_id"] == "ans-1" and body["trace_id"] == "trace-1" and body["refusal"] is False
    assert body["citations"], body
    abstracts = {p.title: p.abstract or "" for p in RAG}
    for citation in body["citations"]:
        assert citation["origin"] == "abstract"
        assert (
            abstracts[citation["title"]][citation["chunk_start"] : citation["chunk_end"]]
            == citation["snippet"]
        )
    assert {c["claim_id"] for c in body["claim_verifications"]} >= {"clm-001"}

    trace = service.trace("team-default", "trace-1")
    TraceResponse.model_validate(trace)
    names = [event["name"] for event in trace["events"]]
    assert names[0] == "request_received" and names[1] == "plan_created" and names[-1] == "decision"
    assert trace["events"][0]["payload"]["user_id"] == "usr-1"
    assert trace["events"][0]["payload"]["trace_id"] == "trace-1"
    assert trace["query"] == QUESTION
    assert [event["event_id"] for event in trace["events"]] == [
        f"evt-{n:03d}" for n in range(1, len(names) + 1)
    ]


def test_the_research_face_names_the_preset_and_keeps_every_seed_field() -> None:
    service = harness().service()
    request = AnswerRequest(question=QUESTION, preset="comprehensive", focus_mode="documentation")
    body = to_research_response(request, asyncio.run(service.answer(request, trace_id="trace-2")))
    ResearchResponse.model_validate(body)
    assert body["preset_used"] == "Comprehensive" and body["focus_mode_used"] == "documentation"
    assert body["quality_gate"]["decision"] == "proceed"
    assert {"passed_sources", "filtered_sources"} <= set(body["quality_gate"])
    assert body["rcs_summaries"] and {"source_title", "summary", "relevance_score"} <= set(
        body["rcs_summaries"][0]
    )
    assert all(source["id"].split("_")[0] in {"ax", "oa"} for source in body["sources"])
    assert {citation["id"] for citation in body["citations"]} <= {source["id"] for source in body["sources"]}
    for citation in body["citations"]:
        assert f"[{citation['number']}]" in body["content"]
    assert body["usage"] == {"prompt_tokens": 0, "completion_tokens": 0}

    plain = AnswerRequest(question=QUESTION)
    body = to_research_response(plain, asyncio.run(service.answer(plain, trace_id="trace-3")))
    assert body["preset_used"] is None and body["focus_mode_used"] is None


def test_a_refusal_is_an_answer_not_an_error() -> None:
    service = harness().service()
    request = AnswerRequest(
        question="What is the boiling point of liquid nitrogen on Mars?", reasoning_effort="low"
    )
    result = asyncio.run(service.answer(request, trace_id="trace-4"))
    body = to_query_response("ans-4", result)
    assert body["refusal"] is True and body["citations"] == [] and body["confidence_score"] == 0.0
    assert body["refusal_code"] and body["refusal_reason"]
    if result.sources or result.quality_gate["filtered_sources"]:
        research = to_research_response(request, result)
        assert research["refusal"] is True and research["quality_gate"]["decision"] == "refuse"


def test_nothing_found_at_all_is_no_results_on_the_research_face() -> None:
    service = harness([paper("Crop rotation", "Crop rotation increases soil nitrogen.")]).service()
    request = AnswerRequest(question="quantum chromodynamics lattice", reasoning_effort="low")
    result = asyncio.run(service.answer(request, trace_id="trace-5"))
    with pytest.raises(NoResults) as raised:
        to_research_response(request, result)
    assert raised.value.message == "No search results found"
    assert to_query_response("ans-5", result)["refusal_code"] == "no_relevant_sources"
    assert service.trace("team-default", "trace-5")["events"][-1]["name"] == "decision"


def test_when_every_connector_fails_the_run_fails_and_its_trace_says_why() -> None:
    service = harness(fail=True).service()
    with pytest.raises(SearchUnavailable, match="openalex: down"):
        asyncio.run(service.answer(AnswerRequest(question=QUESTION), trace_id="trace-6"))
    events = service.trace("team-default", "trace-6")["events"]
    assert events[-1]["name"] == "error" and events[-1]["payload"]["code"] == "upstream_error"
    assert "search_started" in [event["name"] for event in events]


def test_no_configured_connector_is_search_unavailable() -> None:
    search = BrokenSearch(connector_names=[])
    service = Harness(search).service()
    with pytest.raises(SearchUnavailable, match="No search connectors configured"):
        asyncio.run(service.answer(AnswerRequest(question=QUESTION), trace_id="trace-7"))


def test_a_bug_becomes_an_internal_failure_naming_only_the_exception_type() -> None:
    service = Harness(BrokenSearch(), broken_pipeline=True).service()
    with pytest.raises(InternalFailure) as raised:
        asyncio.run(service.answer(AnswerRequest(question=QUESTION), trace_id="trace-8"))
    assert raised.value.message == "RuntimeError"
    error = service.trace("team-default", "trace-8")["events"][-1]
    assert error["payload"] == {"code": "internal_error", "message": "RuntimeError"}


def test_a_failing_search_port_is_an_upstream_failure_of_the_search() -> None:
    service = Harness(BrokenSearch()).service()
    with pytest.raises(UpstreamError, match="search failed: RuntimeError"):
        asyncio.run(service.answer(AnswerRequest(question=QUESTION), trace_id="trace-9"))


def test_unknown_trace_is_not_found() -> None:
    with pytest.raises(NotFound):
        harness().service().trace("team-default", "trace-missing")


def test_search_provider_names_one_connector_or_all() -> None:
    service = harness().service()
    assert service.connectors_for(None, "search_provider") is None
    assert service.connectors_for("ALL", "search_provider") is None
    assert service.connectors_for("arxiv", "search_provider") == ["arxiv"]
    with pytest.raises(InvalidInput) as raised:
        service.connectors_for("bing", "options.search_provider")
    assert raised.value.field == "options.search_provider" and "arxiv, openalex, all" in raised.value.message
    service.check_connectors(["openalex"])
    with pytest.raises(InvalidInput, match="unknown connector 'tavily'"):
        service.check_connectors(["openalex", "tavily"])
    with pytest.raises(InvalidInput, match="at least one"):
        service.check_connectors([])


def test_freshness_is_as_fine_as_a_publication_year() -> None:
    now = datetime(2026, 3, 4, tzinfo=UTC)
    assert freshness_year_start(None, now) is None
    assert [freshness_year_start(f, now) for f in ("day", "week", "month")] == [2026, 2026, 2026]
    assert freshness_year_start("year", now) == 2025


def test_search_returns_seed_results_and_asks_for_fresh_years() -> None:
    search = InMemorySearch(list(RAG))
    service = Harness(search).service()
    now = datetime(2026, 3, 4, tzinfo=UTC)
    everything = asyncio.run(
        service.search("team-default", TrustSearchRequest(query="retrieval", max_results=10), now=now)
    )
    assert {r["title"] for r in everything} == {RAG[0].title, RAG[1].title}
    first = everything[0]
    assert set(first) == {"source_id", "title", "url", "published_at", "snippet"}
    assert first["source_id"].split("_")[0] in {"ax", "oa"}
    assert search.queries[-1].year_start is None and search.queries[-1].year_end is None
    asyncio.run(
        service.search(
            "team-default",
            TrustSearchRequest(query="retrieval", search_provider="arxiv", freshness="year", max_results=3),
            now=now,
        )
    )
    query = search.queries[-1]
    assert (query.year_start, query.year_end, query.connectors) == (2025, 2026, ["arxiv"])
    assert query.max_results == query.per_connector == 3


def test_the_trust_face_lists_the_cited_sources_as_a_reader_cites_them() -> None:
    result = asyncio.run(harness().service().answer(AnswerRequest(question=QUESTION), trace_id="trace-1"))
    body = to_query_response("ans-1", result)
    QueryResponse.model_validate(body)
    first_cited = list(dict.fromkeys(citation["source_id"] for citation in body["citations"]))
    assert [source["source_id"] for source in body["sources"]] == first_cited
    titles = {p.title: p for p in RAG}
    for source in body["sources"]:
        assert source["published_at"].startswith(str(titles[source["title"]].year))
        assert source["venue"] == "Journal of Tests" and isinstance(source["authors"], list)
    assert body["failed_connectors"] == {}
