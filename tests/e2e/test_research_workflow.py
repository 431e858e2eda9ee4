"""End to end on the embedded runtime: HTTP API -> state machine -> real search and extraction against a
local scholarly web (four search APIs + generated PDFs) -> grounded synthesis and artifacts."""

from __future__ import annotations

import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
import rispy
from bibtexparser.entrypoint import parse_string
from fastapi.testclient import TestClient

from functions.common.tenancy import DEFAULT_TEAM
from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.app import app
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobRecord, JobStatus
from functions.orchestrate.store import DynamoDbJobStore
from functions.research.checking.finding import finding
from functions.research.job import exports
from tests.e2e.scholarly_topic import GOAL, TopicPaper, environment, normalise, serve, topic_papers
from tests.support.embedded_aws import events_queue
from tests.support.scholarly_web import Reply, ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def papers() -> list[TopicPaper]:
    return topic_papers(9, off_topic=3)


@pytest.fixture
def web(papers: list[TopicPaper]) -> Iterator[ScholarlyWeb]:
    with ScholarlyWeb() as server:
        serve(server, papers)
        yield server


def _runtime(web: ScholarlyWeb, **extra: str) -> EmbeddedAws:
    reset_workflow_settings_cache()
    env = environment(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="4", **extra)
    return EmbeddedAws(extra_environment=env)


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
    reset_workflow_settings_cache()


def _assert_every_field_declared(job_id: str) -> None:
    """Every field the job's writers stored is one the JobRecord declares (it reads back no other)."""
    stored = DynamoDbJobStore().get(DEFAULT_TEAM, job_id)
    assert stored is not None
    assert set(stored) - {"pk", "sk"} <= set(JobRecord.model_fields), set(stored) - set(
        JobRecord.model_fields
    )


