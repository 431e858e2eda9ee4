"""The orchestrate function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from functions.common.faces import agent
from functions.common.observability import get_logger
from functions.common.web.api import create_app
from functions.common.web.openapi import document_errors
from functions.metering.budget import BudgetExceeded
from functions.metering.middleware import UsageMiddleware
from functions.metering.routes import router as usage_router
from functions.orchestrate.jobs import JobNotFinished
from functions.orchestrate.routes import router as agent_router
from functions.schedules.routes import router as schedule_router
from functions.webhooks.queries import DeliveryQueries
from functions.webhooks.routes import deliveries_router

logger = get_logger("orchestrate")


def delivery_queries() -> DeliveryQueries:
    """The webhook delivery log, answering only for the calling team's own jobs (imported when first used,
    like the routes' other services)."""
    from functions.orchestrate.store import DynamoDbJobStore
    from functions.webhooks.wiring import delivery_queries as queries_of

    jobs = DynamoDbJobStore()
    return queries_of(job_exists=lambda team_id, job_id: jobs.get(team_id, job_id) is not None)


# 402: money, not rate (docs/usage.md), retrying will not help; 409 names the job's status.
JOBS_FACE = agent.FACE.with_rules(
    "agent (jobs)",
    [
        (BudgetExceeded, lambda exc: agent.reply(402, exc.code, exc.message, **exc.details())),
        (JobNotFinished, lambda exc: agent.reply(409, exc.code, exc.message, status=exc.status)),
    ],
)

app = create_app(
    title="orchestrate",
    description="Autonomous research jobs: plan, search, screen, extract, synthesise with cited evidence; "
    "scheduled research (living reviews) and webhook deliveries; the team's metered usage and cost.",
    routers=[
        (JOBS_FACE, agent_router),
        (JOBS_FACE, schedule_router),
        (JOBS_FACE, deliveries_router(delivery_queries)),
        (JOBS_FACE, usage_router),
    ],
    logger=logger,
    middlewares=[UsageMiddleware],  # counts each request per team, route and month (docs/usage.md)
)

# The agent API's errors (functions/common/faces/agent.py): 400 validation, 402 the team's budget, 404
# unknown job/schedule/artifact, 409 a job not finished or not at a checkpoint (or an Idempotency-Key
# in use), 503 the workflow, the scheduler or a storage service (DynamoDB, S3) could not be reached.
document_errors(
    app,
    {
        "POST /api/agent/execute": (agent.AgentError, [400, 402, 409, 503]),
        "GET /api/agent/status/{job_id}": (agent.AgentError, [404, 503]),
        "GET /api/agent/results/{job_id}": (agent.AgentError, [404, 409, 503]),
        "GET /api/agent/results/{job_id}/artifacts/{name}": (agent.AgentError, [404, 409, 503]),
        "GET /api/agent/checkpoints": (agent.AgentError, [503]),
        "GET /api/agent/checkpoint/{job_id}": (agent.AgentError, [404, 409]),
        "POST /api/agent/checkpoint/{job_id}/approve": (agent.AgentError, [400, 404, 409, 503]),
        "POST /api/agent/checkpoint/{job_id}/abort": (agent.AgentError, [400, 404, 409, 503]),
        "GET /api/schedules": (agent.AgentError, [503]),
        "POST /api/schedules": (agent.AgentError, [400, 503]),
        "GET /api/schedules/{schedule_id}": (agent.AgentError, [404, 503]),
        "DELETE /api/schedules/{schedule_id}": (agent.AgentError, [404, 503]),
        "GET /api/webhooks/deliveries": (agent.AgentError, [400, 404, 503]),
        "GET /api/usage": (agent.AgentError, [400, 503]),
        "GET /api/usage.csv": (agent.AgentError, [400, 503]),
        "GET /api/usage/jobs/{job_id}": (agent.AgentError, [404, 503]),
    },
)
