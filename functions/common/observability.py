"""Structured JSON logging and CloudWatch metrics (Powertools). One logger per service name.

Metrics are written as Embedded Metric Format lines, one per call, so they need no flush at the end of
an invocation and work the same in a Lambda, a step handler and the local server.
`POWERTOOLS_METRICS_DISABLED=true` (set by the local runtime and the tests) turns them off.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

NAMESPACE = "EvidenceResearch"


def get_logger(service: str) -> Logger:
    return Logger(service=service)


def get_metrics(service: str) -> Metrics:
    return Metrics(namespace=NAMESPACE, service=service)


def record_metric(
    service: str, name: str, value: float, unit: MetricUnit = MetricUnit.Count, **dimensions: str
) -> None:
    """Emit one metric now, with `service` and the given dimensions."""
    if is_metrics_disabled():  # single_metric itself does not look at POWERTOOLS_METRICS_DISABLED
        return
    with single_metric(
        name=name,
        unit=unit,
        value=value,
        namespace=NAMESPACE,
        default_dimensions={"service": service, **dimensions},
    ):
        pass
