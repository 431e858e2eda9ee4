"""`GET /api/webhooks/deliveries?job_id=`: the calling team's webhook delivery log for one of its jobs
(served by the orchestrate app). Another team's job id answers 404, exactly like an unknown one."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from functions.common.api import TeamId
from functions.webhooks.queries import MAX_JOB_ID_CHARS, DeliveryQueries


def get_delivery_queries() -> DeliveryQueries:
    from functions.webhooks.wiring import delivery_queries

    return delivery_queries()


Queries = Annotated[DeliveryQueries, Depends(get_delivery_queries)]

router = APIRouter(prefix="/api/webhooks", tags=["webhooks"])


@router.get("/deliveries", summary="Webhook deliveries of one of the team's jobs, every attempt logged")
def deliveries(
    team: TeamId,
    queries: Queries,
    job_id: Annotated[str, Query(min_length=1, max_length=MAX_JOB_ID_CHARS)],
) -> dict[str, Any]:
    return queries.for_job(team, job_id)
