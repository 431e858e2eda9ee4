"""What a job's steps record as they go: the job record's status and counters, its audit log, decisions
and actions, and the job's agent trace (readable at GET /v1/traces/{job_id}).

Writes named `once` are applied once however often Step Functions retries the step that makes them
(functions/orchestrate/store.py). A trace store that fails never fails the job: the audit log stays whole.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from functions.common.errors import NotFound
from functions.common.observability import get_logger
from functions.orchestrate.models import JobRecord, JobStatus, audit_event, decision, utc_now
from functions.orchestrate.store import JobStore
from functions.research.trace import DECISION, PLANNER, RETRIEVER, TraceRecorder, decision_event

if TYPE_CHECKING:
    from functions.common.models import ExtractedPaper
    from functions.common.traces import TraceStore
    from functions.research.job.report import ResearchResults
    from functions.research.job.result import SynthesisResult
    from functions.research.planning.plan import JobSettings, PlannedQuery, ResearchPlan
    from functions.research.retrieval.chasing import ChasingRecord
    from functions.research.retrieval.screening import ScreeningResult

logger = get_logger("orchestrate")

# What a unit the budget refused counts on the job record (as done, for progress), and its phase.
_BUDGET_SKIPS: dict[str, tuple[dict[str, int], str]] = {
    "search": ({"budget_skipped_queries": 1, "queries_done": 1}, "SEARCHING"),
    "extract": ({"budget_skipped_sources": 1, "extract_done": 1}, "EXTRACTING"),
    "synthesize": ({"budget_skipped_synthesis": 1}, "SYNTHESIZING"),
}


@dataclass(frozen=True)
class FinalOutcome:
    """What Finalize wrote besides the results: where they are, the artifacts, why the job is PARTIAL
    and the budget's decisions."""

    results_key: str
    artifact_keys: dict[str, str]
    partial_reasons: list[str]
    artifacts_written: int
    budget_decisions: list[dict[str, str]]  # decision entries


class JobTrace:
    """The job's agent trace (its id is the job id): each event made by a TraceRecorder and stored at once,
    so that every step's events are readable while the job runs."""

    def __init__(self, traces: TraceStore | None, team_id: str, job_id: str) -> None:
        self._traces, self.team_id, self.job_id = traces, team_id, job_id
        # one recorder per step invocation: the prefix keeps the ids of the job's steps apart
        self.recorder = TraceRecorder(job_id, id_prefix=f"evt-{uuid.uuid4().hex[:8]}")
        self._stored = 0  # how many of the recorder's events are stored

    def __call__(
        self, agent: str, event_type: str, name: str, query: str | None = None, **payload: Any
    ) -> None:
        """`query`: the trace's query (the job's goal), named by its first event."""
        self.recorder.record(agent, event_type, name, **payload)
        self.store_recorded(query)

    def store_recorded(self, query: str | None = None) -> None:
        """Stores the events recorded since the last call (a stage records through `recorder` itself)."""
        events = [event.to_dict() for event in self.recorder.events[self._stored :]]
        self._stored = len(self.recorder.events)
        if self._traces is None or not events:
            return
        try:
            if query is not None:
                self._traces.put(self.team_id, self.job_id, query, events, kind="job")
            else:
                self._traces.append(self.team_id, self.job_id, events)
        except Exception:
            names = [event["name"] for event in events]
            logger.warning("trace events not stored", job_id=self.job_id, trace_events=names, exc_info=True)


