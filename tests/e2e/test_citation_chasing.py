"""End to end on the embedded runtime: a goal whose answering paper no search returns, but which the papers
searches do return all cite. With citation chasing on, the job finds it through a seed's references, screens,
extracts and cites it, and says so (`discovered_via`, the report); with chasing off it never sees it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.app import app
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from tests.e2e.scholarly_topic import GOAL, TopicPaper, environment, normalise, serve_cited_only, topic_papers
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def papers() -> tuple[list[TopicPaper], TopicPaper]:
    """Nine on-topic papers and three off-topic ones that searches return, and one on-topic paper cited by
    the nine that none returns."""
    generated = topic_papers(10, off_topic=3)
    return [*generated[:9], *generated[10:]], generated[9]


@pytest.fixture
def web(papers: tuple[list[TopicPaper], TopicPaper]) -> Iterator[ScholarlyWeb]:
    searched, cited_only = papers
    with ScholarlyWeb() as server:
        serve_cited_only(server, searched, cited_only)
        yield server


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
    reset_workflow_settings_cache()


def _run(client: TestClient, chasing: str, ends: tuple[str, ...] = ("COMPLETED",)) -> dict[str, Any]:
    response = client.post(
        "/api/agent/execute",
        json={
            "research_goal": GOAL,
            "scope_parameters": {"discovery_depth": "rapid", "citation_chasing": chasing},
        },
    )
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        status = client.get(f"/api/agent/status/{job_id}").json()
        if JobStatus(status["status"]).terminal:
            break
        time.sleep(0.1)
    results = client.get(f"/api/agent/results/{job_id}").json()
    assert results["status"] in ends, results.get("status")
    return dict(results)


def test_the_paper_reachable_only_through_a_citation_is_found_with_chasing_and_not_without(
    web: ScholarlyWeb, papers: tuple[list[TopicPaper], TopicPaper], client: TestClient
) -> None:
    _, cited_only = papers
    reset_workflow_settings_cache()
    with EmbeddedAws(extra_environment=environment(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="4")):
        without = _run(client, "off")
        assert cited_only.sample.doi not in {s["doi"] for s in without["sources"]}
        assert {s["discovered_via"]["method"] for s in without["sources"]} == {"search"}
        assert without["execution_summary"]["citation_chasing"] is None
        assert not web.requests_to(web.SEMANTIC_SCHOLAR_BASE + "/paper/batch")

        found = _run(client, "both")
        source = next(s for s in found["sources"] if s["doi"] == cited_only.sample.doi)
        via = source["discovered_via"]
        assert via["method"] == "references" and via["connector"] == "semantic_scholar"
        seeds = found["execution_summary"]["citation_chasing"]["seeds"]
        assert via["seed"] in seeds and len(seeds) == 2  # a rapid job's seeds
        assert source["extraction_success"] is True and source["cited"] is True
        # its evidence is quoted from its own PDF
        quotes = [e["quote"] for e in found["evidence"] if e["source_id"] == source["source_id"]]
        assert quotes and all(normalise(q) in normalise(cited_only.text) for q in quotes)
        chasing = found["execution_summary"]["citation_chasing"]
        assert chasing["mode"] == "both" and chasing["selected"] == [source["source_id"]]
        assert chasing["graph_requests"]["semantic_scholar"] >= 3  # the batch, then each seed's two lists
        assert chasing["not_chased"] == {}
        report = client.get(found["artifacts"]["report.md"]["api_path"]).text
        assert "## Found by citation chasing" in report and cited_only.sample.title in report
        others = [s for s in found["sources"] if s["source_id"] != source["source_id"]]
        assert {s["discovered_via"]["method"] for s in others} == {"search"}


def test_a_graph_that_answers_errors_costs_only_the_chasing(
    web: ScholarlyWeb, papers: tuple[list[TopicPaper], TopicPaper], client: TestClient
) -> None:
    web.fail(web.SEMANTIC_SCHOLAR_BASE + "/paper/batch", "500")
    web.fail(web.SEMANTIC_SCHOLAR_BASE + "/paper/DOI:", "500")
    web.fail(web.OPENALEX_PATH + "/doi:", "503")
    web.fail(web.CROSSREF_PATH + "/10.", "500")
    reset_workflow_settings_cache()
    with EmbeddedAws(extra_environment=environment(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="4")):
        # the providers' lookups by DOI fail too (the extraction's metadata): the job may end PARTIAL
        results = _run(client, "backward", ("COMPLETED", "PARTIAL"))
    chasing = results["execution_summary"]["citation_chasing"]
    assert len(chasing["not_chased"]) == 2 and chasing["selected"] == []
    for reason in chasing["not_chased"].values():
        assert "HTTP 500 from semantic_scholar" in reason and "HTTP 503 from openalex" in reason
    assert {s["discovered_via"]["method"] for s in results["sources"]} == {"search"}
    audit = [entry["event"] for entry in results["audit_trail_summary"]["audit_log"]]
    assert audit.count("SEED_NOT_CHASED") == 2
