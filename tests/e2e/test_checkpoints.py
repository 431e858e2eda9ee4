"""End to end on the embedded runtime: a job that waits for a person after planning, screening, extraction
and synthesis, and each edit changes what the next phase does; the held report is delivered only once it
is approved; a checkpoint's window passing ends the job or lets it go on, as the caller chose."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.admin.app import app as admin_app
from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.app import app
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from functions.webhooks.signing import EVENT_HEADER
from tests.e2e.scholarly_topic import (
    ARXIV_PDF_PREFIX,
    GOAL,
    TopicPaper,
    environment,
    normalise,
    serve,
    topic_papers,
)
from tests.support.scholarly_web import ScholarlyWeb
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

ADMIN = "admin-token-for-checkpoints"
Body = dict[str, Any]


@pytest.fixture
def client() -> Iterator[TestClient]:
    with TestClient(app) as test_client:
        yield test_client
    reset_workflow_settings_cache()


def _until(read: Callable[[], Body], done: Callable[[Body], bool], what: str, timeout: float = 120) -> Body:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        body = read()
        if done(body):
            return body
        time.sleep(0.1)
    raise AssertionError(f"{what}: {read()}")


class Job:
    def __init__(self, client: TestClient, job_id: str, headers: dict[str, str]) -> None:
        self.client, self.job_id, self.headers = client, job_id, headers

    def status(self) -> Body:
        body: Body = self.client.get(f"/api/agent/status/{self.job_id}", headers=self.headers).json()
        return body

    def waiting_at(self, phase: str) -> Body:
        """The checkpoint once the job waits at `phase` (GET /api/agent/checkpoint/{job_id})."""
        status = _until(
            self.status,
            lambda body: (
                (body.get("checkpoint") or {}).get("phase") == phase or JobStatus(body["status"]).terminal
            ),
            f"never waited at {phase}",
        )
        assert status.get("awaiting_checkpoint") and status["checkpoint"]["phase"] == phase, status
        shown = self.client.get(f"/api/agent/checkpoint/{self.job_id}", headers=self.headers)
        assert shown.status_code == 200, shown.text
        body: Body = shown.json()
        assert body["phase"] == phase and body["waiting_since"]
        return body

    def approve(self, edits: Body | None = None) -> Body:
        answer = self.client.post(
            f"/api/agent/checkpoint/{self.job_id}/approve", json=edits or {}, headers=self.headers
        )
        assert answer.status_code == 200, answer.text
        body: Body = answer.json()
        return body

    def finished(self) -> Body:
        return _until(self.status, lambda body: JobStatus(body["status"]).terminal, "never finished", 150)

    def waited_at(self) -> list[str]:
        """The phases the finished job waited at, from its audit trail."""
        results = self.client.get(f"/api/agent/results/{self.job_id}", headers=self.headers).json()
        log = results["audit_trail_summary"]["audit_log"]
        return [entry["detail"] for entry in log if entry["event"] == "CHECKPOINT_WAITING"]


def _team(admin: TestClient) -> tuple[str, str]:
    auth = {"Authorization": f"Bearer {ADMIN}"}
    team_id = admin.post("/admin/teams", json={"name": "Reviewers", "tier": "standard"}, headers=auth).json()[
        "team_id"
    ]
    secret = admin.post(f"/admin/teams/{team_id}/webhook-secret", headers=auth)
    assert secret.status_code == 201, secret.text
    return team_id, secret.json()["webhook_secret"]


def _serve_unsearchable(web: ScholarlyWeb, paper: TopicPaper) -> None:
    """A paper no search API returns, fetchable at its DOI (as a reviewer who knows it would add it)."""
    web.set_response(f"/doi/{paper.sample.doi}", paper.pdf, content_type="application/pdf")


@dataclass
class Reviewed:
    """What the reviewer changed, to find (or miss) in the job's results."""

    excluded_url: str = ""
    added_id: str = ""
    struck_quote: str = ""
    dropped_source: str = ""
    struck_evidence: list[str] = field(default_factory=list)


def _review_plan(job: Job) -> None:
    """Crossref dropped: it is never searched. A screening edit at the plan checkpoint is refused by name."""
    plan = job.waiting_at("plan")["payload"]
    assert "crossref" in plan["connectors"] and plan["queries"]["crossref"]
    unknown = job.client.post(
        f"/api/agent/checkpoint/{job.job_id}/approve", json={"exclude": ["src-x"]}, headers=job.headers
    )
    assert unknown.status_code == 400 and "exclude" in unknown.json()["message"]
    kept = [name for name in plan["connectors"] if name != "crossref"]
    assert "crossref" in job.approve({"connectors": kept})["changes"][0]


