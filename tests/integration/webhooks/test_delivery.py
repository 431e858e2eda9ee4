"""Webhook delivery over loopback: a real receiver verifies the signature; a 500 is retried and the
success logged; the SSRF guard refuses an unlisted private destination (logged, never sent); the log is
durable (DynamoDB on moto) and per team."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from functions.common.settings import Settings
from functions.webhooks.deliveries import DynamoDbDeliveryLog, grouped
from functions.webhooks.notify import FinishedJob, WebhookNotifier
from functions.webhooks.sender import WebhookSender
from functions.webhooks.settings import WebhookSettings
from functions.webhooks.signing import DELIVERY_HEADER, EVENT_HEADER, SIGNATURE_HEADER
from tests.support.tables import create_table
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

TEAM = "team-aaaaaaaaaaaa"
SECRET = "whsec_integration-test-secret"
FAST = WebhookSettings(backoff_seconds=0.05, max_backoff_seconds=0.2, attempt_timeout_seconds=3.0)


@pytest.fixture
def log() -> Iterator[DynamoDbDeliveryLog]:
    with mock_aws():
        table = create_table("jobs_table", "jobs")
        yield DynamoDbDeliveryLog(table)


def _notifier(log: DynamoDbDeliveryLog, allow: str, secret: str | None = SECRET) -> WebhookNotifier:
    settings = Settings(webhook_allow_private_hosts=allow)
    return WebhookNotifier(
        log=log,
        secret_of=lambda team_id: secret if team_id == TEAM else None,
        sender=WebhookSender(settings=settings, webhook=FAST),
        run=asyncio.run,
    )


def _job(url: str, job_id: str = "job-1") -> dict[str, Any]:
    return {
        "job_id": job_id,
        "research_goal": "Recent advances in transformer architectures",
        "callback_url": url,
    }


def test_the_receiver_verifies_the_signature_and_a_500_is_retried(log: DynamoDbDeliveryLog) -> None:
    with WebhookReceiver(secret=SECRET, answers=[500]) as receiver:
        outcome = _notifier(log, receiver.host_port).job_finished(
            FinishedJob(TEAM, _job(receiver.url()), "COMPLETED", results={"sources": [{}]})
        )
        first, second = receiver.wait_for(2)
    assert outcome == "delivered"
    assert first.status == 500 and second.status == 200
    assert first.verified and second.verified  # each attempt signed, over the exact bytes sent
    assert second.headers[EVENT_HEADER.lower()] == "job.completed"
    assert first.headers[DELIVERY_HEADER.lower()] == second.headers[DELIVERY_HEADER.lower()]
    assert second.headers[SIGNATURE_HEADER.lower()].startswith("t=")
    body = second.json()
    assert body["job"]["job_id"] == "job-1" and body["delivery_id"] == second.headers["x-research-delivery"]

    (delivery,) = grouped(log.attempts(TEAM, "job-1"))
    assert delivery["outcome"] == "delivered" and delivery["event"] == "job.completed"
    assert [(a["attempt"], a["outcome"], a["status_code"]) for a in delivery["attempts"]] == [
        (1, "retrying", 500),
        (2, "delivered", 200),
    ]
    assert all(a["attempted_at"] and a["duration_ms"] is not None for a in delivery["attempts"])
    assert log.attempts("team-bbbbbbbbbbbb", "job-1") == []


def test_a_receiver_that_keeps_failing_gets_three_attempts(log: DynamoDbDeliveryLog) -> None:
    with WebhookReceiver(secret=SECRET, answers=[503, 500, 502, 500]) as receiver:
        outcome = _notifier(log, receiver.host_port).job_finished(
            FinishedJob(TEAM, _job(receiver.url()), "FAILED")
        )
        receiver.wait_for(3)
        assert len(receiver.received) == 3
    assert outcome == "failed"
    (delivery,) = grouped(log.attempts(TEAM, "job-1"))
    assert [(a["outcome"], a["status_code"]) for a in delivery["attempts"]] == [
        ("retrying", 503),
        ("retrying", 500),
        ("failed", 502),
    ]


def test_a_4xx_is_not_retried(log: DynamoDbDeliveryLog) -> None:
    with WebhookReceiver(secret=SECRET, answers=[410]) as receiver:
        assert (
            _notifier(log, receiver.host_port).job_finished(
                FinishedJob(TEAM, _job(receiver.url()), "COMPLETED")
            )
            == "failed"
        )
        assert len(receiver.wait_for(1)) == 1
    (attempt,) = log.attempts(TEAM, "job-1")
    assert (attempt.outcome, attempt.status_code) == ("failed", 410)


def test_an_ssrf_blocked_callback_is_logged_and_not_sent(log: DynamoDbDeliveryLog) -> None:
    with WebhookReceiver(secret=SECRET) as receiver:
        # `localhost` resolves to loopback, and this deployment allow-lists nothing private
        url = f"http://localhost:{receiver.port}/hook"
        outcome = _notifier(log, allow="").job_finished(FinishedJob(TEAM, _job(url), "COMPLETED"))
        assert receiver.received == []
    assert outcome == "blocked"
    (attempt,) = log.attempts(TEAM, "job-1")
    assert attempt.outcome == "blocked" and attempt.attempt == 1
    assert attempt.error is not None and "private or reserved address" in attempt.error


def test_a_team_without_a_secret_is_not_sent_to(log: DynamoDbDeliveryLog) -> None:
    with WebhookReceiver() as receiver:
        outcome = _notifier(log, receiver.host_port, secret=None).job_finished(
            FinishedJob(TEAM, _job(receiver.url()), "COMPLETED")
        )
        assert receiver.received == []
    assert outcome == "skipped"
    (attempt,) = log.attempts(TEAM, "job-1")
    assert attempt.outcome == "skipped" and attempt.error is not None and "no webhook secret" in attempt.error


def test_a_refused_connection_is_retried_then_failed(log: DynamoDbDeliveryLog) -> None:
    with WebhookReceiver() as receiver:
        url, allow = receiver.url(), receiver.host_port
    # the receiver is gone: nothing listens on its port any more
    outcome = _notifier(log, allow).job_finished(FinishedJob(TEAM, _job(url), "COMPLETED"))
    assert outcome == "failed"
    attempts = log.attempts(TEAM, "job-1")
    assert [a.outcome for a in attempts] == ["retrying", "retrying", "failed"]
    assert all(a.status_code is None and a.error for a in attempts)
