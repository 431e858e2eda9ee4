"""What follows a job's final status: its EventBridge event, a scheduled run's living review
(functions/schedules/living.py) and the job's completion webhook (functions/webhooks/notify.py).

Nothing here can change the job's outcome: a review or webhook that fails is logged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from functions.common.observability import get_logger, record_metric
from functions.orchestrate.store import EventPublisher
from functions.webhooks.notify import FinishedJob

if TYPE_CHECKING:
    from functions.research.retrieval.screening import Candidate
    from functions.schedules.living import LivingReview
    from functions.webhooks.notify import WebhookNotifier

logger = get_logger("orchestrate")


def artifact_prefix(team_id: str, job_id: str) -> str:
    return f"teams/{team_id}/jobs/{job_id}/"


def results_key(team_id: str, job_id: str) -> str:
    return artifact_prefix(team_id, job_id) + "results.json"


@dataclass
class JobCompletion:
    events: EventPublisher
    artifact_uri: Callable[[str], str] = field(default=lambda key: key)
    # None: no living reviews, no webhooks
    living_review: Callable[[], LivingReview | None] = field(default=lambda: None)
    webhooks: Callable[[], WebhookNotifier | None] = field(default=lambda: None)

    def changes(
        self,
        team_id: str,
        job: Mapping[str, Any],
        results: dict[str, Any],
        candidates: Mapping[str, Candidate],
    ) -> dict[str, Any] | None:
        """A scheduled run's `changes_since_last_run` (and each source's `is_retracted` in `results`);
        None for a run without a schedule, or when they could not be computed (the results stay whole)."""
        if not job.get("schedule_id"):
            return None
        try:
            review = self.living_review()
            if review is None:
                return None
            from functions.schedules.living import PendingResults  # heavy: only once a review exists

            return review.changes(PendingResults(team_id, job, results, candidates))
        except Exception:
            logger.warning("changes since the last run not computed", job_id=job.get("job_id"), exc_info=True)
            return None

    def completed(self, team_id: str, job: Mapping[str, Any], results: Mapping[str, Any]) -> None:
        """ResearchJobCompleted, then the living review and the webhook; after the final status is stored."""
        job_id, status = str(job.get("job_id")), str(results["status"])
        record_metric("orchestrate", "JobsFinished", 1, status=status)
        artifact_keys: Mapping[str, str] = results.get("artifact_keys") or {}
        self.events.publish(
            "ResearchJobCompleted",
            {
                "job_id": job_id,
                "team_id": team_id,
                "status": status,
                "research_goal": job.get("research_goal"),
                "confidence_score": results.get("confidence_score", 0.0),
                "refusal": bool(results.get("refusal")),
                "artifacts": {name: self.artifact_uri(key) for name, key in artifact_keys.items()},
                "results_key": results_key(team_id, job_id),
            },
        )
        self.announce(FinishedJob(team_id, job, status, results=results))

    def failed(self, team_id: str, job: Mapping[str, Any], reason: str) -> None:
        job_id = str(job.get("job_id"))
        record_metric("orchestrate", "JobsFinished", 1, status="FAILED")
        self.events.publish(
            "ResearchJobFailed", {"job_id": job_id, "team_id": team_id, "status": "FAILED", "reason": reason}
        )
        self.announce(FinishedJob(team_id, job, "FAILED", failure_reason=reason))

    def announce(self, finished: FinishedJob) -> None:
        """A scheduled run becomes its schedule's last run and publishes ResearchDigestReady; then the
        job's webhook is delivered (retried within its own budget)."""
        team_id, job, results = finished.team_id, finished.job, finished.results
        job_id = str(job.get("job_id"))
        digest = None
        if results is not None and job.get("schedule_id"):
            try:
                review = self.living_review()
                if review is not None:
                    digest = review.finished(
                        team_id, job, results, results_key(team_id, job_id), self.events.publish
                    )
            except Exception:
                logger.warning("living review not recorded", job_id=job_id, exc_info=True)
        try:
            notifier = self.webhooks() if job.get("callback_url") else None
            if notifier is not None:
                notifier.job_finished(finished, digest=digest)
        except Exception:
            logger.warning("webhook not delivered", job_id=job_id, exc_info=True)
