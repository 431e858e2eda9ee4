"""What a finished job sends to its callback URL, and the delivery log entries it leaves.

Called by the workflow after a job's final status is recorded (Finalize, or the failure step), so a
delivery never changes the job's outcome; every failure here is logged and swallowed. One completion
delivery per job: `job.completed` (COMPLETED, PARTIAL or REFUSED), `job.failed`, or for a scheduled run that
reached Finalize `digest.ready`, whose body carries the completion summary and the run's
`changes_since_last_run`. Before it, `job.checkpoint_waiting` as each human checkpoint starts waiting (its
phase and where to review it). A team without a webhook secret gets no delivery: the attempt is logged as
`skipped` with the reason (and the function log says so too).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from functions.common.observability import get_logger
from functions.webhooks.deliveries import DeliveryAttempt, DeliveryLog, Outcome
from functions.webhooks.sender import AttemptResult, Report, WebhookSender
from functions.webhooks.settings import WebhookSettings

logger = get_logger("webhooks")

JOB_COMPLETED = "job.completed"
JOB_FAILED = "job.failed"
DIGEST_READY = "digest.ready"
CHECKPOINT_WAITING = "job.checkpoint_waiting"
NOT_SENT_WITHOUT_KEY = (
    "not sent: the team has no webhook secret (an admin creates one with "
    "POST /admin/teams/{team_id}/webhook-secret)"
)


def event_name(status: str, with_digest: bool) -> str:
    if with_digest:
        return DIGEST_READY
    return JOB_FAILED if status == "FAILED" else JOB_COMPLETED


def loggable_url(url: str) -> str:
    """The URL without query or fragment (they may carry a receiver's token)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def utc_iso(moment: datetime, precise: bool = False) -> str:
    spec = "microseconds" if precise else "seconds"
    return moment.astimezone(UTC).isoformat(timespec=spec).replace("+00:00", "Z")


@dataclass(frozen=True)
class FinishedJob:
    """A job at its final status, as its completion webhook (and the workflow's announcement) tell it."""

    team_id: str
    job: Mapping[str, Any]
    status: str
    results: Mapping[str, Any] | None = None
    failure_reason: str | None = None


def completion_summary(finished: FinishedJob, finished_at: str | None = None) -> dict[str, Any]:
    """The job part of every webhook body: what finished, how, and where to read the rest."""
    job, job_id, results = finished.job, str(finished.job["job_id"]), finished.results or {}
    return {
        "job_id": job_id,
        "team_id": finished.team_id,
        "status": finished.status,
        "research_goal": job.get("research_goal"),
        "source": job.get("source"),
        "schedule_id": job.get("schedule_id"),
        "created_at": job.get("created_at"),
        "finished_at": finished_at,
        "confidence_score": results.get("confidence_score"),
        "refusal": bool(results.get("refusal")),
        "refusal_reason": results.get("refusal_reason"),
        "failure_reason": finished.failure_reason,
        "sources_selected": len(results.get("sources") or []),
        "status_path": f"/api/agent/status/{job_id}",
        "results_path": f"/api/agent/results/{job_id}",
    }


class Sender(Protocol):
    webhook: WebhookSettings

    async def deliver(
        self, url: str, *, event: str, delivery_id: str, body: bytes, secret: str, report: Report
    ) -> Outcome: ...


@dataclass
class WebhookNotifier:
    log: DeliveryLog
    secret_of: Callable[[str], str | None]  # team id -> its webhook secret
    sender: Sender = field(default_factory=WebhookSender)
    run: Callable[[Coroutine[Any, Any, Any]], Any] = asyncio.run
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    def job_finished(
        self, finished: FinishedJob, *, digest: Mapping[str, Any] | None = None
    ) -> Outcome | None:
        """Deliver the job's completion (and a scheduled run's digest) to its callback URL; None when the
        job has none. Call it after the job's final status is recorded."""
        summary = completion_summary(finished, finished_at=utc_iso(self.clock()))
        extra = {"changes_since_last_run": dict(digest)} if digest is not None else {}
        event = event_name(finished.status, digest is not None)
        return self._deliver(finished.team_id, finished.job, event, {"job": summary, **extra})

    def checkpoint_waiting(
        self, team_id: str, job: Mapping[str, Any], phase: str, waiting_since: str
    ) -> Outcome | None:
        """`job.checkpoint_waiting`: the job waits for a person at `phase`; None when it has no callback."""
        job_id = str(job["job_id"])
        checkpoint = {
            "phase": phase,
            "waiting_since": waiting_since,
            "checkpoint_path": f"/api/agent/checkpoint/{job_id}",
        }
        summary = {
            "job_id": job_id,
            "team_id": team_id,
            "status": job.get("status"),
            "research_goal": job.get("research_goal"),
            "status_path": f"/api/agent/status/{job_id}",
        }
        return self._deliver(team_id, job, CHECKPOINT_WAITING, {"job": summary, "checkpoint": checkpoint})

    def _deliver(
        self, team_id: str, job: Mapping[str, Any], event: str, content: Mapping[str, Any]
    ) -> Outcome | None:
        url = job.get("callback_url")
        if not url:
            return None
        delivery_id = f"dlv-{uuid.uuid4().hex}"
        payload: dict[str, Any] = {
            "event": event,
            "delivery_id": delivery_id,
            "created_at": utc_iso(self.clock()),
            "team_id": team_id,
            **content,
        }
        body = json.dumps(payload, separators=(",", ":"), default=str).encode("utf-8")
        context: dict[str, Any] = {
            "team_id": team_id,
            "job_id": str(job["job_id"]),
            "delivery_id": delivery_id,
            "event": event,
            "schedule_id": job.get("schedule_id"),
            "url": loggable_url(str(url)),
        }
        secret = self._secret(team_id, context)
        if secret is None:
            return "skipped"
        outcome: Outcome = self.run(
            self.sender.deliver(
                str(url),
                event=event,
                delivery_id=delivery_id,
                body=body,
                secret=secret,
                report=partial(self._report, context),
            )
        )
        return outcome

    def _secret(self, team_id: str, context: Mapping[str, Any]) -> str | None:
        """The team's webhook secret; None (the attempt logged as skipped) when there is none to use."""
        try:
            secret = self.secret_of(team_id)
        except Exception as exc:
            logger.warning("webhook not sent: the team's secret could not be read", **context, exc_info=True)
            self._record(
                context, 0, "skipped", None, f"not sent: the team's secret could not be read ({exc})"
            )
            return None
        if not secret:
            logger.warning("webhook not sent: the team has no webhook secret", **context)
            self._record(context, 0, "skipped", None, NOT_SENT_WITHOUT_KEY.format(team_id=team_id))
            return None
        return secret

    def _report(self, context: Mapping[str, Any], result: AttemptResult) -> None:
        self._record(
            context, result.attempt, result.outcome, result.status_code, result.error, result.duration_ms
        )
        logger.info(
            "webhook attempt",
            **context,
            attempt=result.attempt,
            outcome=result.outcome,
            status_code=result.status_code,
            error=result.error,
        )

    def _record(
        self,
        context: Mapping[str, Any],
        attempt: int,
        outcome: Outcome,
        status_code: int | None,
        error: str | None,
        duration_ms: float | None = None,
    ) -> None:
        now = self.clock()
        retention = self.sender.webhook.log_retention_days
        try:
            self.log.record(
                DeliveryAttempt(
                    team_id=str(context["team_id"]),
                    job_id=str(context["job_id"]),
                    delivery_id=str(context["delivery_id"]),
                    event=str(context["event"]),
                    url=str(context["url"]),
                    attempt=attempt,
                    attempted_at=utc_iso(now, precise=True),
                    outcome=outcome,
                    status_code=status_code,
                    error=error,
                    duration_ms=duration_ms,
                    schedule_id=context.get("schedule_id"),
                ),
                expires_at=int((now + timedelta(days=retention)).timestamp()),
            )
        except Exception:  # the log is best effort: a delivery is never undone by it
            logger.warning("webhook attempt not logged", **context, attempt=attempt, exc_info=True)
