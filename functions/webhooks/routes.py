"""`GET /api/webhooks/deliveries?job_id=`: the calling team's webhook delivery log for one of its jobs
(served by the orchestrate app, which hands in how its queries are built). Another team's job id answers
404, exactly like an unknown one."""

# No `from __future__ import annotations`: the route's Depends names a parameter of the factory, which
# FastAPI can only see when the annotation is evaluated where the route is defined.
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from functions.common.web.api import TeamId
from functions.webhooks.queries import MAX_JOB_ID_CHARS, DeliveryQueries


def deliveries_router(delivery_queries: Callable[[], DeliveryQueries]) -> APIRouter:
    router = APIRouter(prefix="/api/webhooks", tags=["webhooks"])

    @router.get("/deliveries", summary="Webhook deliveries of one of the team's jobs, every attempt logged")
    def deliveries(
        team: TeamId,
        queries: Annotated[DeliveryQueries, Depends(delivery_queries)],
        job_id: Annotated[str, Query(min_length=1, max_length=MAX_JOB_ID_CHARS)],
    ) -> dict[str, Any]:
        return queries.for_job(team, job_id)

    return router
