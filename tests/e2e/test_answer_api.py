"""End to end on the embedded runtime: both answer faces (`/api/v1/*` and `/v1/*`) through the local
gateway, over real search and extraction against a loopback scholarly web serving real PDFs.

One runtime serves the whole module (a fresh one would cost seconds per test): the search cache, the
extraction cache and uploaded documents persist between tests, so what a test asserts about fetching is
read from its own trace, or from counters it resets after emptying the extraction cache, never from what
earlier tests left behind.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient

from functions.common.settings import get_settings
from functions.extract.pdf import parse_pdf
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.gateway import Gateway, load_function_apps
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from functions.research.presets import FOCUS_MODES, PRESETS
from tests.e2e.answer_topic import (
    CONTRADICTION_QUESTION,
    HIGH_SAVING,
    LOW_SAVING,
    PDF_PREFIXES,
    QUESTION,
    UNANSWERABLE,
    answer_papers,
    paper_for,
    team_papers,
)
from tests.e2e.scholarly_topic import GOAL, TopicPaper, environment, normalise, serve
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

# "{connector_prefix}_{hash of the URL}": arXiv, Semantic Scholar, OpenAlex, Crossref, the team's library
# (found by search), and the documents a request names
SOURCE_ID = re.compile(r"^(ax|ss|oa|cr|lib|doc)_[0-9a-f]{8}$")


@dataclass
class Served:
    web: ScholarlyWeb
    papers: list[TopicPaper]  # on the scholarly web
    team: list[TopicPaper]  # uploaded by a test (then found by the `library` connector too)
    client: TestClient

    @property
    def every_paper(self) -> list[TopicPaper]:
        return [*self.papers, *self.team]


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    papers = answer_papers()
    with ScholarlyWeb() as web:
        serve(web, papers)
        reset_workflow_settings_cache()
        env = environment(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="4")
        with EmbeddedAws(extra_environment=env), TestClient(Gateway(load_function_apps())) as client:
            yield Served(web, papers, team_papers(), client)
        reset_workflow_settings_cache()


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _trace(client: TestClient, trace_id: str) -> dict[str, Any]:
    return _ok(client.get(f"/v1/traces/{trace_id}"))


def _collapsed_agents(events: list[dict[str, Any]]) -> list[str]:
    agents: list[str] = []
    for event in events:
        if not agents or agents[-1] != event["agent"]:
            agents.append(event["agent"])
    return agents


def _named(events: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [event for event in events if event["name"] == name]


def _pdf_fetches(web: ScholarlyWeb) -> int:
    return sum(web.count(prefix) for prefix in PDF_PREFIXES)


def _forget_parsed_papers() -> None:
    """Empty the extraction cache (`parsed/` in the data bucket), so a full-text read fetches its PDF."""
    s3 = boto3.client("s3", region_name="us-east-1")
    bucket = get_settings().data_bucket
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="parsed/"):
        for item in page.get("Contents", []):
            s3.delete_object(Bucket=bucket, Key=item["Key"])


def _assert_located(citation: dict[str, Any], papers: list[TopicPaper]) -> None:
    """The citation's span is its snippet, in the abstract or in the parsed page it names."""
    paper = paper_for(citation, papers)
    snippet = citation["snippet"]
    assert normalise(snippet) in normalise(paper.text), citation
    start, end = citation["chunk_start"], citation["chunk_end"]
    if citation["origin"] == "abstract":
        assert citation["page"] is None
        assert paper.sample.abstract[start:end] == snippet, citation
    else:
        assert citation["origin"] == "page", citation
        page_text = parse_pdf(paper.pdf).pages[citation["page"] - 1].text
        # The page text keeps the PDF's line breaks; a quote has them as spaces (same length).
        assert page_text[start:end].replace("\n", " ") == snippet, citation


# ---- the seed examples ---------------------------------------------------------------------------


