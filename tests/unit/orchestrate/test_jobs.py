from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from moto import mock_aws

from functions.common.errors import Conflict, NotFound
from functions.common.storage import InMemoryBlobStore
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.jobs import JobNotFinished, JobService, progress_percentage
from functions.orchestrate.models import JobRecord, JobStatus
from functions.orchestrate.store import DynamoDbJobStore, JobStore
from functions.research.planning.request import ExecuteRequest
from tests.support.fakes.jobs import InMemoryJobStore, RecordingStarter
from tests.support.tables import create_table


@pytest.fixture(params=["dynamodb", "memory"])
def store(request: pytest.FixtureRequest) -> Iterator[JobStore]:
    if request.param == "memory":
        yield InMemoryJobStore()
        return
    with mock_aws():
        yield DynamoDbJobStore(create_table("jobs_table", "jobs"))


def _service(store: JobStore) -> tuple[JobService, RecordingStarter]:
    starter = RecordingStarter()
    return JobService(
        jobs=store, starter=starter, artifacts=InMemoryBlobStore(), settings=WorkflowSettings()
    ), starter


REQUEST = ExecuteRequest.model_validate(
    {"research_goal": "How does sleep deprivation affect working memory?", "scope_parameters": {}}
)


def test_transitions_only_move_forward_and_never_leave_a_terminal_state(store: JobStore) -> None:
    service, _ = _service(store)
    response, created = service.submit("team-default", REQUEST)
    job_id = response["job_id"]
    assert created and response["status"] == "INITIALIZED"
    assert store.update("team-default", job_id, status=JobStatus.EXTRACTING, set_fields={"extract_total": 4})
    assert not store.update("team-default", job_id, status=JobStatus.SEARCHING)  # a late, retried search step
    assert store.update("team-default", job_id, status=JobStatus.EXTRACTING, add_counters={"extract_done": 1})
    assert store.update("team-default", job_id, add_counters={"extract_done": 1}, append={"actions": ["x"]})
    assert store.get("team-default", job_id)["extract_done"] == 2  # type: ignore[index]
    assert store.update("team-default", job_id, status=JobStatus.PARTIAL)
    for late in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.SYNTHESIZING):
        assert not store.update("team-default", job_id, status=late)
    assert not store.update("team-default", job_id, add_counters={"extract_done": 1})
    job = store.get("team-default", job_id)
    assert job is not None and job["status"] == "PARTIAL" and job["extract_done"] == 2
    assert not store.update("team-default", "no-such-job", status=JobStatus.PLANNING)


def test_a_named_write_applies_once_when_a_retried_step_repeats_it(store: JobStore) -> None:
    service, _ = _service(store)
    job_id = service.submit("team-default", REQUEST)[0]["job_id"]
    assert store.update("team-default", job_id, status=JobStatus.EXTRACTING, set_fields={"extract_total": 2})
    audit = {"audit": [{"event": "EXTRACTED", "detail": "src-1"}]}
    assert store.update(
        "team-default", job_id, add_counters={"extract_done": 1}, append=audit, once="x:src-1"
    )
    assert not store.update(
        "team-default", job_id, add_counters={"extract_done": 1}, append=audit, once="x:src-1"
    )
    assert store.update("team-default", job_id, add_counters={"extract_done": 1}, once="x:src-2")
    job = store.get("team-default", job_id)
    assert job is not None and job["extract_done"] == 2
    assert [e["event"] for e in job["audit"]].count("EXTRACTED") == 1
    assert "applied_writes" not in job  # bookkeeping stays inside the store


def test_idempotency_key_returns_the_same_job(store: JobStore) -> None:
    service, starter = _service(store)
    first, created = service.submit("team-default", REQUEST, idempotency_key="key-1", client_id="ip:1.2.3.4")
    again, created_again = service.submit(
        "team-default", REQUEST, idempotency_key="key-1", client_id="ip:1.2.3.4"
    )
    assert created and not created_again and again["job_id"] == first["job_id"]
    assert again["execution_plan"] == first["execution_plan"]
    assert [name for name, _ in starter.started] == [first["job_id"]]  # execution named by the job id
    other_client, _ = service.submit("team-default", REQUEST, idempotency_key="key-1", client_id="ip:5.6.7.8")
    assert other_client["job_id"] != first["job_id"]
    different = ExecuteRequest.model_validate({"research_goal": "A different research goal entirely"})
    with pytest.raises(Conflict):
        service.submit("team-default", different, idempotency_key="key-1", client_id="ip:1.2.3.4")


