"""What a finished job sends and logs (functions/webhooks/notify.py), with a scripted sender: no network."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from functions.webhooks.deliveries import InMemoryDeliveryLog, Outcome, grouped
from functions.webhooks.notify import FinishedJob, WebhookNotifier, loggable_url
from functions.webhooks.sender import AttemptResult, Report
from functions.webhooks.settings import WebhookSettings

TEAM = "team-aaaaaaaaaaaa"
JOB = {
    "job_id": "job-1",
    "research_goal": "What are recent advances in transformer architectures?",
    "source": "api",
    "created_at": "2030-01-01T00:00:00Z",
    "callback_url": "https://hooks.example.com/research?token=abc",
}


@dataclass
class ScriptedSender:
    """Reports the scripted attempts and ends with the last one's outcome."""

    script: list[AttemptResult]
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def deliver(
        self, url: str, *, event: str, delivery_id: str, body: bytes, secret: str, report: Report
    ) -> Outcome:
        self.calls.append(
            {"url": url, "event": event, "delivery_id": delivery_id, "body": body, "secret": secret}
        )
        for result in self.script:
            report(result)
        return self.script[-1].outcome


def _run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(coroutine)


def _notifier(
    sender: ScriptedSender, log: InMemoryDeliveryLog, secret: str | None = "whsec_x"
) -> WebhookNotifier:
    return WebhookNotifier(
        log=log,
        secret_of=lambda team_id: secret if team_id == TEAM else None,
        sender=sender,
        run=_run,
        clock=lambda: datetime(2030, 1, 1, 12, tzinfo=UTC),
    )


def test_a_completed_job_is_posted_and_every_attempt_logged() -> None:
    log = InMemoryDeliveryLog()
    sender = ScriptedSender(
        [
            AttemptResult(1, "retrying", 500, "HTTP 500", 12.0),
            AttemptResult(2, "delivered", 200, None, 8.0),
        ]
    )
    results = {"confidence_score": 0.8, "refusal": False, "sources": [{}, {}, {}]}
    outcome = _notifier(sender, log).job_finished(FinishedJob(TEAM, JOB, "COMPLETED", results=results))
    assert outcome == "delivered"
    (call,) = sender.calls
    body = json.loads(call["body"])
    assert call["event"] == body["event"] == "job.completed" and call["secret"] == "whsec_x"
    assert body["delivery_id"] == call["delivery_id"] and body["team_id"] == TEAM
    assert body["job"]["status"] == "COMPLETED" and body["job"]["sources_selected"] == 3
    assert body["job"]["results_path"] == "/api/agent/results/job-1"
    assert "changes_since_last_run" not in body
    (delivery,) = grouped(log.attempts(TEAM, "job-1"))
    assert delivery["outcome"] == "delivered"
    assert delivery["url"] == "https://hooks.example.com/research"  # no query: it may hold a token
    assert [(a["attempt"], a["outcome"], a["status_code"]) for a in delivery["attempts"]] == [
        (1, "retrying", 500),
        (2, "delivered", 200),
    ]
    assert log.attempts("team-bbbbbbbbbbbb", "job-1") == []  # another team reads nothing


def test_a_scheduled_run_posts_its_digest() -> None:
    log = InMemoryDeliveryLog()
    sender = ScriptedSender([AttemptResult(1, "delivered", 204, None, 3.0)])
    digest = {"first_run": True, "counts": {}}
    job = {**JOB, "schedule_id": "sched-1", "source": "schedule"}
    _notifier(sender, log).job_finished(FinishedJob(TEAM, job, "PARTIAL", results={}), digest=digest)
    body = json.loads(sender.calls[0]["body"])
    assert body["event"] == "digest.ready" and body["changes_since_last_run"] == digest
    assert body["job"]["schedule_id"] == "sched-1"


def test_a_failed_job_is_job_failed_with_its_reason() -> None:
    sender = ScriptedSender([AttemptResult(1, "delivered", 200, None, 3.0)])
    _notifier(sender, InMemoryDeliveryLog()).job_finished(
        FinishedJob(TEAM, JOB, "FAILED", failure_reason="States.Timeout")
    )
    body = json.loads(sender.calls[0]["body"])
    assert body["event"] == "job.failed" and body["job"]["failure_reason"] == "States.Timeout"


def test_a_team_without_a_secret_gets_no_delivery_and_the_log_says_why() -> None:
    log = InMemoryDeliveryLog()
    sender = ScriptedSender([AttemptResult(1, "delivered", 200, None, 1.0)])
    assert _notifier(sender, log, secret=None).job_finished(FinishedJob(TEAM, JOB, "COMPLETED")) == "skipped"
    assert sender.calls == []
    (attempt,) = log.attempts(TEAM, "job-1")
    assert attempt.outcome == "skipped" and attempt.attempt == 0
    assert attempt.error is not None and "no webhook secret" in attempt.error


def test_a_job_without_a_callback_sends_nothing() -> None:
    log = InMemoryDeliveryLog()
    sender = ScriptedSender([AttemptResult(1, "delivered", 200, None, 1.0)])
    job = {key: value for key, value in JOB.items() if key != "callback_url"}
    assert _notifier(sender, log).job_finished(FinishedJob(TEAM, job, "COMPLETED")) is None
    assert sender.calls == [] and log.items == []


def test_a_job_waiting_at_a_checkpoint_posts_checkpoint_waiting_with_the_phase() -> None:
    log = InMemoryDeliveryLog()
    sender = ScriptedSender([AttemptResult(1, "delivered", 200, None, 2.0)])
    job = {**JOB, "status": "VALIDATING"}
    outcome = _notifier(sender, log).checkpoint_waiting(TEAM, job, "screening", "2030-01-01T11:59:00+00:00")
    assert outcome == "delivered"
    body = json.loads(sender.calls[0]["body"])
    assert body["event"] == sender.calls[0]["event"] == "job.checkpoint_waiting"
    assert body["checkpoint"] == {
        "phase": "screening",
        "waiting_since": "2030-01-01T11:59:00+00:00",
        "checkpoint_path": "/api/agent/checkpoint/job-1",
    }
    assert body["job"]["status"] == "VALIDATING" and body["job"]["job_id"] == "job-1"
    (delivery,) = grouped(log.attempts(TEAM, "job-1"))
    assert delivery["event"] == "job.checkpoint_waiting"


def test_loggable_url_drops_query_and_fragment() -> None:
    assert loggable_url("https://h.example/p/q?x=1#f") == "https://h.example/p/q"