def test_multisource_seed_examples(served: Served) -> None:
    client = served.client
    # "What is RAG and how does it work?" with reasoning_effort high, asked of this literature.
    basic = _ok(client.post("/api/v1/research", json={"query": QUESTION, "reasoning_effort": "high"}))
    assert basic["query"] == QUESTION
    assert basic["refusal"] is False and basic["content"]
    assert basic["preset_used"] is None and basic["focus_mode_used"] is None
    assert set(basic["connectors_used"]) >= {"arxiv", "semantic_scholar", "openalex", "crossref"}
    assert basic["model"] == "extractive"
    assert set(basic["usage"]) == {"prompt_tokens", "completion_tokens"}
    assert basic["quality_gate"]["decision"] == "proceed"
    assert basic["quality_gate"]["passed_sources"] == len(basic["sources"]) > 0
    source_ids = {source["id"] for source in basic["sources"]}
    for source in basic["sources"]:
        assert set(source) >= {"id", "title", "url", "content", "score", "connector"}
        assert SOURCE_ID.match(source["id"]), source["id"]
    assert basic["citations"]
    for number, citation in enumerate(basic["citations"], start=1):
        assert citation["id"] in source_ids
        assert citation["number"] == number and f"[{number}]" in basic["content"]
        paper = paper_for(citation, served.every_paper)
        assert normalise(citation["snippet"]) in normalise(paper.text)

    # "What is RAG?" with the comprehensive preset and the documentation focus.
    preset = _ok(
        client.post(
            "/api/v1/research",
            json={
                "query": "What is sparse attention?",
                "preset": "comprehensive",
                "focus_mode": "documentation",
            },
        )
    )
    assert preset["refusal"] is False, preset["refusal_reason"]
    assert preset["preset_used"] == "Comprehensive"
    assert preset["focus_mode_used"] == "documentation"
    assert preset["quality_gate"]["decision"] == "proceed"
    assert {"passed_sources", "filtered_sources"} <= set(preset["quality_gate"])
    assert isinstance(preset["contradictions"], list)
    assert preset["rcs_summaries"]
    for summary in preset["rcs_summaries"]:
        assert summary["source_title"] in {source["title"] for source in preset["sources"]}
        assert summary["summary"] and 0 <= summary["relevance_score"] <= 1

    # The seed's /ask example, verbatim: nothing in this literature answers it.
    ask = _ok(client.post("/api/v1/ask", json={"query": UNANSWERABLE}))
    assert ask["refusal"] is True and ask["refusal_code"] == "no_relevant_sources"
    assert ask["citations"] == [] and ask["quality_gate"]["decision"] == "refuse"

    presets = _ok(client.get("/api/v1/presets"))["presets"]
    assert [preset["name"] for preset in presets] == list(PRESETS)
    assert all(preset["description"] and preset["features"] for preset in presets)
    modes = _ok(client.get("/api/v1/focus-modes"))["focus_modes"]
    assert [mode["name"] for mode in modes] == list(FOCUS_MODES)
    assert all(mode["description"] for mode in modes)


def _upload(client: TestClient, paper: TopicPaper, name: str) -> str:
    uploaded = client.post(
        "/v1/documents",
        files={"file": (name, paper.pdf, "application/pdf")},
        data={"metadata": json.dumps({"year": paper.sample.year})},
    )
    assert uploaded.status_code == 201, uploaded.text
    document_id: str = uploaded.json()["document_id"]
    return document_id