def _review_screening(job: Job, web: ScholarlyWeb, doi: str, reviewed: Reviewed) -> None:
    """The top candidate excluded, a paper no search returned added by its DOI."""
    screening = job.waiting_at("screening")["payload"]
    assert not [r for r in web.requests_to(web.CROSSREF_PATH) if r.param("query")]  # crossref never searched
    top = screening["candidates"][0]
    assert set(top["scores"]) >= {"relevance", "recency"} and top["explanation"] and top["selected"]
    bad = job.client.post(
        f"/api/agent/checkpoint/{job.job_id}/approve", json={"exclude": ["src-nope"]}, headers=job.headers
    )
    assert bad.status_code == 400 and "src-nope" in bad.json()["message"]
    job.approve({"exclude": [top["id"]], "add": [f"doi:{doi}"]})
    reviewed.excluded_url = top["url"]


def _review_extraction(job: Job, doi: str, reviewed: Reviewed) -> None:
    """The excluded paper was not extracted, the added one was; a quote struck, a source not relevant."""
    extraction = job.waiting_at("extraction")["payload"]
    by_url = {source["url"]: source for source in extraction["sources"]}
    assert reviewed.excluded_url not in by_url
    added = by_url[f"https://doi.org/{doi}"]
    assert added["success"] and added["quotes"], added
    others = [s for s in extraction["sources"] if s["quotes"] and s["id"] != added["id"]]
    reviewed.added_id, reviewed.struck_quote = added["id"], others[0]["quotes"][0]["evidence_id"]
    reviewed.dropped_source = others[1]["id"]
    job.approve({"strike": [reviewed.struck_quote], "not_relevant": [reviewed.dropped_source]})


def _review_synthesis(job: Job, receiver: WebhookReceiver, reviewed: Reviewed) -> None:
    """Held: only the checkpoints' notices are delivered. A claim struck: synthesised again without its
    evidence, then approved for delivery."""
    held = job.waiting_at("synthesis")
    cited = {i for claim in held["payload"]["claims"] for i in claim["evidence_ids"]}
    assert reviewed.struck_quote not in cited and held["payload"]["report"]
    struck_claim = next(claim for claim in held["payload"]["claims"] if claim["kept"])
    notices = receiver.wait_for(4)
    assert [r.headers[EVENT_HEADER.lower()] for r in notices] == ["job.checkpoint_waiting"] * 4
    phases = [r.json()["checkpoint"]["phase"] for r in notices]
    assert phases == ["plan", "screening", "extraction", "synthesis"]
    early = job.client.get(f"/api/agent/results/{job.job_id}", headers=job.headers)
    assert early.status_code == 409 and early.json()["error"] == "JOB_NOT_FINISHED"  # the report is held
    assert len(receiver.received) == 4 and job.status()["status"] == "SYNTHESIZING"
    job.approve({"strike": [struck_claim["id"]]})  # back to synthesis, then it waits again
    again = _until(
        lambda: job.client.get(f"/api/agent/checkpoint/{job.job_id}", headers=job.headers).json(),
        lambda body: body.get("phase") == "synthesis" and body["waiting_since"] != held["waiting_since"],
        "never synthesised again",
    )
    reviewed.struck_evidence = struck_claim["evidence_ids"]
    claims = again["payload"]["claims"]
    assert claims and not set(reviewed.struck_evidence) & {i for c in claims for i in c["evidence_ids"]}
    job.approve()


def _assert_reviews_in_the_prisma_flow(flow: dict[str, Any]) -> None:
    """The paper added by DOI is a record a reviewer identified; the candidate excluded at screening and
    the source found not relevant after its reading are excluded by the reviewer at their stages."""
    assert flow["identified"]["reviewer"] == 1 and "crossref" not in flow["identified"]
    assert sum(flow["identified"].values()) - flow["duplicates_removed"] == flow["screened"]
    assert flow["screened"] - flow["excluded_screening"] == flow["sought_for_retrieval"]
    assert flow["exclusion_reasons"]["screening"]["excluded_by_reviewer"] >= 1
    assert flow["sought_for_retrieval"] - flow["not_retrieved"] == flow["assessed_full_text"]
    assert flow["excluded_full_text"] == flow["exclusion_reasons"]["full_text"]["excluded_by_reviewer"] == 1
    assert flow["assessed_full_text"] - flow["excluded_full_text"] == flow["included"]


