"""A job's living-review and webhook hooks never change its outcome (functions/orchestrate/completion.py):
a failing review or notifier is logged, the step still returns."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from functions.orchestrate.completion import JobCompletion
from functions.schedules.living import PendingResults
from functions.webhooks.notify import FinishedJob

TEAM = "team-aaaaaaaaaaaa"


class Events:
    def __init__(self) -> None:
        self.published: list[tuple[str, dict[str, Any]]] = []

    def publish(self, detail_type: str, detail: dict[str, Any]) -> None:
        self.published.append((detail_type, detail))


class BrokenReview:
    def changes(self, *args: Any) -> dict[str, Any]:
        raise RuntimeError("the runs table is down")

    def finished(self, *args: Any) -> Mapping[str, Any] | None:
        raise RuntimeError("the runs table is down")


class RecordingReview:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def changes(self, pending: PendingResults) -> dict[str, Any]:
        self.calls.append("changes")
        return {"first_run": True}

    def finished(
        self, team_id: str, job: Mapping[str, Any], results: Mapping[str, Any], key: str, publish: Any
    ) -> Mapping[str, Any]:
        self.calls.append(f"finished {key}")
        publish("ResearchDigestReady", {"job_id": job["job_id"]})
        return {"first_run": True}


class Notifier:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.calls: list[tuple[str, Mapping[str, Any] | None]] = []

    def job_finished(self, finished: FinishedJob, *, digest: Mapping[str, Any] | None = None) -> str:
        self.calls.append((finished.status, digest))
        if self.fail:
            raise RuntimeError("the teams table is down")
        return "delivered"


def _completion(review: object, notifier: object, events: Events) -> JobCompletion:
    return JobCompletion(
        events=events,
        living_review=lambda: review,  # type: ignore[arg-type,return-value]
        webhooks=lambda: notifier,  # type: ignore[arg-type,return-value]
    )


JOB = {"job_id": "job-1", "schedule_id": "sched-1", "callback_url": "https://hooks.example.com/x"}


def test_a_scheduled_run_is_reviewed_announced_and_called_back() -> None:
    review, notifier, events = RecordingReview(), Notifier(), Events()
    completion = _completion(review, notifier, events)
    results: dict[str, Any] = {"status": "COMPLETED"}
    assert completion.changes(TEAM, dict(JOB), results, {}) == {"first_run": True}
    completion.announce(FinishedJob(TEAM, dict(JOB), "COMPLETED", results=results))
    assert review.calls == ["changes", f"finished teams/{TEAM}/jobs/job-1/results.json"]
    assert events.published == [("ResearchDigestReady", {"job_id": "job-1"})]
    assert notifier.calls == [("COMPLETED", {"first_run": True})]


def test_a_job_without_schedule_or_callback_is_left_alone() -> None:
    review, notifier, events = RecordingReview(), Notifier(), Events()
    completion = _completion(review, notifier, events)
    results: dict[str, Any] = {}
    assert completion.changes(TEAM, {"job_id": "job-1"}, results, {}) is None
    completion.announce(FinishedJob(TEAM, {"job_id": "job-1"}, "COMPLETED", results=results))
    assert results == {} and review.calls == [] and notifier.calls == [] and events.published == []


def test_failures_of_the_review_and_the_webhook_are_swallowed() -> None:
    notifier, events = Notifier(fail=True), Events()
    completion = _completion(BrokenReview(), notifier, events)
    results: dict[str, Any] = {"status": "COMPLETED"}
    assert completion.changes(TEAM, dict(JOB), results, {}) is None
    completion.announce(FinishedJob(TEAM, dict(JOB), "FAILED", failure_reason="boom"))
    assert notifier.calls == [("FAILED", None)]  # tried, failed, logged