class JobProgress:
    """The bookkeeping of one job within one step invocation."""

    def __init__(self, jobs: JobStore, team_id: str, job_id: str, traces: TraceStore | None = None) -> None:
        self.jobs, self.team_id, self.job_id = jobs, team_id, job_id
        self._trace = JobTrace(traces, team_id, job_id)

    @property
    def trace_recorder(self) -> TraceRecorder:
        """Where a stage of the pipeline records its own events; `synthesised` stores them."""
        return self._trace.recorder

    def job(self) -> JobRecord:
        found = self.jobs.get(self.team_id, self.job_id)
        if found is None:
            raise NotFound(f"job {self.job_id} not found")
        return JobRecord.model_validate(found)

    def _update(self, **changes: Any) -> bool:
        return self.jobs.update(self.team_id, self.job_id, **changes)

    # --- Plan --------------------------------------------------------------------------------------

    def planned(self, plan: ResearchPlan[JobSettings], connectors: list[str]) -> None:
        queries = len(plan.settings.queries)
        self._update(
            status=JobStatus.PLANNING,
            append={"audit": [audit_event("PLANNING", "PLAN_CREATED", f"{queries} queries planned")]},
            once="plan",  # a retried step writes its entries once
        )
        self._update(
            status=JobStatus.SEARCHING,
            set_fields={"queries_total": queries, "updated_at": utc_now()},
            append={
                "actions": [
                    f"Decomposed the goal into {len(plan.sub_questions)} sub-questions and "
                    f"{queries} database queries"
                ]
            },
            once="plan:searching",
        )
        self._trace(
            PLANNER,
            "plan",
            "plan_created",
            query=plan.goal,
            sub_questions=plan.sub_questions,
            queries=queries,
            concepts=plan.key_phrases,
            connectors=connectors,
        )
        reasoning = "The upstreams' rate limits and daily allowances bound what one job may ask"
        decisions = [
            decision("PLANNED_TO_RATE_BUDGET", reasoning, note) for note in plan.settings.budget_notes
        ]
        if decisions:
            self._update(append={"decisions": decisions}, once="plan:budget")

    # --- Search ------------------------------------------------------------------------------------

    def query_failed(self, query: PlannedQuery, message: str) -> None:
        self._update(
            add_counters={"queries_done": 1, "queries_failed": 1},
            once=f"search:{query.query_id}",  # a retried step counts its query once
            append={"audit": [audit_event("SEARCHING", "CONNECTOR_FAILED", f"{query.connector}: {message}")]},
        )
        ids: dict[str, Any] = {"query_id": query.query_id, "connector": query.connector}
        self._trace(RETRIEVER, "search", "search_completed", **ids, error=message)

    def query_done(self, query: PlannedQuery, outcome: Any, failed: Mapping[str, str]) -> None:
        """A query answered: its hits are counted, and any connector that failed within it audited."""
        appended: dict[str, list[Any]] = {}
        if failed:
            appended["audit"] = [
                audit_event("SEARCHING", "CONNECTOR_FAILED", f"{name}: {reason}")
                for name, reason in failed.items()
            ]
        self._update(
            add_counters={
                "queries_done": 1,
                "hits_found": len(outcome.papers),
                "search_cache_hits": int(outcome.cache_hits),
                "search_coalesced": int(outcome.coalesced),
            },
            append=appended,
            once=f"search:{query.query_id}",
        )
        self._trace(
            RETRIEVER,
            "search",
            "search_completed",
            query_id=query.query_id,
            connector=query.connector,
            query_text=query.query,
            result_count=len(outcome.papers),
            failed_connectors=dict(failed),
            from_cache=bool(outcome.from_cache),
            coalesced=bool(outcome.coalesced),
        )

    def queries_skipped_for_budget(self, extra: int) -> None:
        """The rest of a refused Search iteration's queries (the refusal counted the first)."""
        self._update(add_counters={"budget_skipped_queries": extra, "queries_done": extra})

    def queries_not_run(self, counts: Mapping[str, int]) -> None:
        total = sum(counts.values())
        self._update(
            add_counters={"queries_done": total, "queries_not_run": total},
            append={
                "audit": [_not_run_entry(connector, count) for connector, count in sorted(counts.items())]
            },
        )

    # --- Budgets (functions/metering/job_budget.py) -------------------------------------------------

    def budget_skipped(self, unit: str, what: str, reason: str) -> None:
        """A unit the budget refused: counted as done (for progress) and audited."""
        counters, phase = _BUDGET_SKIPS[unit]
        self._update(
            add_counters=counters,
            set_fields={"budget_reason": reason},
            append={"audit": [audit_event(phase, "BUDGET_SKIPPED", f"{what}: {reason}")]},
        )

    def extractions_skipped_for_budget(self, skipped: int, reason: str) -> None:
        self._update(
            add_counters={"budget_skipped_sources": skipped},
            set_fields={"budget_reason": reason},
            append={"audit": [audit_event("EXTRACTING", "BUDGET_SKIPPED", reason)]},
            once="screen:budget",
        )

    # --- Screen ------------------------------------------------------------------------------------

    def validating(self) -> None:
        self._update(status=JobStatus.VALIDATING)

    def screening_continues(self, embedded: int, candidates: int, iteration: int) -> None:
        """Screen ran out of embedding time in this iteration: it continues in the next one."""
        self._trace(RETRIEVER, "rank", "screening_continued", embedded=embedded, candidates=candidates,
                    iteration=iteration)  # fmt: skip

    def refining(
        self, result: ScreeningResult, plan: ResearchPlan[JobSettings], variants: int, requests: int
    ) -> None:
        reasoning = (
            f"Insufficient sources found: {result.passed} of the {plan.settings.target_sources} required passed the "
            f"{plan.settings.policies.relevance_threshold:.1f} relevance threshold and policies"
        )
        self._update(
            set_fields={"refined": True},
            add_counters={"queries_total": requests},
            once="refine",
            append={
                "decisions": [
                    decision(
                        "ADAPTIVE_REFINEMENT",
                        reasoning,
                        f"Generated {variants} refined search queries ({requests} database requests)",
                    )
                ],
                "actions": [f"Refined the search with {variants} broader queries"],
            },
        )

    def screened(
        self,
        result: ScreeningResult,
        plan: ResearchPlan[JobSettings],
        refined: bool,
        screening_key: str,
        to_extract: int,
        method: str,
    ) -> None:
        """`refined`: the job already had its refinement round."""
        unique, selected = len(result.candidates), len(result.selected)
        detail = (
            f"{result.passed} passed policies; rejected: {json.dumps(result.rejection_counts)}; "
            f"relevance: {method}, calibrated probability threshold {plan.settings.policies.relevance_threshold:.2f}"
        )
        self._update(
            status=JobStatus.EXTRACTING,
            set_fields={**_screening_fields(result, to_extract), "screening_key": screening_key},
            append={
                "decisions": _screening_decisions(result, plan, refined),
                "actions": [
                    f"Validated {unique} unique sources ({result.duplicates} duplicates merged)",
                    f"Selected {selected} sources for extraction",
                ],
                "audit": [audit_event("VALIDATING", "SCREENING_COMPLETED", detail)],
            },
            once="screen",  # a retried step writes its decisions and entries once
        )
        selected_ids = [c.source_id for c in result.selected]
        self._trace(RETRIEVER, "rank", "sources_ranked", discovered=unique, passed=result.passed,
                    selected=selected_ids, rejected=result.rejection_counts, method=method)  # fmt: skip

    # --- Extract -----------------------------------------------------------------------------------

    def source_failed(self, source_id: str, url: str, event: str, reason: str) -> None:
        self._update(
            add_counters={"extract_done": 1, "extract_failed": 1},
            once=f"extract:{source_id}",  # a retried step counts its source once
            append={"audit": [audit_event("EXTRACTING", event, f"{url}: {reason}")]},
        )
        self._trace(RETRIEVER, "retrieve", "source_read", source_id=source_id, success=False, reason=reason)

    def source_read(self, source_id: str, paper: ExtractedPaper) -> None:
        self._update(add_counters={"extract_done": 1, "extract_ok": 1}, once=f"extract:{source_id}")
        read: dict[str, Any] = {"evidence": len(paper.evidence), "pages": paper.page_count}
        self._trace(RETRIEVER, "retrieve", "source_read", source_id=source_id, success=True, **read)

    def retrying(self, url: str, message: str) -> None:
        detail = f"{url}: {message}; the step is retried"
        self._update(append={"audit": [audit_event("EXTRACTING", "RETRYABLE_ERROR", detail)]})

    # --- Synthesize --------------------------------------------------------------------------------

    def synthesising(self) -> None:
        self._update(status=JobStatus.SYNTHESIZING, set_fields={"updated_at": utc_now()})

    def synthesised(self, result: SynthesisResult, caught: list[tuple[str, str]]) -> None:
        """`caught`: (url, reason) of the sources whose step the Extract Map's Catch recorded."""
        kept = sum(1 for claim in result.claims if claim.kept)
        written = f"{len(result.primary_themes)} themes, {kept} verified claims, writer {result.writer}"
        event = "SYNTHESIS_REFUSED" if result.refusal else "SYNTHESIS_WRITTEN"
        self._update(
            append={
                "audit": [
                    *(
                        audit_event("EXTRACTING", "SOURCE_STEP_FAILED", f"{url}: {why}")
                        for url, why in caught
                    ),
                    audit_event("SYNTHESIZING", event, result.refusal_reason or written),
                    *(audit_event("SYNTHESIZING", "NOTE", note) for note in result.notes),
                ],
                "actions": [
                    f"Synthesised {len(result.primary_themes)} themes from {len(result.evidence)} evidence quotes"
                ],
            },
            once="synthesize",
        )
        # the Writer's, Verifier's and Red-Team's events, recorded by the synthesis stages themselves
        self._trace.store_recorded()

    # --- Finalize and MarkFailed -------------------------------------------------------------------

    def finished(self, status: JobStatus, results: ResearchResults, outcome: FinalOutcome) -> bool:
        """The job's final status and where its results are; False when the job had already finished."""
        # Before the status moves: a client that sees the job finished finds its whole trace.
        event_type, payload = decision_event(
            results.refusal, results.refusal_reason, results.confidence_score, status=status.value
        )
        self._trace(DECISION, event_type, "decision", **payload)
        return self._update(
            status=status,
            set_fields={
                "results_key": outcome.results_key,
                "artifacts": outcome.artifact_keys,
                "confidence_score": float(results.confidence_score),
                "refusal_reason": results.refusal_reason,
                "partial_reasons": outcome.partial_reasons,
                "finished_at": utc_now(),
                "updated_at": utc_now(),
            },
            append={
                "audit": [audit_event("FINALIZING", "JOB_FINISHED", f"status {status.value}")],
                "actions": [f"Wrote {outcome.artifacts_written} report artifacts"],
                "decisions": outcome.budget_decisions,
            },
        )

    def failed(self, reason: str) -> bool:
        """The job is FAILED for `reason`; False when it had already finished."""
        self._trace(DECISION, "refuse", "job_failed", reason=reason)
        return self._update(
            status=JobStatus.FAILED,
            set_fields={"failure_reason": reason, "finished_at": utc_now(), "updated_at": utc_now()},
            append={"audit": [audit_event("FAILED", "JOB_FAILED", reason)]},
        )