def _start(client: TestClient, headers: dict[str, str], callback_url: str) -> Job:
    phases = ["plan", "screening", "extraction", "synthesis"]
    started = client.post(
        "/api/agent/execute",
        json={
            "research_goal": GOAL,
            "scope_parameters": {"discovery_depth": "rapid", "human_checkpoints": phases},
            "callback_url": callback_url,
        },
        headers=headers,
    )
    assert started.status_code == 202, started.text
    return Job(client, started.json()["job_id"], headers)


def test_each_checkpoint_edit_changes_what_the_next_phase_does(client: TestClient, tmp_path: Path) -> None:
    papers = topic_papers(9, off_topic=1)
    extra = topic_papers(12, off_topic=0)[11]  # on topic, known to the reviewer only; DOI-only
    assert extra.sample.arxiv_id is None and extra.sample.title not in {p.sample.title for p in papers}
    doi, reviewed = str(extra.sample.doi), Reviewed()
    with ScholarlyWeb() as web, WebhookReceiver() as receiver:
        serve(web, papers)
        _serve_unsearchable(web, extra)
        env = environment(
            web,
            WEBHOOK_ALLOW_PRIVATE_HOSTS=receiver.host_port,
            RESEARCH_EXTRACT_MAX_CONCURRENCY="4",
            ADMIN_TOKEN=ADMIN,
        )
        reset_workflow_settings_cache()
        # kept like `make run`'s: the steps' outputs are kept too, and a review still changes what follows
        with (
            EmbeddedAws(extra_environment=env, state_dir=tmp_path / "state"),
            TestClient(admin_app) as admin,
        ):
            team_id, receiver.secret = _team(admin)
            job = _start(client, {"x-team-id": team_id}, receiver.url("/jobs"))
            _review_plan(job)
            _review_screening(job, web, doi, reviewed)
            _review_extraction(job, doi, reviewed)
            _review_synthesis(job, receiver, reviewed)
            final = job.finished()
            delivered = receiver.wait_for(6)
            results = client.get(f"/api/agent/results/{job.job_id}", headers=job.headers).json()
            delivered_artifacts = {
                name: client.get(
                    f"/api/agent/results/{job.job_id}/artifacts/{name}", headers=job.headers
                ).text
                for name in results["artifacts"]
            }
            usage = _until(
                lambda: client.get(f"/api/usage/jobs/{job.job_id}", headers=job.headers).json(),
                lambda body: body["final"],  # the status turns terminal just before the last step is billed
                "the job's bill never closed",
            )
            nothing_waits = client.get(f"/api/agent/checkpoint/{job.job_id}", headers=job.headers)
            other_team = client.get(
                f"/api/agent/checkpoint/{job.job_id}", headers={"x-team-id": "team-other0001"}
            )

    assert final["status"] == "COMPLETED", final
    # the synthesis sent back was written anew (the review forgot the kept output of the first)
    assert usage["steps"]["synthesize"] == 2
    assert nothing_waits.status_code == 409 and other_team.status_code == 404
    # nothing was delivered while the report was held: its notice follows the fifth checkpoint's (the
    # resynthesis, after the first approval of the synthesis)
    events = [notice.headers[EVENT_HEADER.lower()] for notice in delivered]
    assert events == ["job.checkpoint_waiting"] * 5 + ["job.completed"] and delivered[-1].verified
    sources = {source["source_id"]: source for source in results["sources"]}
    assert reviewed.added_id in sources and reviewed.dropped_source not in sources
    _assert_reviews_in_the_prisma_flow(results["execution_summary"]["prisma_flow"])
    assert reviewed.excluded_url not in {source["url"] for source in sources.values()}
    evidence_ids = {item["evidence_id"] for item in results["evidence"]}
    assert reviewed.added_id in {item["source_id"] for item in results["evidence"]}  # extracted and cited
    assert reviewed.struck_quote not in evidence_ids and not set(reviewed.struck_evidence) & evidence_ids
    quote_library = json.loads(delivered_artifacts["quote_library.json"])
    listed = {quote["evidence_id"] for quote in quote_library["quotes"]}
    assert listed and listed <= evidence_ids, listed - evidence_ids
    struck = [reviewed.struck_quote, *reviewed.struck_evidence]
    quoting = {name: text for name, text in delivered_artifacts.items() if name != "search_report.md"}
    assert not [(name, i) for name, text in quoting.items() for i in struck if i in text]  # listed nowhere
    assert "struck evidence" in delivered_artifacts["search_report.md"]  # only the review's record names it
    reviews = [d for d in final["autonomous_decisions"] if d["decision_type"] == "HUMAN_CHECKPOINT"]
    assert [d["phase"] for d in reviews] == ["plan", "screening", "extraction", "synthesis", "synthesis"]
    assert all(d["by"]["team_id"] == team_id and d["by"]["caller"] and d["timestamp"] for d in reviews)