def test_status_progress_and_results_gate(store: JobStore) -> None:
    service, _ = _service(store)
    job_id = service.submit("team-default", REQUEST)[0]["job_id"]
    seen = [service.status("team-default", job_id).current_phase.progress_percentage]
    steps: list[dict[str, Any]] = [
        {"status": JobStatus.PLANNING},
        {"status": JobStatus.SEARCHING, "set_fields": {"queries_total": 4}},
        {"add_counters": {"queries_done": 2}},
        {"add_counters": {"queries_done": 2}},
        {"status": JobStatus.VALIDATING},
        {"status": JobStatus.EXTRACTING, "set_fields": {"extract_total": 3}},
        {"add_counters": {"extract_done": 1}},
        {"add_counters": {"extract_done": 2}},
        {"status": JobStatus.SYNTHESIZING},
    ]
    for step in steps:
        store.update("team-default", job_id, **step)
        seen.append(service.status("team-default", job_id).current_phase.progress_percentage)
        with pytest.raises(JobNotFinished):
            service.results("team-default", job_id)
    store.update("team-default", job_id, status=JobStatus.FAILED, set_fields={"failure_reason": "boom"})
    seen.append(service.status("team-default", job_id).current_phase.progress_percentage)
    assert seen == sorted(seen) and seen[0] == 0 and seen[-1] == 100
    results = service.results("team-default", job_id)
    assert results.status == "FAILED" and results.failure_reason == "boom"
    with pytest.raises(NotFound):
        service.status("team-default", "0b5c1f4e-0000-4000-8000-000000000000")


def test_progress_is_bounded_when_counts_overshoot() -> None:
    job = {
        "job_id": "job-1",
        "team_id": "team-default",
        "status": "EXTRACTING",
        "extract_total": 2,
        "extract_done": 5,
    }
    assert progress_percentage(JobRecord.model_validate(job)) == 85


def test_a_job_whose_execution_ended_without_a_final_state_is_failed_when_read(store: JobStore) -> None:
    service, starter = _service(store)
    job_id = service.submit("team-default", REQUEST)[0]["job_id"]
    store.update("team-default", job_id, status=JobStatus.EXTRACTING)

    assert service.status("team-default", job_id).status == "EXTRACTING"
    assert starter.status_checks == 0  # a recently updated job is not checked

    later = datetime.now(UTC) + timedelta(seconds=service.settings.stale_job_seconds + 5)
    service.clock = lambda: later
    assert service.status("team-default", job_id).status == "EXTRACTING"  # still RUNNING: left alone
    assert starter.status_checks == 1

    starter.execution_state = "TIMED_OUT"
    status = service.status("team-default", job_id)
    assert status.status == "FAILED"
    assert status.failure_reason == (
        "the workflow execution ended (TIMED_OUT) without recording a final state"
    )
    assert service.results("team-default", job_id).status == "FAILED"
    assert starter.status_checks == 2  # terminal now: never checked again


def _wait_at(store: JobStore, team: str, job_id: str, phase: str, since: str) -> None:
    waiting = {"awaiting_checkpoint": True, "checkpoint_phase": phase, "checkpoint_started_at": since}
    assert store.update(team, job_id, set_fields={**waiting, "checkpoint_token": "token"})