def _follow(client: TestClient, job_id: str, timeout: float = 120) -> list[dict[str, Any]]:
    """Poll the status endpoint until the job is terminal; every distinct answer, in order."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = client.get(f"/api/agent/status/{job_id}")
        assert response.status_code == 200, response.text
        body = response.json()
        if not seen or (body["status"], body["current_phase"]["progress_percentage"]) != (
            seen[-1]["status"],
            seen[-1]["current_phase"]["progress_percentage"],
        ):
            seen.append(body)
        if JobStatus(body["status"]).terminal:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not finish: {seen[-1] if seen else None}")


def _assert_moves_forward(history: list[dict[str, Any]]) -> None:
    ranks = [JobStatus(item["status"]).rank for item in history]
    progress = [item["current_phase"]["progress_percentage"] for item in history]
    assert ranks == sorted(ranks), ranks
    assert progress == sorted(progress), progress


def _assert_grounded(results: dict[str, Any], papers: list[TopicPaper]) -> None:
    corpus = [normalise(paper.text) for paper in papers]
    evidence = {item["evidence_id"]: item for item in results["evidence"]}
    assert evidence
    for item in evidence.values():  # every quote is a sentence of a fetched paper
        assert any(normalise(item["quote"]) in text for text in corpus), item["quote"]
        assert item["page"] >= 1 and item["source_id"].startswith("src-")
    kept = [claim for claim in results["claims"] if claim["kept"]]
    assert kept
    for claim in kept:
        assert claim["evidence_ids"] and set(claim["evidence_ids"]) <= set(evidence)
        # A claim is its quote as shown, attributed to its authors (pronouns, abbreviations expanded from
        # the source, the paper's reference markers dropped): its numbers and nearly all its words are the quote's.
        quoted = normalise(" ".join(evidence[i]["quote"] for i in claim["evidence_ids"])).split()
        words = normalise(finding(claim["claim_text"])).split()
        assert {w for w in words if w[:1].isdigit()} <= set(quoted), claim["claim_text"]
        assert sum(1 for w in words if w in quoted) >= 0.8 * len(words), claim["claim_text"]
    cited_in_text = set(
        part.strip()
        for chunk in (
            results["synthesis"]["executive_summary"] + results["synthesis"]["synthesis_text"]
        ).split("[")[1:]
        for part in chunk.split("]", 1)[0].split(",")
    )
    assert cited_in_text and cited_in_text <= set(evidence)


def _assert_reference_exports(client: TestClient, results: dict[str, Any]) -> None:
    """RIS and CSL-JSON: one record per source, under its citation key, with its metadata."""
    ris = rispy.loads(client.get(results["artifacts"]["references.ris"]["api_path"]).text)
    csl = json.loads(client.get(results["artifacts"]["references.csl.json"]["api_path"]).text)
    exports.validate_csl_json(json.dumps(csl), csl)  # CSL input data by its schema
    sources = {source["citation_key"]: source for source in results["sources"]}
    assert [record["id"] for record in ris] == [item["id"] for item in csl] == list(sources)
    for record, item in zip(ris, csl, strict=True):
        source = sources[record["id"]]
        assert record["title"] == item["title"] == " ".join(source["title"].split())
        assert record.get("authors", []) == source["authors"]
        assert len(item.get("author", [])) == len(source["authors"])
        assert record.get("doi") == item.get("DOI") == source["doi"]
        assert record["urls"] == [source["url"]] and item["URL"] == source["url"]
        pages = sorted({e["page"] for e in results["evidence"] if e["source_id"] == source["source_id"]})
        assert record.get("notes", []) == ([exports.pages_note(pages)] if pages else [])


def _assert_prisma_flow(client: TestClient, results: dict[str, Any], final: dict[str, Any]) -> None:
    """The flow is what the job did: every connector's hits, each stage the previous one less its
    exclusions, the read sources included; the diagram carries its numbers."""
    flow = results["execution_summary"]["prisma_flow"]
    metrics = final["quality_metrics"]
    assert set(flow["identified"]) == {"arxiv", "semantic_scholar", "openalex", "crossref", "library"}, flow
    assert sum(flow["identified"].values()) == results["execution_summary"]["search_hits"]
    assert flow["screened"] == metrics["sources_discovered"]
    assert sum(flow["identified"].values()) - flow["duplicates_removed"] == flow["screened"]
    assert flow["screened"] - flow["excluded_screening"] == flow["sought_for_retrieval"] == 9
    assert sum(flow["exclusion_reasons"]["screening"].values()) == flow["excluded_screening"] >= 2
    assert flow["sought_for_retrieval"] - flow["not_retrieved"] == flow["assessed_full_text"]
    assert flow["assessed_full_text"] - flow["excluded_full_text"] == flow["included"]
    read = [source for source in results["sources"] if source["extraction_success"]]
    assert flow["included"] == len(read) == 9 and flow["not_retrieved"] == 0
    assert "citation_chasing" not in flow["identified"]
    svg = client.get(results["artifacts"]["prisma_flow.svg"]["api_path"]).text
    texts = [node.text for node in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
    assert f"Records screened (n = {flow['screened']})" in texts
    assert f"Studies included in review (n = {flow['included']})" in texts
    report = client.get(results["artifacts"]["report.md"]["api_path"]).text
    assert f"| Studies included in review | {flow['included']} |" in report


def test_job_completes_with_grounded_results_and_artifacts(
    web: ScholarlyWeb, papers: list[TopicPaper], client: TestClient
) -> None:
    with _runtime(web):
        queue_url = events_queue()
        assert client.get("/api/agent/status/not-a-job").status_code == 404  # warm the app's AWS clients
        # How fast /execute answers is measured by bench/workflow.py, not asserted here.
        response = client.post(
            "/api/agent/execute",
            json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}},
        )
        assert response.status_code == 202, response.text
        job = response.json()
        assert job["status"] == "INITIALIZED"
        assert job["execution_plan"]["estimated_sources"] == 10
        queries = job["autonomous_analysis"]["execution_strategy"]["search_queries"]
        assert {q["connector"] for q in queries} == {
            "arxiv",
            "semantic_scholar",
            "openalex",
            "crossref",
            "library",  # the team's own uploaded PDFs are searched too
        }

        history = _follow(client, job["job_id"])
        _assert_moves_forward(history)
        final = history[-1]
        assert final["status"] == "COMPLETED", final
        # 9 on-topic papers < 10 required: screening refined the queries once.
        assert any(d["decision_type"] == "ADAPTIVE_REFINEMENT" for d in final["autonomous_decisions"])
        metrics = final["quality_metrics"]
        assert metrics["sources_accepted"] == metrics["sources_validated"] == 9
        assert metrics["sources_rejected"] == metrics["sources_discovered"] - 9 >= 2  # off-topic papers

        results = client.get(f"/api/agent/results/{job['job_id']}").json()
        assert results["status"] == "COMPLETED" and results["refusal"] is False
        # Every phase ran, in order: read from the audit trail, since a poll can miss a phase a fast
        # job passes through between two looks.
        recorded = iter(entry["event"] for entry in results["audit_trail_summary"]["audit_log"])
        phases = ["JOB_CREATED", "PLAN_CREATED", "SCREENING_COMPLETED", "SYNTHESIS_WRITTEN", "JOB_FINISHED"]
        assert all(event in recorded for event in phases), results["audit_trail_summary"]["audit_log"]
        assert results["execution_summary"]["extractions_successful"] == 9
        assert results["synthesis"]["sources_analyzed"] == 9
        assert results["synthesis"]["primary_themes"]
        assert results["synthesis"]["methodologies_found"] >= 2
        assert results["synthesis"]["gaps_identified"]
        assert 0 < results["confidence_score"] <= 1
        _assert_grounded(results, papers)

        for name, content_type in (
            ("report.md", "text/markdown"),
            ("bibliography.bib", "application/x-bibtex"),
            ("references.ris", "application/x-research-info-systems"),
            ("references.csl.json", "application/vnd.citationstyles.csl+json"),
            ("annotated_bibliography.md", "text/markdown"),
            ("quote_library.json", "application/json"),
            ("search_report.md", "text/markdown"),
            ("prisma_flow.svg", "image/svg+xml"),
        ):
            assert name in results["artifacts"]
            artifact = client.get(results["artifacts"][name]["api_path"])
            assert artifact.status_code == 200 and artifact.content, name
            assert artifact.headers["content-type"].startswith(content_type), (name, artifact.headers)
        bib = parse_string(client.get(results["artifacts"]["bibliography.bib"]["api_path"]).text)
        assert not bib.failed_blocks
        assert len(bib.entries) == len(results["sources"]) == 9
        for source in results["sources"]:  # every score is explained, relevance by its best-matching aspect
            assert set(source["score_explanations"]) == set(source["scores"])
            assert "best match" in source["score_explanations"]["relevance"]
        assert {e.fields_dict["doi"].value for e in bib.entries} <= {p.sample.doi for p in papers}
        quotes = json.loads(client.get(results["artifacts"]["quote_library.json"]["api_path"]).text)
        assert quotes["total_quotes"] == len(results["evidence"])
        _assert_reference_exports(client, results)
        _assert_prisma_flow(client, results, final)
        messages = boto3.client("sqs", region_name="us-east-1").receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10
        )["Messages"]
        completed = [json.loads(m["Body"]) for m in messages]
        assert [(e["detail-type"], e["detail"]["job_id"], e["detail"]["status"]) for e in completed] == [
            ("ResearchJobCompleted", job["job_id"], "COMPLETED")
        ]
        _assert_every_field_declared(job["job_id"])


def test_failures_are_recorded_and_the_job_still_finishes(
    web: ScholarlyWeb, papers: list[TopicPaper], client: TestClient
) -> None:
    on_topic = [paper for paper in papers[:9] if paper.sample.arxiv_id]
    missing, slow, flaky = on_topic[0], on_topic[1], on_topic[2]
    web.fail(web.CROSSREF_BASE, "down")  # one connector down
    web.set_handler(missing.pdf_path, lambda request: Reply.of({"message": "gone"}, 404))  # one PDF 404
    web.hold(slow.pdf_path)  # never answered within the (shortened) extraction budget
    web.fail(flaky.pdf_path, "503", times=2)  # both HTTP attempts of the first step run fail
    # short enough for the held paper's step to give up soon, long enough for every other paper's on a
    # loaded machine
    with _runtime(web, RESEARCH_EXTRACT_BUDGET_SECONDS="15"):
        response = client.post(
            "/api/agent/execute",
            json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}},
        )
        job_id = response.json()["job_id"]
        history = _follow(client, job_id)
        _assert_moves_forward(history)
        assert history[-1]["status"] in ("COMPLETED", "PARTIAL")
        results = client.get(f"/api/agent/results/{job_id}").json()

    assert results["status"] == "PARTIAL"
    log = results["audit_trail_summary"]["audit_log"]
    events = [(entry["event"], entry["detail"]) for entry in log]
    assert any(e == "CONNECTOR_FAILED" and d.startswith("crossref") for e, d in events), events
    assert any(e == "EXTRACTION_FAILED" and missing.sample.arxiv_id in d and "404" in d for e, d in events)
    assert any(e == "EXTRACTION_TIMEOUT" and slow.sample.arxiv_id in d for e, d in events)
    assert any(e == "RETRYABLE_ERROR" and flaky.sample.arxiv_id in d for e, d in events)
    by_url = {source["url"]: source for source in results["sources"]}
    flaky_source = next(s for url, s in by_url.items() if flaky.sample.arxiv_id in url)
    assert flaky_source["extraction_success"] is True  # the Retry of the step succeeded
    assert results["execution_summary"]["extractions_failed"] == 2
    assert "crossref" in results["execution_summary"]["failed_connectors"]
    flow = results["execution_summary"]["prisma_flow"]
    assert "crossref" not in flow["identified"]  # down: it identified nothing
    # the 404 has no open full text, the held one timed out: both sought, neither read
    assert flow["not_retrieved"] == 2 and flow["exclusion_reasons"]["not_retrieved"] == {
        "extraction_failed": 1,
        "no_open_full_text": 1,
    }
    assert flow["included"] == flow["sought_for_retrieval"] - 2 == len(results["sources"]) - 2
    _assert_grounded(results, papers)


def test_scheduled_start_without_job_record_creates_it(web: ScholarlyWeb, client: TestClient) -> None:
    """EventBridge Scheduler starts the state machine directly: the Plan step makes the job record."""
    with _runtime(web) as aws:
        sfn = boto3.client("stepfunctions", region_name="us-east-1")
        sfn.start_execution(
            stateMachineArn=aws.state_machine_arns["research"],
            name="scheduled-weekly-transformers",
            input=json.dumps(
                {
                    "research_goal": GOAL,
                    "scope_parameters": {"discovery_depth": "rapid"},
                    "source": "schedule",
                }
            ),
        )
        history = _follow(client, "scheduled-weekly-transformers") if _wait_record(client) else []
    assert history and history[-1]["status"] in ("COMPLETED", "PARTIAL")
    assert history[-1]["source"] == "schedule"


def _wait_record(client: TestClient, job_id: str = "scheduled-weekly-transformers") -> bool:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if client.get(f"/api/agent/status/{job_id}").status_code == 200:
            return True
        time.sleep(0.05)
    return False


def test_human_checkpoint_abort_fails_the_job(web: ScholarlyWeb, client: TestClient) -> None:
    with _runtime(web):
        response = client.post(
            "/api/agent/execute",
            json={
                "research_goal": GOAL,
                "scope_parameters": {"discovery_depth": "rapid", "human_checkpoints": True},
            },
        )
        job_id = response.json()["job_id"]
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            status = client.get(f"/api/agent/status/{job_id}").json()
            if status.get("awaiting_checkpoint"):
                break
            time.sleep(0.05)
        assert status.get("awaiting_checkpoint"), status
        early = client.get(f"/api/agent/results/{job_id}")
        assert early.status_code == 409 and early.json()["error"] == "JOB_NOT_FINISHED"
        decided = client.post(f"/api/agent/checkpoint/{job_id}/abort", json={"reason": "wrong scope"})
        assert decided.status_code == 200, decided.text
        final = _follow(client, job_id)[-1]
        _assert_every_field_declared(job_id)
    assert final["status"] == "FAILED"
    assert "wrong scope" in final["failure_reason"]
    assert any(d["decision_type"] == "HUMAN_CHECKPOINT" for d in final["autonomous_decisions"])


def test_a_teams_uploaded_pdf_is_searched_screened_and_cited(
    web: ScholarlyWeb, papers: list[TopicPaper], client: TestClient
) -> None:
    from functions.extract.app import app as extract_app

    team_paper = topic_papers(10, off_topic=0)[9]  # on topic, and not on the scholarly web
    assert team_paper.sample.title not in {paper.sample.title for paper in papers}
    with _runtime(web), TestClient(extract_app) as extract:
        uploaded = extract.post(
            "/v1/documents",
            files={"file": ("team-study.pdf", team_paper.pdf, "application/pdf")},
            data={"metadata": json.dumps({"year": 2025})},
        )
        assert uploaded.status_code == 201, uploaded.text
        document_url = f"library://{uploaded.json()['document_id']}"

        response = client.post(
            "/api/agent/execute",
            json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}},
        )
        assert response.status_code == 202, response.text
        final = _follow(client, response.json()["job_id"])[-1]
        assert final["status"] == "COMPLETED", final

        results = client.get(f"/api/agent/results/{final['job_id']}").json()
        team_sources = [s for s in results["sources"] if s["url"] == document_url]
        assert len(team_sources) == 1, [s["url"] for s in results["sources"]]
        cited = [e for e in results["evidence"] if e["source_id"] == team_sources[0]["source_id"]]
        assert cited, "the uploaded paper yielded no evidence"
        assert all(normalise(e["quote"]) in normalise(team_paper.text) for e in cited)
        _assert_reference_exports(client, results)
        ris = rispy.loads(client.get(results["artifacts"]["references.ris"]["api_path"]).text)
        csl = json.loads(client.get(results["artifacts"]["references.csl.json"]["api_path"]).text)
        assert [r["type_of_reference"] for r in ris if r["urls"] == [document_url]] == ["GEN"]
        assert [item["type"] for item in csl if item["URL"] == document_url] == ["document"]
        assert results["execution_summary"]["prisma_flow"]["identified"]["library"] >= 1
