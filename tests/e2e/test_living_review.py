"""Living reviews end to end on the embedded runtime: one schedule, two runs over a local scholarly web
that changes between them (a paper added, one removed, one retracted in OpenAlex). The second run's
digest names exactly those changes; ResearchDigestReady carries it; a loopback webhook receiver checks
every delivery's signature, and the first delivery's 500 is retried and logged."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest
from fastapi.testclient import TestClient

from functions.admin.app import app as admin_app
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.scheduler import LocalScheduler
from functions.orchestrate.app import app
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from functions.schedules.wiring import schedule_store
from functions.webhooks.signing import EVENT_HEADER
from tests.e2e.scholarly_topic import GOAL, TopicPaper, environment, serve, topic_papers
from tests.support.embedded_aws import events_queue
from tests.support.scholarly_fixtures import SamplePaper, openalex_works, semantic_scholar_search
from tests.support.scholarly_web import RecordedRequest, Reply, ScholarlyWeb
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ADMIN = "admin-token-for-living-reviews"


class OpenAlex:
    """OpenAlex on the scholarly web: search answers (with `is_retracted`) and DOI lookups."""

    def __init__(self) -> None:
        self.searchable: list[TopicPaper] = []  # what /works?search= returns
        self.known: list[TopicPaper] = []  # what a DOI lookup can find
        self.retracted: set[str] = set()  # DOIs
        self.lookups: list[set[str]] = []

    def __call__(self, request: RecordedRequest) -> Reply:
        wanted = request.param("filter") or ""
        if wanted.startswith("doi:"):
            asked = set(wanted.removeprefix("doi:").split("|"))
            self.lookups.append(asked)
            works = [
                {
                    "id": f"https://openalex.org/W{9500 + index}",
                    "doi": f"https://doi.org/{paper.sample.doi}",
                    "is_retracted": paper.sample.doi in self.retracted,
                }
                for index, paper in enumerate(self.known)
                if paper.sample.doi in asked
            ]
            return Reply.of({"meta": {"count": len(works)}, "results": works})
        body = openalex_works([paper.sample for paper in self.searchable])
        for work in body["results"]:
            work["is_retracted"] = work["doi"].removeprefix("https://doi.org/") in self.retracted
        return Reply.of(body)


class CitingWorks:
    """Semantic Scholar's citation graph on the scholarly web: its batch lookup knows every seed, and every
    paper is cited by the works in `citing` (OpenAlex, asked first, knows no seed by DOI here)."""

    def __init__(self) -> None:
        self.citing: list[SamplePaper] = []

    def __call__(self, request: RecordedRequest) -> Reply:
        if request.path.endswith("/paper/batch"):
            return Reply.of([{"paperId": identifier} for identifier in request.json()["ids"]])
        if request.path.endswith("/citations"):
            records = semantic_scholar_search(self.citing)["data"]
            return Reply.of({"offset": 0, "data": [{"citingPaper": record} for record in records]})
        return Reply.of({"error": "Paper not found"}, 404)


def _citing_paper(n: int) -> SamplePaper:
    return SamplePaper(
        title=f"A later study {n} that builds on transformer architectures",
        abstract="We build on earlier transformer work.",
        year=2030,
        doi=f"10.5555/citing.{n}",
    )


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
    reset_workflow_settings_cache()


def _terminal(
    client: TestClient, job_id: str, headers: dict[str, str], timeout: float = 150
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        response = client.get(f"/api/agent/status/{job_id}", headers=headers)
        if response.status_code == 200 and JobStatus(response.json()["status"]).terminal:
            body: dict[str, Any] = response.json()
            return body
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish")


def _dois(items: list[dict[str, Any]]) -> list[str]:
    return sorted(str(item["doi"]) for item in items)


def _team(admin: TestClient) -> tuple[str, str]:
    auth = {"Authorization": f"Bearer {ADMIN}"}
    team_id = admin.post(
        "/admin/teams", json={"name": "Living reviews", "tier": "standard"}, headers=auth
    ).json()["team_id"]
    secret = admin.post(f"/admin/teams/{team_id}/webhook-secret", headers=auth)
    assert secret.status_code == 201, secret.text
    return team_id, secret.json()["webhook_secret"]


def test_two_runs_of_one_schedule_report_exactly_what_changed(client: TestClient) -> None:
    papers = topic_papers(10, off_topic=2)  # 0-9 on topic, 10-11 off topic
    removed, added, retracted = papers[0], papers[9], papers[3]
    first_web = [paper for paper in papers if paper is not added]
    second_web = [paper for paper in papers if paper is not removed]
    openalex, citing = OpenAlex(), CitingWorks()
    citing.citing = [_citing_paper(1)]
    with ScholarlyWeb() as web, WebhookReceiver(answers=[500]) as receiver:
        serve(web, first_web)
        openalex.searchable, openalex.known = list(first_web), list(papers)
        web.set_handler(web.OPENALEX_PATH, openalex)
        web.set_handler(web.SEMANTIC_SCHOLAR_BASE + "/paper/", citing, prefix=True)
        env = environment(
            web,
            WEBHOOK_ALLOW_PRIVATE_HOSTS=receiver.host_port,
            SEARCH_CACHE_TTL_SECONDS="0",  # each run asks the scholarly web again
            RESEARCH_EXTRACT_MAX_CONCURRENCY="4",
            WEBHOOK_BACKOFF_SECONDS="0.05",
            ADMIN_TOKEN=ADMIN,
        )
        reset_workflow_settings_cache()
        with EmbeddedAws(extra_environment=env), TestClient(admin_app) as admin:
            queue_url = events_queue()
            team_id, secret = _team(admin)
            receiver.secret = secret
            team = {"x-team-id": team_id}
            created = client.post(
                "/api/schedules",
                json={
                    "schedule_expression": "rate(1 day)",
                    "research_goal": GOAL,
                    "scope_parameters": {"discovery_depth": "rapid"},
                    "callback_url": receiver.url("/living-review"),
                },
                headers=team,
            )
            assert created.status_code == 201, created.text
            schedule_id = created.json()["schedule_id"]
            now = [datetime.now(UTC)]
            scheduler = LocalScheduler(store=schedule_store(), clock=lambda: now[0])
            assert scheduler.tick() == []

            now[0] += timedelta(days=1, minutes=1)
            (first_job,) = scheduler.tick()
            assert _terminal(client, first_job, team)["status"] == "COMPLETED"
            first = client.get(f"/api/agent/results/{first_job}", headers=team).json()

            # the literature moves on: one paper appears (not yet in OpenAlex search), one disappears,
            # and OpenAlex flags one as retracted
            serve(web, second_web)
            openalex.searchable = [paper for paper in second_web if paper is not added]
            openalex.retracted = {str(retracted.sample.doi)}
            web.set_handler(web.OPENALEX_PATH, openalex)
            citing.citing.append(_citing_paper(2))  # a new work cites the review's papers
            now[0] += timedelta(days=1)
            (second_job,) = scheduler.tick()
            assert _terminal(client, second_job, team)["status"] == "COMPLETED"
            second = client.get(f"/api/agent/results/{second_job}", headers=team).json()

            schedule = client.get(f"/api/schedules/{schedule_id}", headers=team).json()
            deliveries = client.get("/api/webhooks/deliveries", params={"job_id": first_job}, headers=team)
            other_team = client.get(
                "/api/webhooks/deliveries",
                params={"job_id": first_job},
                headers={"x-team-id": "team-ffffffffffff"},
            )
            messages = boto3.client("sqs", region_name="us-east-1").receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=10
            )["Messages"]
            received = receiver.wait_for(3)

    # the first run is the baseline
    baseline = first["changes_since_last_run"]
    assert baseline["first_run"] is True and baseline["previous_job_id"] is None
    assert all(baseline["counts"][name] == 0 for name in ("new_sources", "sources_no_longer_found"))
    assert {s["doi"] for s in first["sources"]} == {p.sample.doi for p in first_web[:9]}
    assert all(s["is_retracted"] is False for s in first["sources"])
    assert baseline["new_citing_works"] == [] and baseline["citing_works_seen"] == ["doi:10.5555/citing.1"]

    # the second names exactly the three changes
    digest = second["changes_since_last_run"]
    assert digest["first_run"] is False and digest["previous_job_id"] == first_job
    assert digest["schedule_id"] == schedule_id and digest["job_id"] == second_job
    assert _dois(digest["new_sources"]) == [added.sample.doi]
    assert _dois(digest["sources_no_longer_found"]) == [removed.sample.doi]
    assert digest["sources_no_longer_selected"] == []
    assert _dois(digest["newly_retracted_sources"]) == [retracted.sample.doi]
    assert _dois(digest["retracted_sources"]) == [retracted.sample.doi]
    assert digest["counts"]["new_sources"] == digest["counts"]["sources_no_longer_found"] == 1
    assert digest["counts"]["newly_retracted_sources"] == 1
    assert digest["claims_with_changed_verdict"] == []  # the remaining papers say what they said
    # the themes are the goal's facets, not terms of the evidence: a paper on sparse attention
    # removed and one on long context added leave them as they were
    assert first["synthesis"]["primary_themes"] == second["synthesis"]["primary_themes"]
    assert digest["new_themes"] == [] and digest["vanished_themes"] == []
    assert digest["counts"]["claims_citing_retracted_sources"] >= 1
    assert all(
        retracted_id in {s["source_id"] for s in digest["retracted_sources"]}
        for claim in digest["claims_citing_retracted_sources"]
        for retracted_id in claim["retracted_source_ids"]
    )
    assert digest["caveats"] == [] and digest["retraction_check"]["error"] is None
    # the works citing the review's included sources: the one that appeared since the first run
    assert _dois(digest["new_citing_works"]) == ["10.5555/citing.2"]
    assert digest["counts"]["new_citing_works"] == 1
    by_doi = {s["doi"]: s for s in second["sources"]}
    assert by_doi[retracted.sample.doi]["is_retracted"] is True
    assert by_doi[added.sample.doi]["is_retracted"] is False  # from the DOI lookup: not in OpenAlex search
    assert any(added.sample.doi in asked and retracted.sample.doi in asked for asked in openalex.lookups)

    # the schedule remembers its last run
    assert schedule["last_run"]["job_id"] == second_job and schedule["last_run"]["status"] == "COMPLETED"

    # ResearchDigestReady for each run, carrying the digest's counts and lists
    events = [json.loads(message["Body"]) for message in messages]
    digests = [e["detail"] for e in events if e["detail-type"] == "ResearchDigestReady"]
    assert [d["job_id"] for d in digests] == [first_job, second_job]
    assert digests[1]["team_id"] == team_id and digests[1]["has_changes"] is True
    assert digests[1]["changes_since_last_run"]["counts"] == digest["counts"]
    assert _dois(digests[1]["changes_since_last_run"]["newly_retracted_sources"]) == [retracted.sample.doi]

    # the webhook: signed, the first attempt's 500 retried, each run's digest delivered once
    assert [r.status for r in received] == [500, 200, 200]
    assert all(r.verified for r in received), [r.headers for r in received]
    assert [r.headers[EVENT_HEADER.lower()] for r in received] == ["digest.ready"] * 3
    delivered = [r.json() for r in received if r.status == 200]
    assert [d["job"]["job_id"] for d in delivered] == [first_job, second_job]
    assert delivered[1]["changes_since_last_run"] == digest
    assert delivered[1]["job"]["schedule_id"] == schedule_id and delivered[1]["team_id"] == team_id

    # the delivery log, read by the team (404 for another team, like an unknown job)
    assert deliveries.status_code == 200, deliveries.text
    (delivery,) = deliveries.json()["deliveries"]
    assert delivery["outcome"] == "delivered" and delivery["event"] == "digest.ready"
    assert [(a["attempt"], a["outcome"], a["status_code"]) for a in delivery["attempts"]] == [
        (1, "retrying", 500),
        (2, "delivered", 200),
    ]
    assert other_team.status_code == 404 and other_team.json()["error"] == "JOB_NOT_FOUND"


def test_api_jobs_call_back_on_completion_and_failure(client: TestClient) -> None:
    papers = topic_papers(9, off_topic=1)
    with ScholarlyWeb() as web, WebhookReceiver() as receiver:
        serve(web, papers)
        env = environment(
            web,
            WEBHOOK_ALLOW_PRIVATE_HOSTS=receiver.host_port,
            RESEARCH_EXTRACT_MAX_CONCURRENCY="4",
            ADMIN_TOKEN=ADMIN,
        )
        reset_workflow_settings_cache()
        with EmbeddedAws(extra_environment=env), TestClient(admin_app) as admin:
            team_id, secret = _team(admin)
            receiver.secret = secret
            team = {"x-team-id": team_id}
            scope = {"discovery_depth": "rapid"}

            refused = client.post(
                "/api/agent/execute",
                json={
                    "research_goal": GOAL,
                    "scope_parameters": scope,
                    "callback_url": "http://10.0.0.8/hook",
                },
                headers=team,
            )
            assert refused.status_code == 400 and refused.json()["field"] == "callback_url"

            # a name that resolves to loopback, which this deployment does not allow-list: accepted at
            # submission, refused by the SSRF guard at delivery, logged, never sent
            blocked_url = f"https://localhost:{receiver.port}/hook"
            blocked = client.post(
                "/api/agent/execute",
                json={"research_goal": GOAL, "scope_parameters": scope, "callback_url": blocked_url},
                headers=team,
            ).json()["job_id"]
            # a job aborted at its checkpoint fails: its failure is delivered too
            aborted = client.post(
                "/api/agent/execute",
                json={
                    "research_goal": GOAL,
                    "scope_parameters": {**scope, "human_checkpoints": True},
                    "callback_url": receiver.url("/jobs"),
                },
                headers=team,
            ).json()["job_id"]
            assert _terminal(client, blocked, team)["status"] == "COMPLETED"
            deadline = time.monotonic() + 150
            while (
                not client.get(f"/api/agent/status/{aborted}", headers=team).json().get("awaiting_checkpoint")
            ):
                assert time.monotonic() < deadline, "the job never reached its checkpoint"
                time.sleep(0.1)
            decided = client.post(
                f"/api/agent/checkpoint/{aborted}/abort", json={"reason": "off scope"}, headers=team
            )
            assert decided.status_code == 200, decided.text
            assert _terminal(client, aborted, team)["status"] == "FAILED"
            waiting, failure = receiver.wait_for(2)
            blocked_log = client.get(
                "/api/webhooks/deliveries", params={"job_id": blocked}, headers=team
            ).json()
            aborted_log = client.get(
                "/api/webhooks/deliveries", params={"job_id": aborted}, headers=team
            ).json()

    assert waiting.verified and waiting.headers[EVENT_HEADER.lower()] == "job.checkpoint_waiting"
    assert waiting.json()["checkpoint"]["phase"] == "screening"
    assert failure.verified and failure.path == "/jobs"
    assert failure.headers[EVENT_HEADER.lower()] == "job.failed"
    body = failure.json()
    assert body["job"]["job_id"] == aborted and body["job"]["status"] == "FAILED"
    assert "off scope" in body["job"]["failure_reason"] and "changes_since_last_run" not in body
    assert {d["event"]: [a["outcome"] for a in d["attempts"]] for d in aborted_log["deliveries"]} == {
        "job.checkpoint_waiting": ["delivered"],
        "job.failed": ["delivered"],
    }

    (delivery,) = blocked_log["deliveries"]
    assert delivery["outcome"] == "blocked" and delivery["event"] == "job.completed"
    (attempt,) = delivery["attempts"]
    assert attempt["status_code"] is None and "private or reserved address" in attempt["error"]
    assert len(receiver.received) == 2  # the aborted job's: the blocked callback was never sent
