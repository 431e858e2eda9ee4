"""Finalize: the job's outcome (COMPLETED, PARTIAL or REFUSED), its report artifacts and results
document, its final status, then what follows it (functions/orchestrate/completion.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from functions.common.settings import get_settings
from functions.common.storage import BlobStore, S3BlobStore
from functions.common.traces import DynamoDbTraceStore
from functions.metering.job_budget import skipped_work
from functions.orchestrate.completion import JobCompletion, artifact_prefix, results_key
from functions.orchestrate.contracts import FinalizeInput, FinishedOutput
from functions.orchestrate.models import ARTIFACT_NAMES, JobRecord, JobStatus, decision
from functions.orchestrate.payloads import load, screened
from functions.orchestrate.progress import FinalOutcome
from functions.orchestrate.search_round import (
    BUDGET_REACHED,
    not_run_counts,
    uncovered_concepts,
    upstream_failures,
)
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.steps.base import JobStep
from functions.orchestrate.store import DynamoDbJobStore, EventBridgePublisher
from functions.research.job import exports, outputs
from functions.research.job.inputs import Extraction, QueryResult, ScreeningPayload
from functions.research.job.prisma import PrismaFlow, prisma_flow
from functions.research.job.prisma_diagram import prisma_svg
from functions.research.job.report import SearchSummary, build_results
from functions.research.job.result import SynthesisResult
from functions.research.retrieval.screening import Candidate
from functions.schedules.wiring import living_review
from functions.teams.wiring import team_service
from functions.webhooks.wiring import notifier


@dataclass(kw_only=True)
class Finalize(JobStep):
    data: BlobStore
    artifacts: BlobStore
    completion: JobCompletion

    def __call__(self, request: FinalizeInput) -> FinishedOutput:
        progress = self.progress(request.team, request.job_id)
        team_id, job_id, job = progress.team_id, progress.job_id, progress.job()
        stored = load(self.data, request.synthesis.synthesis_key, SynthesisResult)
        if stored is None:
            raise ValueError(f"job {job_id} has no synthesis at {request.synthesis.synthesis_key}")
        synthesis = outputs.without_struck(stored, job.struck_evidence)
        screening = screened(self.data, job)
        candidates = screening.by_id()
        searches, extractions = request.search_results, request.extractions
        selected = [candidates[i] for i in screening.selected if i in candidates]
        status, partial_reasons, budget_decisions = job_outcome(job, synthesis, searches, extractions)
        flow = prisma_flow(searches, screening, extractions)
        files, keys = report_files(job, synthesis, screening, selected, searches, extractions, flow, status)
        artifact_keys = self._write(team_id, job_id, files)
        report = build_results(
            job_id,
            status.value,
            synthesis,
            screening,
            selected,
            keys,
            extractions,
            _search_summary(job, searches),
            partial_reasons if status is JobStatus.PARTIAL else [],
            artifact_keys,
            flow,
        )
        results = report.model_dump(mode="json")  # the document the living review adds to
        self._store_results(team_id, job, results, candidates)
        moved = progress.finished(
            status,
            report,
            FinalOutcome(
                results_key=results_key(team_id, job_id),
                artifact_keys=artifact_keys,
                partial_reasons=report.execution_summary.partial_reasons,
                artifacts_written=len(files),
                budget_decisions=budget_decisions,
            ),
        )
        if moved:
            self.completion.completed(team_id, job.as_dict(), results)
        return FinishedOutput(job_id=job_id, status=status.value, moved=moved)

    def _write(self, team_id: str, job_id: str, files: dict[str, str]) -> dict[str, str]:
        prefix = artifact_prefix(team_id, job_id)
        artifact_keys = {name: prefix + name for name in files}
        for name, body in files.items():
            self.artifacts.put_bytes(artifact_keys[name], body.encode("utf-8"), ARTIFACT_NAMES[name])
        return artifact_keys

    def _store_results(
        self, team_id: str, job: JobRecord, results: dict[str, Any], candidates: dict[str, Candidate]
    ) -> None:
        """results.json, with a scheduled run's changes since its schedule's last run."""
        changes = self.completion.changes(team_id, job.as_dict(), results, candidates)
        if changes is not None:
            results["changes_since_last_run"] = changes
        body = outputs.to_json(results).encode("utf-8")
        self.artifacts.put_bytes(results_key(team_id, job.job_id), body, "application/json")


def report_files(
    job: JobRecord,
    synthesis: SynthesisResult,
    screening: ScreeningPayload,
    selected: list[Candidate],
    searches: list[QueryResult],
    extractions: list[Extraction],
    flow: PrismaFlow,
    status: JobStatus,
) -> tuple[dict[str, str], dict[str, str]]:
    """The report artifacts by name, and source id -> citation key. The bibliography's three forms
    are each read back and checked before they are written."""
    bib, keys = outputs.bibtex_entries(selected)
    outputs.validate_bibtex(bib, len(selected))
    ris_records = exports.ris_records(selected, keys, synthesis.evidence)
    ris = exports.ris_text(ris_records)
    exports.validate_ris(ris, ris_records)
    csl_items = exports.csl_items(selected, keys, synthesis.evidence)
    csl_json = exports.csl_json_text(csl_items)
    exports.validate_csl_json(csl_json, csl_items)
    files = {
        "report.md": outputs.report_markdown(synthesis, selected, keys, status.value, flow),
        "bibliography.bib": bib,
        "references.ris": ris,
        "references.csl.json": csl_json,
        "annotated_bibliography.md": outputs.annotated_bibliography(
            selected,
            keys,
            {item.source_id: item for item in extractions if item.source_id},
            synthesis.evidence,
        ),
        "quote_library.json": outputs.to_json(outputs.quote_library(selected, synthesis.evidence)),
        "search_report.md": outputs.search_report(
            job.research_plan, searches, screening, extractions, job.decisions
        ),
        "prisma_flow.svg": prisma_svg(flow),
    }
    return files, keys


def job_outcome(
    job: JobRecord,
    synthesis: SynthesisResult,
    searches: list[QueryResult],
    extractions: list[Extraction],
) -> tuple[JobStatus, list[str], list[dict[str, str]]]:
    """(status, partial reasons, budget decisions). PARTIAL: coverage was really lost. An upstream
    answered errors, a concept of the goal found nothing from any connector, or a source failed in a way
    a retry might mend; or work was skipped for the budget. Queries that waited past the job's search
    time for their turn are reported (not run), not counted as failures; a source with no open full
    text (paywalled, gone) is reported per source."""
    interrupted = [item for item in extractions if not item.success and not item.unavailable]
    partial_reasons = [
        *(
            f"{name} answered errors: {reason}"
            for name, reason in sorted(upstream_failures(searches).items())
        ),
        *(
            f"no results for '{concept}' from any connector"
            for concept in uncovered_concepts(job.research_plan.key_phrases, searches)
        ),
        *(
            [f"{len(interrupted)} source(s) could not be extracted: {interrupted[0].failure_reason}"]
            if interrupted
            else []
        ),
    ]
    if synthesis.refusal:
        status = JobStatus.REFUSED
    elif partial_reasons:
        status = JobStatus.PARTIAL
    else:
        status = JobStatus.COMPLETED
    budget_decisions = budget_reached(job)
    if budget_decisions:  # work was skipped for the budget: never COMPLETED, nor a plain refusal
        status = JobStatus.PARTIAL
        partial_reasons.append("stopped at its cost budget")
    return status, partial_reasons, budget_decisions


def budget_reached(job: JobRecord) -> list[dict[str, str]]:
    """The BUDGET_REACHED decision of a job that skipped work for its budget (none otherwise)."""
    skipped = skipped_work(
        job.budget_skipped_queries, job.budget_skipped_sources, job.budget_skipped_synthesis
    )
    if skipped is None:
        return []
    return [
        decision(
            BUDGET_REACHED,
            job.budget_reason or "the budget was reached",
            f"Skipped: {skipped}; finished PARTIAL with the work done within the budget",
        )
    ]


def _search_summary(job: JobRecord, searches: list[QueryResult]) -> SearchSummary:
    return SearchSummary(
        requests_planned=len(searches),
        not_run=not_run_counts(searches),
        failed_connectors=sorted(upstream_failures(searches)),
        hits=job.hits_found,
        cache_hits=job.search_cache_hits,
        coalesced=job.search_coalesced,
    )


def build() -> Finalize:
    settings = get_settings()
    return Finalize(
        jobs=DynamoDbJobStore(),
        data=S3BlobStore(settings.data_bucket),
        artifacts=S3BlobStore(settings.artifacts_bucket),
        completion=JobCompletion(
            events=EventBridgePublisher(),
            artifact_uri=lambda key: f"s3://{settings.artifacts_bucket}/{key}",
            living_review=living_review,
            webhooks=lambda: notifier(secret_of=team_service().webhook_secret),
        ),
        traces=DynamoDbTraceStore(),
    )


handler = step_handler("finalize", FinalizeInput, build)
