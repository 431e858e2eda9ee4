"""Reading a team's webhook delivery log (domain code behind `GET /api/webhooks/deliveries`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from functions.common.errors import NotFound
from functions.webhooks.deliveries import DeliveryLog, grouped

MAX_JOB_ID_CHARS = 80


@dataclass
class DeliveryQueries:
    log: DeliveryLog
    job_exists: Callable[[str, str], bool]  # (team_id, job_id) -> the team has this job

    def for_job(self, team_id: str, job_id: str) -> dict[str, Any]:
        if not job_id or len(job_id) > MAX_JOB_ID_CHARS or not self.job_exists(team_id, job_id):
            raise NotFound(f"job {job_id[:MAX_JOB_ID_CHARS]} not found")
        deliveries = grouped(self.log.attempts(team_id, job_id))
        return {"job_id": job_id, "deliveries": deliveries, "count": len(deliveries)}
