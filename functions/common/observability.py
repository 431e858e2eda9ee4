"""Structured JSON logging and metrics (Powertools). One logger per service name."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics

NAMESPACE = "EvidenceResearch"


def get_logger(service: str) -> Logger:
    return Logger(service=service)


def get_metrics(service: str) -> Metrics:
    return Metrics(namespace=NAMESPACE, service=service)
