"""The adapters a deployed `BudgetedStep` is built with (its `build()`): the job table, the data bucket, the
workflow settings, the job budget and the trace table; each step adds its own ports."""

from __future__ import annotations

from typing import TypedDict

from functions.common.settings import get_settings
from functions.common.storage import BlobStore, S3BlobStore
from functions.common.traces import DynamoDbTraceStore, TraceStore
from functions.metering.job_budget import JobBudget
from functions.metering.wiring import budgets
from functions.orchestrate.config import WorkflowSettings, get_workflow_settings
from functions.orchestrate.store import DynamoDbJobStore, JobStore


class DeployedAdapters(TypedDict):
    jobs: JobStore
    data: BlobStore
    settings: WorkflowSettings
    budget: JobBudget
    traces: TraceStore | None


def deployed_adapters() -> DeployedAdapters:
    return DeployedAdapters(
        jobs=DynamoDbJobStore(),
        data=S3BlobStore(get_settings().data_bucket),
        settings=get_workflow_settings(),
        budget=JobBudget(budgets()),
        traces=DynamoDbTraceStore(),
    )