def test_trust_seed_examples(served: Served) -> None:
    client = served.client
    team = served.team  # the seed's doc-001 and doc-002: the team's own reports
    documents = [_upload(client, paper, f"team-{index}.pdf") for index, paper in enumerate(team)]
    options: dict[str, Any] = {
        "stream": False,
        "max_sources": 8,
        "temperature": 0.2,
        "embedding_model": "text-embedding-3-large",
        "search_provider": "bing",
        "enable_verifier": True,
    }
    body = {
        "query": "What is the latest guidance on sparse attention in transformer architectures?",
        "user_id": "usr-123",
        "session_id": "sess-456",
        "documents": documents,
        "options": options,
    }
    # The seed names a web search provider this deployment does not have: a 400 that lists the ones
    # it has, not a silent fallback.
    rejected = client.post("/v1/query", json=body)
    assert rejected.status_code == 400, rejected.text
    error = rejected.json()["error"]
    assert error["code"] == "invalid_request"
    assert error["details"] == {"field": "options.search_provider"}
    assert "openalex" in error["message"]

    options["search_provider"] = "all"
    answer = _ok(client.post("/v1/query", json=body))
    assert set(answer) >= {
        "answer_id",
        "query",
        "answer",
        "citations",
        "claim_verifications",
        "confidence_score",
        "refusal",
        "trace_id",
    }
    assert answer["query"] == body["query"] and answer["refusal"] is False, answer["refusal_reason"]
    assert 0 < answer["confidence_score"] <= 1
    assert answer["citations"]
    team_titles = {paper.sample.title for paper in team}
    cited_team = [c for c in answer["citations"] if c["title"] in team_titles]
    assert cited_team, "the uploaded documents were not cited"
    for citation in answer["citations"]:
        assert citation["citation_id"].startswith("cit-") and SOURCE_ID.match(citation["source_id"])
        assert citation["published_at"] is None or citation["published_at"].endswith("T00:00:00Z")
        _assert_located(citation, served.every_paper)
    cited_chunks = {citation["chunk_id"] for citation in answer["citations"]}
    for claim in answer["claim_verifications"]:
        assert claim["claim_id"].startswith("clm-")
        assert claim["verdict"] in {"supported", "partially_supported", "unsupported"}
        if claim["verdict"] != "unsupported":
            assert set(claim["evidence_chunk_ids"]) <= cited_chunks
    received = _named(_trace(client, answer["trace_id"])["events"], "request_received")[0]["payload"]
    assert received["user_id"] == "usr-123" and received["session_id"] == "sess-456"
    assert received["options"]["embedding_model"] == "text-embedding-3-large"

    search_body: dict[str, Any] = {
        "query": "latest guidance on sparse attention",
        "search_provider": "bing",
        "freshness": "month",
        "max_results": 10,
    }
    unknown = client.post("/v1/search", json=search_body)
    assert unknown.status_code == 400 and unknown.json()["error"]["details"] == {"field": "search_provider"}
    search_body["search_provider"] = "all"
    results = _ok(client.post("/v1/search", json=search_body))["results"]
    this_year = datetime.now(UTC).year
    assert 0 < len(results) <= 10
    for result in results:
        assert set(result) == {"source_id", "title", "url", "published_at", "snippet"}
        assert SOURCE_ID.match(result["source_id"]), result
        assert result["published_at"].startswith(str(this_year)), result  # "month": this year's works
    everything = _ok(client.post("/v1/search", json={"query": "sparse attention", "max_results": 50}))
    assert len(everything["results"]) > len(results)

    health = _ok(client.get("/v1/health"))
    assert health["status"] == "ok" and health["version"] == "0.1.0"


# ---- refusal, contradictions, located citations ------------------------------------------------


def test_an_unanswerable_question_is_refused_with_a_reason(served: Served) -> None:
    client = served.client
    trust = _ok(client.post("/v1/query", json={"query": UNANSWERABLE}))
    assert trust["refusal"] is True
    assert trust["refusal_code"] == "no_relevant_sources" and trust["refusal_reason"]
    assert trust["citations"] == [] and trust["confidence_score"] == 0
    decision = _named(_trace(client, trust["trace_id"])["events"], "decision")[0]
    assert decision["agent"] == "Decision" and decision["event_type"] == "refuse"
    assert decision["payload"]["reason_code"] == "no_relevant_sources"

    # A question about the served topic, with more independent sources required than the two papers
    # on activation checkpointing: the gate refuses rather than answer from too few.
    strict = _ok(
        client.post(
            "/v1/query",
            json={
                "query": CONTRADICTION_QUESTION,
                "options": {"preset": "fast", "reasoning_effort": "low", "min_sources": 10},
            },
        )
    )
    assert strict["refusal"] is True and strict["citations"] == []
    assert strict["refusal_code"] == "insufficient_sources" and "10 required" in strict["refusal_reason"]


