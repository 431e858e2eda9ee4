"""Counts the S3 and DynamoDB requests a unit of work makes, on boto3's own event system.

Every client of `functions.common.aws` gets a `before-call` handler (once: it is registered under a
unique id) that adds the call to the meter current on the calling thread (functions/metering/meter.py).
A call outside any meter is not counted. `before-call` fires once per API call, before botocore's
retries, so a retried request counts once.
"""

from __future__ import annotations

from typing import Any

from functions.common.aws import dynamodb_resource, s3_client
from functions.metering.meter import current_meter

HANDLER_ID = "functions.metering.count-calls"


def count_call(model: Any, **_: Any) -> None:
    meter = current_meter()
    if meter is not None:
        meter.count_call(str(model.service_model.service_name), str(model.name))


def instrument(client: Any) -> None:
    """Count `client`'s calls (idempotent)."""
    client.meta.events.register("before-call", count_call, unique_id=HANDLER_ID)


def instrument_clients() -> None:
    """The shared S3 and DynamoDB clients (cached per container; new ones after a reset)."""
    instrument(s3_client())
    instrument(dynamodb_resource().meta.client)
