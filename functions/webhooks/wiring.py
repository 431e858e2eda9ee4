"""Default adapters of webhooks: the delivery log in the jobs table, the team's secret from the teams
registry, the guarded HTTP client (on AWS and on the local runtime alike)."""

from __future__ import annotations

from functions.webhooks.deliveries import DynamoDbDeliveryLog
from functions.webhooks.notify import WebhookNotifier
from functions.webhooks.queries import DeliveryQueries
from functions.webhooks.sender import WebhookSender


def team_secret(team_id: str) -> str | None:
    from functions.teams.wiring import team_service

    return team_service().webhook_secret(team_id)


def notifier() -> WebhookNotifier:
    return WebhookNotifier(log=DynamoDbDeliveryLog(), secret_of=team_secret, sender=WebhookSender())


def delivery_queries() -> DeliveryQueries:
    from functions.orchestrate.store import DynamoDbJobStore

    jobs = DynamoDbJobStore()
    return DeliveryQueries(
        log=DynamoDbDeliveryLog(), job_exists=lambda team_id, job_id: jobs.get(team_id, job_id) is not None
    )