def test_contracrow_sets_out_two_sources_that_disagree(served: Served) -> None:
    client = served.client
    body = _ok(
        client.post("/api/v1/research", json={"query": CONTRADICTION_QUESTION, "preset": "contracrow"})
    )
    assert body["refusal"] is False, body["refusal_reason"]
    assert body["preset_used"] == "ContraCrow"
    ids = {source["title"]: source["id"] for source in body["sources"]}
    disagreeing = [p for p in served.papers if p.sample.abstract.endswith((HIGH_SAVING, LOW_SAVING))]
    expected_sources = {ids[paper.sample.title] for paper in disagreeing}
    found = [
        c
        for c in body["contradictions"]
        if c["kind"] == "numeric_disagreement" and set(c["statements"]) == {HIGH_SAVING, LOW_SAVING}
    ]
    assert len(found) == 1, body["contradictions"]
    assert set(found[0]["source_ids"]) == expected_sources
    assert "62" in found[0]["description"] and "14" in found[0]["description"]
    # After the direct answer comes the disagreement, both sides cited (each attributed to its authors).
    disagreement = body["content"].split("### Where the sources disagree", 1)[1].split("###", 1)[0]
    for side in (HIGH_SAVING, LOW_SAVING):
        assert f"report that {side[:1].lower()}{side[1:]}" in disagreement
    cited = {citation["snippet"] for citation in body["citations"]}
    assert {HIGH_SAVING, LOW_SAVING} <= cited

    # The trust face runs the same critique: the trace names the disputed evidence chunks.
    trust = _ok(
        client.post("/v1/query", json={"query": CONTRADICTION_QUESTION, "options": {"preset": "contracrow"}})
    )
    chunks = {c["snippet"]: c["chunk_id"] for c in trust["citations"]}
    critique = _named(_trace(client, trust["trace_id"])["events"], "critique_generated")[0]
    assert sorted([chunks[HIGH_SAVING], chunks[LOW_SAVING]]) in [
        sorted(pair) for pair in critique["payload"]["contradictions"]
    ]


def test_every_citation_points_at_its_snippet_in_the_source_text(served: Served) -> None:
    body = _ok(
        served.client.post(
            "/v1/query",
            json={"query": QUESTION, "options": {"preset": "comprehensive", "reasoning_effort": "high"}},
        )
    )
    assert body["refusal"] is False, body["refusal_reason"]
    origins = {citation["origin"] for citation in body["citations"]}
    assert origins == {"abstract", "page"}, origins  # high effort reads the top papers in full
    for citation in body["citations"]:
        _assert_located(citation, served.every_paper)
    numbers = [int(citation["citation_id"].split("-")[1]) for citation in body["citations"]]
    assert numbers == list(range(1, len(numbers) + 1))
    assert all(f"[{n}]" in body["answer"] for n in numbers)


# ---- traces --------------------------------------------------------------------------------------


def test_a_query_trace_lists_every_agent_in_order(served: Served) -> None:
    client = served.client
    for preset, agents in (
        ("fast", ["Planner", "Retriever", "Writer", "Verifier", "Red-Team", "Decision"]),
        ("comprehensive", ["Planner", "Retriever", "Writer", "Verifier", "Critic", "Red-Team", "Decision"]),
    ):
        body = _ok(client.post("/v1/query", json={"query": QUESTION, "options": {"preset": preset}}))
        trace = _trace(client, body["trace_id"])
        assert trace["trace_id"] == body["trace_id"] and trace["query"] == QUESTION
        events = trace["events"]
        # The gate also admits the answer once, when its first sentence is verified (the stream starts
        # there: with full text, from the abstracts while the PDFs are read), before it decides last.
        stages = [event for event in events if event["name"] != "answer_admitted"]
        assert _collapsed_agents(stages) == agents, [(e["agent"], e["name"]) for e in events]
        admitted = [i for i, event in enumerate(events) if event["name"] == "answer_admitted"]
        assert len(admitted) == 1 and events[admitted[0]]["agent"] == "Decision"
        assert [e["event_id"] for e in events] == [f"evt-{i:03d}" for i in range(1, len(events) + 1)]
        assert [e["timestamp"] for e in events] == sorted(e["timestamp"] for e in events)
        names = [event["name"] for event in events]
        milestones = [
            "plan_created",
            "search_started",
            "search_completed",
            "retrieval_completed",
            "draft_written",
            "verification_completed",
            "redteam_completed",
            "decision",
        ]
        assert [names.index(name) for name in milestones] == sorted(names.index(n) for n in milestones)
        for event in _named(events, "search_completed"):
            assert event["event_type"] == "search" and event["payload"]["result_count"] > 0
        assert admitted[0] < [event["name"] for event in events].index("verification_completed")
        verified = _named(events, "verification_completed")[0]["payload"]
        assert verified["claim_ids"] == [claim["claim_id"] for claim in body["claim_verifications"]]


