"""Extract (one item of the Extract Map): one selected source's full text and evidence. A permanent
failure is recorded and returned; a transient one raises RetryableStepError for the state machine's retry,
and a turn at a provider that is further off than the step may wait billed raises StepDeferred (the
state machine waits, unbilled, and runs the step again)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from functions.common.errors import (
    FetchError,
    FetchStatusError,
    FetchTimeout,
    InvalidInput,
    NotFound,
    RetryableStepError,
    StepDeferred,
    UpstreamError,
)
from functions.common.models import ExtractedPaper, FullTextPort
from functions.common.outbound.upstream_turns import TurnDeferred
from functions.common.storage import put_json
from functions.metering.meter import MeteredFullText
from functions.orchestrate.contracts import ExtractInput
from functions.orchestrate.payloads import extracted_key
from functions.orchestrate.progress import JobProgress
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.steps.base import BudgetedStep
from functions.orchestrate.steps.deployed import deployed_adapters
from functions.research.job.inputs import Extraction
from functions.research.job.report import BUDGET_NOT_EXTRACTED

# A source that exists but offers us no full text (paywalled, gone): retrying won't help.
NO_OPEN_FULL_TEXT = (401, 402, 403, 404, 410, 451)
MAX_TEXT_LENGTH = 20000


@dataclass
class _Failure:
    reason: str
    event: str = "EXTRACTION_FAILED"
    unavailable: bool = False


@dataclass(kw_only=True)
class Extract(BudgetedStep):
    extraction_service: Callable[[], FullTextPort]

    def __call__(self, request: ExtractInput) -> Extraction:
        progress = self.progress(request.team, request.job_id)
        source_id, url = request.source.source_id, request.source.url
        base = Extraction(source_id=source_id, url=url, parsed_key=None, evidence_count=0)
        if self._over_budget(progress, url):
            return base.model_copy(
                update={
                    "success": False,
                    "failure_reason": BUDGET_NOT_EXTRACTED,
                    "unavailable": True,
                    "budget_skipped": True,
                }
            )
        outcome = self._attempt(progress, request)
        if isinstance(outcome, _Failure):
            progress.source_failed(source_id, url, outcome.event, outcome.reason)
            return base.model_copy(
                update={
                    "success": False,
                    "failure_reason": outcome.reason,
                    "unavailable": outcome.unavailable,
                }
            )
        key = extracted_key(progress.team_id, progress.job_id, source_id)
        put_json(self.data, key, outcome.model_dump(mode="json"))
        progress.source_read(source_id, outcome)
        return base.model_copy(
            update={
                "success": True,
                "failure_reason": None,
                "parsed_key": key,
                "evidence_count": len(outcome.evidence),
                "confidence_score": outcome.confidence_score,
            }
        )

    def _over_budget(self, progress: JobProgress, url: str) -> bool:
        job = progress.job() if self.budget.gate is not None else None
        # the Map's iterations after this one run even when the budget refuses
        pending = max(0, job.extract_total - job.extract_done - 1) if job is not None else 0
        reason = self.budget.refusal(progress.team_id, progress.job_id, "extract", pending=pending)
        if reason is not None:
            progress.budget_skipped("extract", url, reason)
        return reason is not None

    def _attempt(self, progress: JobProgress, request: ExtractInput) -> ExtractedPaper | _Failure:
        """The source's paper, or why it failed for good; a transient failure is audited and raised."""
        budget, url = self.settings.extract_budget_seconds, request.source.url
        try:
            paper = asyncio.run(
                asyncio.wait_for(
                    self._extract_once(progress, request, budget),
                    timeout=budget * 1.1 + 0.5,  # a guard in case the service overruns its own budget
                )
            )
        except TurnDeferred as exc:
            raise StepDeferred(f"extracting {url}: {exc}") from exc
        except (TimeoutError, FetchTimeout) as exc:
            return _Failure(
                f"timed out after the {budget:g} s extraction budget ({exc})", "EXTRACTION_TIMEOUT"
            )
        except FetchStatusError as exc:
            if exc.status_code >= 500 or exc.status_code == 429:
                _retry(progress, url, exc.message)
            return _Failure(exc.message, unavailable=exc.status_code in NO_OPEN_FULL_TEXT)
        except NotFound as exc:  # includes the extract service's SourceUnavailable
            if getattr(exc, "transient", False):
                _retry(progress, url, exc.message)
            return _Failure(exc.message, unavailable=True)
        except (InvalidInput, FetchError) as exc:  # incl. FetchBlocked and FetchTooLarge
            return _Failure(exc.message)
        except UpstreamError as exc:
            _retry(progress, url, exc.message)
        if not paper.success:
            return _Failure(paper.failure_reason or "extraction returned no content")
        return paper

    async def _extract_once(
        self, progress: JobProgress, request: ExtractInput, budget: float
    ) -> ExtractedPaper:
        """A fresh service per invocation (its HTTP client belongs to this event loop), closed after.
        `library://` sources resolve within the job's team only; its fetches queue at a provider as the
        job's, ranked by the source's place in the selection."""
        service = self.extraction_service()
        try:
            return await service.extract(
                request.source.url,
                focus_areas=list(request.focus_areas or []),
                max_length=MAX_TEXT_LENGTH,
                budget_seconds=budget,
                team_id=progress.team_id,
                job_id=progress.job_id,
                priority=int(request.priority or 0),
                turn_wait_seconds=self.settings.extract_turn_wait_seconds,
            )
        finally:
            close = getattr(service, "aclose", None)
            if close is not None:
                await close()


def _retry(progress: JobProgress, url: str, message: str) -> NoReturn:
    progress.retrying(url, message)
    raise RetryableStepError(f"transient failure extracting {url}: {message}")


def _extraction_service() -> FullTextPort:
    # Imported on first use, as every handler's heavy services are (tests/unit/common/test_cold_imports.py).
    from functions.extract.service import ExtractionService

    return MeteredFullText(ExtractionService.from_settings())


def build() -> Extract:
    return Extract(extraction_service=_extraction_service, **deployed_adapters())


handler = step_handler("extract", ExtractInput, build)