def test_a_team_lists_its_jobs_waiting_at_a_checkpoint_and_no_other_teams(store: JobStore) -> None:
    service, _ = _service(store)
    waiting, running = (service.submit("team-default", REQUEST)[0]["job_id"] for _ in range(2))
    other = service.submit("team-other", REQUEST)[0]["job_id"]
    service.submit("team-default", REQUEST, idempotency_key="key-1")  # an idempotency item has no team key
    _wait_at(store, "team-default", waiting, "screening", "2026-01-01T00:00:00+00:00")
    _wait_at(store, "team-other", other, "plan", "2026-01-01T00:00:00+00:00")

    listed = store.waiting_at_checkpoint("team-default")

    assert [job["job_id"] for job in listed] == [waiting] and running != waiting
    assert (
        listed[0]["checkpoint_phase"] == "screening" and listed[0]["research_goal"] == REQUEST.research_goal
    )
    assert [job["job_id"] for job in store.waiting_at_checkpoint("team-other")] == [other]
    assert store.waiting_at_checkpoint("team-nobody") == []


def test_the_waiting_jobs_are_a_query_of_the_team_index_not_a_scan() -> None:
    with mock_aws():
        table = create_table("jobs_table", "jobs")
        store = DynamoDbJobStore(table)
        calls: list[tuple[str, str | None]] = []
        table.meta.client.meta.events.register(
            "provide-client-params.dynamodb.*",
            lambda model, params, **_: calls.append((model.name, params.get("IndexName"))),
        )
        store.waiting_at_checkpoint("team-default")
    assert calls == [("Query", "by_team")]


@pytest.mark.parametrize(
    ("phase", "steps", "progress"),
    [
        ("plan", [{"status": JobStatus.SEARCHING, "set_fields": {"queries_total": 4}}], 10),
        ("screening", [{"status": JobStatus.EXTRACTING, "set_fields": {"extract_total": 3}}], 40),
        (
            "extraction",
            [{"status": JobStatus.EXTRACTING, "set_fields": {"extract_total": 3, "extract_done": 3}}],
            85,
        ),
        ("synthesis", [{"status": JobStatus.SYNTHESIZING}], 90),
    ],
)
def test_a_waiting_job_names_its_checkpoint_in_its_phase_and_keeps_its_progress(
    store: JobStore, phase: str, steps: list[dict[str, Any]], progress: int
) -> None:
    """A job waiting at screening once read "EXTRACTING · 40%": the status it resumes in, not where it waits."""
    service, _ = _service(store)
    job_id = service.submit("team-default", REQUEST)[0]["job_id"]
    for step in steps:
        store.update("team-default", job_id, **step)
    before = service.status("team-default", job_id).current_phase.progress_percentage
    _wait_at(store, "team-default", job_id, phase, "2026-01-01T00:00:00+00:00")

    waiting = service.status("team-default", job_id)

    assert waiting.checkpoint is not None and waiting.checkpoint.phase == phase
    assert waiting.awaiting_checkpoint is True
    current = waiting.current_phase
    assert current.phase_name == f"{phase.upper()}_CHECKPOINT"
    assert f"the {phase} checkpoint" in current.phase_description
    assert current.progress_percentage == before == progress


def test_a_results_document_from_before_the_search_figures_still_answers(store: JobStore) -> None:
    """results.json kept across restarts from before queries_not_run, partial_reasons and search_stats."""
    service, _ = _service(store)
    job_id = service.submit("team-default", REQUEST)[0]["job_id"]
    summary = {
        "total_sources_discovered": 12,
        "search_hits": 40,
        "sources_validated": 10,
        "sources_selected": 10,
        "extractions_successful": 9,
        "extractions_failed": 1,
        "queries_executed": 5,
        "failed_connectors": [],
    }
    document = {
        "job_id": job_id,
        "status": "COMPLETED",
        "synthesis": {"research_goal": REQUEST.research_goal},
        "execution_summary": summary,
        "sources": [],
        "evidence": [],
        "claims": [],
        "methodologies": {},
        "confidence_score": 0.5,
        "confidence_rationale": "one source",
        "refusal": False,
        "refusal_reason": None,
        "writer": "extractive",
        "artifact_keys": {},
    }
    service.artifacts.put_bytes("old/results.json", json.dumps(document).encode(), "application/json")
    store.update(
        "team-default", job_id, status=JobStatus.COMPLETED, set_fields={"results_key": "old/results.json"}
    )

    answered = service.results("team-default", job_id).model_dump(mode="json", exclude_unset=True)

    assert answered["execution_summary"] == summary and answered["confidence_rationale"] == "one source"