def test_a_research_job_trace_is_readable(served: Served) -> None:
    client = served.client
    started = client.post(
        "/api/agent/execute", json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}}
    )
    assert started.status_code == 202, started.text
    job_id = started.json()["job_id"]
    deadline = time.monotonic() + 150
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = _ok(client.get(f"/api/agent/status/{job_id}"))
        if JobStatus(status["status"]).terminal:
            break
        time.sleep(0.1)
    assert status["status"] in ("COMPLETED", "PARTIAL"), status
    trace = _trace(client, job_id)
    assert trace["trace_id"] == job_id and trace["query"] == GOAL
    events = trace["events"]
    # The job's steps append their events as they finish (the searches concurrently): stages in order.
    assert _collapsed_agents(events) == [
        "Planner",
        "Retriever",
        "Writer",
        "Verifier",
        "Red-Team",
        "Decision",
    ], [(e["agent"], e["name"]) for e in events]
    results = _ok(client.get(f"/api/agent/results/{job_id}"))
    summary = results["execution_summary"]
    read = _named(events, "source_read")
    assert len(read) == summary["extractions_successful"] + summary["extractions_failed"]
    assert {e["payload"]["connector"] for e in _named(events, "search_completed")} >= {
        "arxiv",
        "semantic_scholar",
        "openalex",
        "crossref",
    }
    decision = _named(events, "decision")[0]["payload"]
    assert decision["status"] == results["status"] and decision["refusal"] is results["refusal"]


def test_an_unknown_trace_is_a_404_in_the_trust_error_format(served: Served) -> None:
    response = served.client.get("/v1/traces/trace-0000000000000000")
    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": "not_found", "message": "trace trace-0000000000000000 not found", "details": {}}
    }


# ---- request ids and bad input ---------------------------------------------------------------------


def test_request_ids_are_honoured_and_echoed_on_both_faces(served: Served) -> None:
    client = served.client
    low = {"preset": "fast", "reasoning_effort": "low"}
    for method, path, body in (
        ("POST", "/api/v1/ask", {"query": QUESTION, "preset": "fast"}),
        ("POST", "/v1/query", {"query": QUESTION, "options": low}),
        ("POST", "/v1/query", {}),  # errors carry it too
        ("POST", "/api/v1/research", {}),
        ("GET", "/v1/traces/trace-unknown", None),
    ):
        response = client.request(method, path, json=body, headers={"X-Request-ID": "req-e2e-7f3a"})
        assert response.headers["X-Request-ID"] == "req-e2e-7f3a", (path, response.status_code)
        if response.status_code == 200 and "trace_id" in response.json():  # and the trace can be joined
            received = _named(_trace(client, response.json()["trace_id"])["events"], "request_received")
            assert received[0]["payload"]["request_id"] == "req-e2e-7f3a"
    for path in ("/api/v1/presets", "/api/v1/focus-modes", "/v1/health"):
        generated = {client.get(path).headers["X-Request-ID"] for _ in range(2)}
        assert len(generated) == 2 and "" not in generated  # a fresh id per request


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/research", {}, "query"),
        ("/api/v1/research", {"query": "   "}, "query"),
        ("/api/v1/research", {"query": "q", "top_k": 0}, "top_k"),
        ("/api/v1/research", {"query": "q", "preset": "thorough"}, "preset"),
        ("/api/v1/ask", {"query": "q", "focus_mode": "gossip"}, "focus_mode"),
        ("/api/v1/research", {"query": "q", "reasoning_effort": "extreme"}, "reasoning_effort"),
        ("/api/v1/research", {"query": "q", "connectors": ["altavista"]}, "connectors"),
    ],
)
def test_bad_input_on_the_multisource_face_is_a_400_detail(
    served: Served, path: str, body: dict[str, Any], field: str
) -> None:
    response = served.client.post(path, json=body)
    assert response.status_code == 400, response.text
    detail = response.json()
    assert list(detail) == ["detail"] and isinstance(detail["detail"], str)
    assert field in detail["detail"]


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/v1/query", {"query": "q", "options": {"max_sources": 0}}, "options.max_sources"),
        ("/v1/query", {"query": "q", "options": {"preset": "thorough"}}, "options.preset"),
        ("/v1/query", {"query": "q", "options": {"temperature": "hot"}}, "options.temperature"),
        ("/v1/query/stream", {"query": ""}, "query"),
        ("/v1/search", {"query": "q", "freshness": "decade"}, "freshness"),
        ("/v1/search", {"query": "q", "max_results": 500}, "max_results"),
    ],
)
def test_bad_input_on_the_trust_face_is_a_400_error_object(
    served: Served, path: str, body: dict[str, Any], field: str
) -> None:
    response = served.client.post(path, json=body)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert error["code"] == "invalid_request" and error["message"]
    assert error["details"]["field"] == field


