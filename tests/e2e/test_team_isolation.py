"""Two teams on the embedded runtime with `AUTH=required`, each with an uploaded document, a research job
(held at its human checkpoint), a schedule and an answer trace: every cross-team read, list, approve,
abort, delete and artifact download answers exactly what an unknown id answers, and the library
connector never returns the other team's papers, in the search APIs or in a job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.gateway import Gateway, load_function_apps
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from tests.e2e.scholarly_topic import GOAL, environment, serve, topic_papers
from tests.support.pdfgen import sample_paper_pdf
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]

ADMIN_TOKEN = "isolation-admin-secret"
ADMIN = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
# The uploaded paper's title repeats the job's goal, so the library connector matches it for its owner.
PRIVATE_TITLE = "Recent advances in transformer architectures: an internal review"


@dataclass
class Team:
    team_id: str
    headers: dict[str, str]
    document_id: str = ""
    job_id: str = ""
    schedule_id: str = ""
    trace_id: str = ""


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    with ScholarlyWeb() as web:
        serve(web, topic_papers(9, off_topic=3))
        reset_workflow_settings_cache()
        env = environment(
            web,
            AUTH="required",
            ADMIN_TOKEN=ADMIN_TOKEN,
            RESEARCH_EXTRACT_MAX_CONCURRENCY="4",
        )
        with EmbeddedAws(extra_environment=env), TestClient(Gateway(load_function_apps())) as test_client:
            yield test_client
        reset_workflow_settings_cache()


def _team(client: TestClient, name: str) -> Team:
    created = client.post("/admin/teams", json={"name": name, "tier": "standard"}, headers=ADMIN)
    assert created.status_code == 201, created.text
    body = created.json()
    return Team(body["team_id"], {"Authorization": f"Bearer {body['token']}"})


def _wait(client: TestClient, team: Team, until: Any, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = client.get(f"/api/agent/status/{team.job_id}", headers=team.headers)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        if until(body):
            return body
        time.sleep(0.1)
    raise AssertionError(f"job {team.job_id} never reached the expected state")


def _unknown_like(known: str) -> str:
    """An id of the same form that names nothing."""
    tail = "0000" if not known.endswith("0000") else "1111"
    return known[:-4] + tail


def _assert_reads_as_unknown(
    client: TestClient, method: str, path: str, known: str, headers: dict[str, str], **kwargs: Any
) -> None:
    """The other team's id gets the very answer an unknown id gets (status, body, id aside)."""
    unknown = _unknown_like(known)
    theirs = client.request(method, path.format(id=known), headers=headers, **kwargs)
    nobodys = client.request(method, path.format(id=unknown), headers=headers, **kwargs)
    assert theirs.status_code == 404, (path, theirs.status_code, theirs.text)
    assert nobodys.status_code == 404, (path, nobodys.status_code, nobodys.text)
    strip = {"x-request-id", "date", "content-length"}
    assert {k: v for k, v in theirs.headers.items() if k not in strip} == {
        k: v for k, v in nobodys.headers.items() if k not in strip
    }
    assert theirs.text.replace(known, "<id>") == nobodys.text.replace(unknown, "<id>"), path


def _library_urls(results: list[dict[str, Any]], key: str = "url") -> set[str]:
    return {str(item[key]) for item in results if str(item.get(key, "")).startswith("library://")}


