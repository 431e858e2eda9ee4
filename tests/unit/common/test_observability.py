"""Metrics are Embedded Metric Format lines with the service and the given dimensions."""

from __future__ import annotations

import json

import pytest
from aws_lambda_powertools.metrics import MetricUnit

from functions.common.observability import NAMESPACE, record_metric


def test_record_metric_writes_one_emf_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    record_metric("search", "ConnectorLatency", 812.5, MetricUnit.Milliseconds, connector="arxiv")
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    directive = line["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == NAMESPACE
    assert directive["Metrics"] == [{"Name": "ConnectorLatency", "Unit": "Milliseconds"}]
    assert (line["service"], line["connector"], line["ConnectorLatency"]) == ("search", "arxiv", [812.5])


def test_metrics_can_be_switched_off(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    record_metric("extract", "ExtractionSucceeded", 1)
    assert capsys.readouterr().out == ""
