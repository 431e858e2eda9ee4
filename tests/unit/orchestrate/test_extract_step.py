"""The Extract step over in-memory adapters: how extraction outcomes become records, retries or failures."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from functions.common.errors import FetchBlocked, FetchTimeout, RetryableStepError, StepDeferred
from functions.common.models import ExtractedPaper
from functions.common.outbound.upstream_turns import TurnDeferred
from functions.common.storage import InMemoryBlobStore, get_json
from functions.extract.errors import SourceUnavailable
from functions.metering.job_budget import JobBudget
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.contracts import ExtractInput
from functions.orchestrate.jobs import JobService
from functions.orchestrate.steps.extract import Extract
from functions.research.planning.request import ExecuteRequest
from tests.support.fakes.jobs import InMemoryJobStore, RecordingStarter
from tests.unit.orchestrate.fixtures import extracted


class ScriptedExtractor:
    def __init__(self, outcome: Any) -> None:
        self.outcome = outcome

    async def extract(self, source_url: str, **kwargs: Any) -> ExtractedPaper:
        if isinstance(self.outcome, float):
            await asyncio.sleep(self.outcome)
        if isinstance(self.outcome, Exception):
            raise self.outcome
        assert isinstance(self.outcome, ExtractedPaper)
        return self.outcome


def _step(outcome: Any, budget: float = 5.0) -> tuple[Extract, str]:
    jobs, artifacts = InMemoryJobStore(), InMemoryBlobStore()
    service = JobService(
        jobs=jobs, starter=RecordingStarter(), artifacts=artifacts, settings=WorkflowSettings()
    )
    job_id = service.submit(
        "team-default", ExecuteRequest(research_goal="What are recent advances in transformer architectures?")
    )[0]["job_id"]
    step = Extract(
        jobs=jobs,
        data=InMemoryBlobStore(),
        extraction_service=lambda: ScriptedExtractor(outcome),
        settings=WorkflowSettings(extract_budget_seconds=budget),
        budget=JobBudget(),
    )
    return step, job_id


def _extract(step: Extract, job_id: str) -> dict[str, Any]:
    event = {"job_id": job_id, "source": {"source_id": "src-1", "url": "https://arxiv.org/abs/2501.00001"}}
    return step(ExtractInput.model_validate(event)).model_dump(mode="json")


def _audit(step: Extract, job_id: str) -> list[str]:
    job = step.jobs.get("team-default", job_id)
    assert job is not None
    return [entry["event"] for entry in job["audit"]]


def test_success_is_stored_by_reference() -> None:
    _, paper = extracted(1, [("finding", "Sparse attention cut memory use by 40% on long documents.")])
    step, job_id = _step(paper)
    result = _extract(step, job_id)
    assert result["success"] and result["evidence_count"] == 1
    stored = get_json(step.data, result["parsed_key"])
    assert stored is not None and stored["evidence"][0]["page"] == 1
    assert step.jobs.get("team-default", job_id)["extract_ok"] == 1  # type: ignore[index]


@pytest.mark.parametrize(
    ("outcome", "event", "reason"),
    [
        (SourceUnavailable("HTTP 404: https://x does not exist"), "EXTRACTION_FAILED", "404"),
        (FetchBlocked("private address refused"), "EXTRACTION_FAILED", "refused"),
        (FetchTimeout("extraction exceeded its budget"), "EXTRACTION_TIMEOUT", "timed out"),
        (3.0, "EXTRACTION_TIMEOUT", "0.2 s extraction budget"),
    ],
)
def test_permanent_failures_are_recorded_not_raised(outcome: Any, event: str, reason: str) -> None:
    step, job_id = _step(outcome, budget=0.2)  # 3.0: the extractor overruns; the step's guard fires
    result = _extract(step, job_id)
    assert result["success"] is False and result["parsed_key"] is None
    assert event in _audit(step, job_id)
    job = step.jobs.get("team-default", job_id)
    assert job is not None and job["extract_failed"] == 1
    if not isinstance(outcome, float):
        assert reason in result["failure_reason"]


def test_transient_failures_raise_for_the_state_machine_retry() -> None:
    step, job_id = _step(SourceUnavailable("HTTP 503 from https://x", transient=True))
    with pytest.raises(RetryableStepError):
        _extract(step, job_id)
    assert "RETRYABLE_ERROR" in _audit(step, job_id)
    assert step.jobs.get("team-default", job_id)["extract_done"] == 0  # type: ignore[index]


def test_a_turn_further_off_than_the_step_may_wait_defers_the_step() -> None:
    step, job_id = _step(TurnDeferred("arxiv_pdf", 2.0, 14))
    with pytest.raises(StepDeferred, match="arxiv_pdf"):
        _extract(step, job_id)
    job = step.jobs.get("team-default", job_id)
    assert job is not None and (job["extract_done"], job["extract_failed"]) == (0, 0)  # nothing ended
    assert not {"EXTRACTION_FAILED", "EXTRACTION_TIMEOUT"} & set(_audit(step, job_id))


def test_unparseable_content_is_a_recorded_failure() -> None:
    failed = ExtractedPaper(
        source_url="u", canonical_id="c", success=False, failure_reason="scanned image PDF"
    )
    step, job_id = _step(failed)
    result = _extract(step, job_id)
    assert result == {**result, "success": False, "failure_reason": "scanned image PDF"}