def test_a_checkpoint_whose_window_passes_aborts_or_continues_as_the_caller_chose(client: TestClient) -> None:
    papers = topic_papers(9, off_topic=1)
    with ScholarlyWeb() as web:
        serve(web, papers)
        reset_workflow_settings_cache()
        env = environment(web, RESEARCH_CHECKPOINT_WINDOW_SECONDS="1")
        with EmbeddedAws(extra_environment=env):
            jobs = {}
            for on_timeout, phase in (("abort", "screening"), ("continue", "plan")):
                scope = {"discovery_depth": "rapid", "human_checkpoints": [phase], "on_timeout": on_timeout}
                started = client.post(
                    "/api/agent/execute", json={"research_goal": GOAL, "scope_parameters": scope}
                )
                assert started.status_code == 202, started.text
                jobs[on_timeout] = Job(client, started.json()["job_id"], {})
            # nobody decides; the 1 s window may pass between two polls, so what the jobs waited at is read
            # from their audit trails once they have finished
            aborted, continued = jobs["abort"].finished(), jobs["continue"].finished()
            waited = {on_timeout: job.waited_at() for on_timeout, job in jobs.items()}

    assert waited == {"abort": ["screening"], "continue": ["plan"]}, waited
    assert aborted["status"] == "FAILED" and "CheckpointExpired" in aborted["failure_reason"], aborted
    assert continued["status"] == "COMPLETED", continued
    timed_out = [d for d in continued["autonomous_decisions"] if d["decision_type"] == "HUMAN_CHECKPOINT"]
    assert [d["action_taken"] for d in timed_out] == ["CONTINUED"] and "plan" in timed_out[0]["reasoning"]


def _upload(paper: TopicPaper) -> str:
    """The paper uploaded to the default team's library (POST /v1/documents); its document id."""
    from functions.extract.app import app as extract_app

    with TestClient(extract_app) as extract:
        uploaded = extract.post(
            "/v1/documents", files={"file": ("team-study.pdf", paper.pdf, "application/pdf")}
        )
    assert uploaded.status_code == 201, uploaded.text
    return str(uploaded.json()["document_id"])


def test_papers_added_by_arxiv_id_and_library_document_are_extracted_and_cited(client: TestClient) -> None:
    """Neither is found by the search (the arXiv paper is in no search API's answers, the library is not
    queried): the reviewer adds both at screening, and both are extracted and cited."""
    papers = topic_papers(9, off_topic=1)
    known = topic_papers(12, off_topic=0)
    by_arxiv, in_library = known[10], known[9]  # on topic, not on the scholarly web's search answers
    assert by_arxiv.sample.arxiv_id and {by_arxiv.sample.title, in_library.sample.title}.isdisjoint(
        {p.sample.title for p in papers}
    )
    arxiv_id = by_arxiv.sample.arxiv_id
    with ScholarlyWeb() as web:
        serve(web, papers)
        web.set_response(f"{ARXIV_PDF_PREFIX}/pdf/{arxiv_id}", by_arxiv.pdf, content_type="application/pdf")
        env = environment(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="4")
        reset_workflow_settings_cache()
        with EmbeddedAws(extra_environment=env):
            document_id = _upload(in_library)
            scope = {"discovery_depth": "rapid", "human_checkpoints": ["plan", "screening"]}
            started = client.post(
                "/api/agent/execute", json={"research_goal": GOAL, "scope_parameters": scope}
            )
            assert started.status_code == 202, started.text
            job = Job(client, started.json()["job_id"], {})
            plan = job.waiting_at("plan")["payload"]
            job.approve({"connectors": [name for name in plan["connectors"] if name != "library"]})
            screening = job.waiting_at("screening")["payload"]
            added = [f"arxiv:{arxiv_id}", f"library:{document_id}"]
            changes = job.approve({"add": added})["changes"]
            final = job.finished()
            results = client.get(f"/api/agent/results/{job.job_id}").json()

    listed = {candidate["url"] for candidate in screening["candidates"]}
    urls = (f"https://arxiv.org/abs/{arxiv_id}", f"library://{document_id}")
    assert listed.isdisjoint(urls) and changes == [f"added {', '.join(added)}"], (listed, changes)
    assert final["status"] == "COMPLETED", final
    sources = {source["url"]: source["source_id"] for source in results["sources"]}
    for url, paper in zip(urls, (by_arxiv, in_library), strict=True):
        cited = [item for item in results["evidence"] if item["source_id"] == sources.get(url)]
        assert cited, (url, sorted(sources))  # extracted and cited
        assert all(normalise(item["quote"]) in normalise(paper.text) for item in cited)