def record_chasing(progress: JobProgress, record: ChasingRecord, extract_total: int) -> None:
    """The Chase step's outcome: the sources to extract, chased ones included, an audit entry for the phase
    and one for each seed that could not be chased (with the providers' reasons)."""
    new = len(record.selected)
    detail = (
        f"{record.mode}: {len(record.seeds)} seeds, {record.chased_works} works from the citation graphs "
        f"({record.new_candidates} new), {new} selected; graph requests {json.dumps(record.requests)}"
    )
    audit = [audit_event("VALIDATING", "CITATIONS_CHASED", detail)]
    audit += [
        audit_event("VALIDATING", "SEED_NOT_CHASED", f"{seed}: {why}")
        for seed, why in record.not_chased().items()
    ]
    job = progress.job()
    progress._update(
        set_fields={
            "extract_total": extract_total,
            "sources_accepted": job.sources_accepted + new,
            "sources_discovered": job.sources_discovered + record.new_candidates,
            "updated_at": utc_now(),
        },
        append={
            "actions": [f"Chased the citations of {len(record.seeds)} sources: {new} more selected"],
            "audit": audit,
        },
        once="chase",
    )


def _screening_decisions(
    result: ScreeningResult, plan: ResearchPlan[JobSettings], refined: bool
) -> list[dict[str, str]]:
    decisions: list[dict[str, str]] = []
    if refined and result.passed < plan.settings.target_sources:
        decisions.append(
            decision(
                "PROCEED_WITH_AVAILABLE_SOURCES",
                f"Still {result.passed} of {plan.settings.target_sources} sources after one refinement round",
                f"Continuing with {len(result.selected)} validated sources",
            )
        )
    held_back = result.rejection_counts.get("diversity_cap")
    if held_back:
        decisions.append(
            decision(
                "DIVERSITY_ENFORCEMENT",
                "SourceDiversityPolicy caps the share of sources from one venue",
                f"Held back {held_back} source(s) from over-represented venues",
            )
        )
    return decisions


def _not_run_entry(connector: str, count: int) -> dict[str, str]:
    detail = (
        f"{connector}: {count} quer{'y' if count == 1 else 'ies'} not run "
        f"({connector}'s rate budget was spent within the job's search time)"
    )
    return audit_event("SEARCHING", "QUERIES_NOT_RUN", detail)


def _screening_fields(result: ScreeningResult, to_extract: int) -> dict[str, Any]:
    unique, selected = len(result.candidates), len(result.selected)
    return {
        "sources_discovered": unique,
        "sources_validated": result.passed,
        "sources_accepted": selected,
        "sources_rejected": unique - selected,
        "average_quality_score": result.average_quality,
        "extract_total": to_extract,
        "updated_at": utc_now(),
    }