def test_two_teams_never_see_each_others_data(client: TestClient) -> None:
    a, b = _team(client, "Team A"), _team(client, "Team B")

    # --- each team's data -------------------------------------------------------------------------
    for team, title in ((a, PRIVATE_TITLE), (b, "Coastal sediment microbiology field notes")):
        uploaded = client.post(
            "/v1/documents",
            files={"file": (f"{team.team_id}.pdf", sample_paper_pdf(title=title), "application/pdf")},
            data={"metadata": json.dumps({"title": title, "year": 2025})},
            headers=team.headers,
        )
        assert uploaded.status_code == 201, uploaded.text
        team.document_id = uploaded.json()["document_id"]
        started = client.post(
            "/api/agent/execute",
            json={
                "research_goal": GOAL,
                "scope_parameters": {"discovery_depth": "rapid", "human_checkpoints": True},
            },
            headers=team.headers,
        )
        assert started.status_code == 202, started.text
        team.job_id = started.json()["job_id"]
        schedule = client.post(
            "/api/schedules",
            json={"schedule_expression": "rate(7 days)", "research_goal": GOAL},
            headers=team.headers,
        )
        assert schedule.status_code == 201, schedule.text
        team.schedule_id = schedule.json()["schedule_id"]
    answered = client.post(
        "/v1/query", json={"query": GOAL, "options": {"preset": "fast"}}, headers=a.headers
    )
    assert answered.status_code == 200, answered.text
    a.trace_id = answered.json()["trace_id"]
    for team in (a, b):
        _wait(client, team, lambda body: body.get("awaiting_checkpoint") is True)

    # --- the owner reads its own ------------------------------------------------------------------
    assert client.get(f"/v1/documents/{a.document_id}", headers=a.headers).status_code == 200
    assert client.get(f"/v1/traces/{a.trace_id}", headers=a.headers).status_code == 200
    assert client.get(f"/v1/traces/{a.job_id}", headers=a.headers).status_code == 200  # the job's trace
    assert client.get(f"/api/schedules/{a.schedule_id}", headers=a.headers).status_code == 200
    listed = client.get("/api/schedules", headers=a.headers).json()
    assert [item["schedule_id"] for item in listed["schedules"]] == [a.schedule_id]

    # --- every cross-team read, list, approve, abort, delete: as if unknown -----------------------
    for owner, other in ((a, b), (b, a)):
        h = other.headers
        _assert_reads_as_unknown(client, "GET", "/v1/documents/{id}", owner.document_id, h)
        _assert_reads_as_unknown(client, "GET", "/api/agent/status/{id}", owner.job_id, h)
        _assert_reads_as_unknown(client, "GET", "/api/agent/results/{id}", owner.job_id, h)
        _assert_reads_as_unknown(
            client, "GET", "/api/agent/results/{id}/artifacts/report.md", owner.job_id, h
        )
        _assert_reads_as_unknown(
            client, "POST", "/api/agent/checkpoint/{id}/approve", owner.job_id, h, json={}
        )
        _assert_reads_as_unknown(client, "POST", "/api/agent/checkpoint/{id}/abort", owner.job_id, h, json={})
        _assert_reads_as_unknown(client, "GET", "/v1/traces/{id}", owner.job_id, h)
        _assert_reads_as_unknown(client, "GET", "/api/schedules/{id}", owner.schedule_id, h)
        _assert_reads_as_unknown(client, "DELETE", "/api/schedules/{id}", owner.schedule_id, h)
        listed = client.get("/api/schedules", headers=h).json()["schedules"]
        assert owner.schedule_id not in {item["schedule_id"] for item in listed}
        extracted = client.post(
            "/api/tools/extract", json={"source_url": f"library://{owner.document_id}"}, headers=h
        )
        assert extracted.status_code == 404, extracted.text
    _assert_reads_as_unknown(client, "GET", "/v1/traces/{id}", a.trace_id, b.headers)

    # nothing was changed by the other team's attempts: both jobs still wait, both schedules live
    for team in (a, b):
        assert client.get(f"/api/agent/status/{team.job_id}", headers=team.headers).json()[
            "awaiting_checkpoint"
        ]
        assert client.get(f"/api/schedules/{team.schedule_id}", headers=team.headers).status_code == 200

    # --- the library connector: each team's own papers only ---------------------------------------
    for path, body, key in (
        ("/api/tools/search", {"query": PRIVATE_TITLE}, "url"),
        ("/v1/search", {"query": PRIVATE_TITLE, "max_results": 20}, "url"),
    ):
        own = client.post(path, json=body, headers=a.headers)
        theirs = client.post(path, json=body, headers=b.headers)
        assert own.status_code == 200 and theirs.status_code == 200, (own.text, theirs.text)
        assert f"library://{a.document_id}" in _library_urls(own.json()["results"], key)
        assert _library_urls(theirs.json()["results"], key) <= {f"library://{b.document_id}"}

    # --- the owners decide; the jobs finish; artifacts stay the owner's --------------------------
    assert (
        client.post(f"/api/agent/checkpoint/{a.job_id}/approve", json={}, headers=a.headers).status_code
        == 200
    )
    assert (
        client.post(f"/api/agent/checkpoint/{b.job_id}/approve", json={}, headers=b.headers).status_code
        == 200
    )
    for team in (a, b):
        _wait(client, team, lambda body: JobStatus(body["status"]).terminal)
    report = client.get(f"/api/agent/results/{a.job_id}/artifacts/report.md", headers=a.headers)
    assert report.status_code == 200, report.text
    _assert_reads_as_unknown(
        client, "GET", "/api/agent/results/{id}/artifacts/report.md", a.job_id, b.headers
    )
    _assert_reads_as_unknown(client, "GET", "/api/agent/results/{id}", a.job_id, b.headers)
    b_results = client.get(f"/api/agent/results/{b.job_id}", headers=b.headers).json()
    b_urls = {str(source.get("url", "")) for source in b_results.get("sources", [])}
    assert f"library://{a.document_id}" not in b_urls

    # --- deletes by the owner work, and only then is the schedule gone for everyone --------------
    assert client.delete(f"/api/schedules/{a.schedule_id}", headers=a.headers).status_code == 204
    assert client.get(f"/api/schedules/{a.schedule_id}", headers=a.headers).status_code == 404
    assert client.get(f"/api/schedules/{b.schedule_id}", headers=b.headers).status_code == 200