def test_a_missing_query_is_the_seeds_error_example(served: Served) -> None:
    response = served.client.post("/v1/query", json={"options": {"preset": "fast"}})
    assert response.status_code == 400
    assert response.json() == {
        "error": {"code": "invalid_request", "message": "Missing query field", "details": {"field": "query"}}
    }
    malformed = served.client.post(
        "/v1/query", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert malformed.status_code == 400 and malformed.json()["error"]["code"] == "invalid_request"


# ---- presets and focus modes change what happens ---------------------------------------------------


def test_fast_reads_no_full_text_and_comprehensive_reads_pdfs(served: Served) -> None:
    client, web = served.client, served.web
    question = "How does mixture of experts routing work in transformer architectures?"
    web.reset_requests()
    fast = _ok(client.post("/v1/query", json={"query": question, "options": {"preset": "fast"}}))
    assert fast["refusal"] is False, fast["refusal_reason"]
    assert _pdf_fetches(web) == 0
    assert {citation["origin"] for citation in fast["citations"]} == {"abstract"}
    fast_events = _trace(client, fast["trace_id"])["events"]
    assert not _named(fast_events, "full_text_read")
    assert _named(fast_events, "plan_created")[0]["payload"]["full_text_papers"] == 0
    assert "###" not in fast["answer"]  # plain answer style

    _forget_parsed_papers()
    web.reset_requests()
    full = _ok(client.post("/v1/query", json={"query": question, "options": {"preset": "comprehensive"}}))
    assert full["refusal"] is False, full["refusal_reason"]
    read = _named(_trace(client, full["trace_id"])["events"], "full_text_read")[0]["payload"]
    assert read["read"] and set(read["read"]) == set(read["requested"])
    # each paper read in full from the scholarly web was fetched there (the team's uploads are not)
    assert _pdf_fetches(web) >= len([source for source in read["read"] if not source.startswith("lib_")]) > 0
    assert "### " in full["answer"]  # academic style: sections

    tutorial = _ok(
        client.post(
            "/api/v1/research", json={"query": question, "preset": "tutorial", "reasoning_effort": "low"}
        )
    )
    assert tutorial["preset_used"] == "Tutorial" and tutorial["rcs_summaries"] == []
    assert any(f"### {h}" in tutorial["content"] for h in ("What it is", "How it works", "What to watch for"))


def test_focus_mode_news_keeps_only_recent_sources(served: Served) -> None:
    client = served.client
    question = "What are recent advances in transformer architectures?"
    this_year = datetime.now(UTC).year

    def years(body: dict[str, Any]) -> set[int]:
        return {int(source["published_at"][:4]) for source in body["sources"]}

    general = _ok(client.post("/api/v1/research", json={"query": question, "preset": "fast"}))
    news = _ok(
        client.post("/api/v1/research", json={"query": question, "preset": "fast", "focus_mode": "news"})
    )
    assert news["refusal"] is False and news["focus_mode_used"] == "news"
    assert min(years(news)) >= this_year - 2
    assert min(years(general)) < this_year - 2  # older papers are served too
    plan = _named(_trace(client, news["trace_id"])["events"], "plan_created")[0]["payload"]
    assert plan["focus_mode"] == "news" and plan["years"] == [this_year - 2, this_year]
