"""Default adapters of webhooks: the delivery log in the jobs table and the guarded HTTP client (on AWS and
on the local runtime alike). The lookups that belong to other families (a team's secret, whether a team's
job exists) are handed in by the composition root of the function that serves them."""

from __future__ import annotations

from collections.abc import Callable

from functions.webhooks.deliveries import DynamoDbDeliveryLog
from functions.webhooks.notify import WebhookNotifier
from functions.webhooks.queries import DeliveryQueries
from functions.webhooks.sender import WebhookSender


def notifier(secret_of: Callable[[str], str | None]) -> WebhookNotifier:
    return WebhookNotifier(log=DynamoDbDeliveryLog(), secret_of=secret_of, sender=WebhookSender())


def delivery_queries(job_exists: Callable[[str, str], bool]) -> DeliveryQueries:
    return DeliveryQueries(log=DynamoDbDeliveryLog(), job_exists=job_exists)
