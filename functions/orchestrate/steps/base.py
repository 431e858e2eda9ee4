"""What every step of the job shares: the job store it records progress in and the trace store of the job's
agent trace (None: the trace is not kept)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from functions.orchestrate.progress import JobProgress
from functions.orchestrate.store import JobStore

if TYPE_CHECKING:
    from functions.common.storage import BlobStore
    from functions.common.traces import TraceStore
    from functions.metering.job_budget import JobBudget
    from functions.orchestrate.config import WorkflowSettings


@dataclass(kw_only=True)
class JobStep:
    jobs: JobStore
    traces: TraceStore | None = None

    def progress(self, team_id: str, job_id: str) -> JobProgress:
        """The bookkeeping of the job `job_id` of `team_id` within this invocation."""
        return JobProgress(self.jobs, team_id, job_id, self.traces)


@dataclass(kw_only=True)
class BudgetedStep(JobStep):
    """A step that reads and writes the job's step data, under the workflow's settings and the job's budget
    (deployed: functions/orchestrate/steps/deployed.py)."""

    data: BlobStore
    settings: WorkflowSettings
    budget: JobBudget
