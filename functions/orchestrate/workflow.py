"""The work of each state of the research state machine, over injected adapters.

Every method takes the state's JSON input and returns the (small) JSON the state machine carries on;
large data (search hits, screened candidates, extracted papers, the synthesis) moves through the data
bucket under `payloads/<team_id>/<job_id>/` and only keys travel between states (the 256 KB payload limit).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from functions.common.errors import (
    DomainError,
    FetchError,
    FetchStatusError,
    FetchTimeout,
    InvalidInput,
    NotFound,
    RetryableStepError,
    UpstreamError,
)
from functions.common.llm import LlmProvider
from functions.common.models import ExtractedPaper, Paper
from functions.common.observability import get_logger, record_metric
from functions.common.storage import BlobStore, get_json, put_json
from functions.common.tenancy import DEFAULT_TEAM, checked_team
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.models import (
    ARTIFACT_NAMES,
    JobStatus,
    audit_event,
    decision,
    utc_now,
)
from functions.orchestrate.search_round import (
    BUDGET_REACHED,
    SearchPort,
    SearchRound,
    SearchState,
    not_run_counts,
    uncovered_concepts,
    upstream_failures,
)
from functions.orchestrate.store import EventPublisher, JobStore
from functions.research import outputs
from functions.research.planning import (
    BOOLEAN_CONNECTORS,
    Renderer,
    ResearchPlan,
    connector_syntax,
    refined_queries,
)
from functions.research.relevance import RelevanceScorer
from functions.research.request import ExecuteRequest
from functions.research.retriever import FullTextPort
from functions.research.screening import Candidate, screen
from functions.research.synthesis import synthesize
from functions.research.trace import (
    DECISION,
    PLANNER,
    RED_TEAM,
    RETRIEVER,
    VERIFIER,
    WRITER,
    TraceEvent,
    utc_timestamp,
)

if TYPE_CHECKING:
    from functions.common.traces import TraceStore
    from functions.metering.budget import BudgetGate
    from functions.metering.estimate import Unit
    from functions.schedules.living import LivingReview
    from functions.webhooks.notify import WebhookNotifier

logger = get_logger("orchestrate")


class CheckpointExpired(DomainError):
    code = "CHECKPOINT_EXPIRED"


def artifact_prefix(team_id: str, job_id: str) -> str:
    return f"teams/{team_id}/jobs/{job_id}/"


def results_key(team_id: str, job_id: str) -> str:
    return artifact_prefix(team_id, job_id) + "results.json"


def _request_in(state: dict[str, Any]) -> ExecuteRequest:
    """The request of a job started without a record (EventBridge Scheduler); a ValidationError if invalid."""
    return ExecuteRequest.model_validate(
        {
            "research_goal": state.get("research_goal"),
            "scope_parameters": state.get("scope_parameters") or {},
            "callback_url": state.get("callback_url"),  # a schedule's webhook
        }
    )


def _error_reason(error: dict[str, Any] | None) -> str:
    if not error:
        return "unknown failure"
    name = str(error.get("Error", "Error"))
    cause = str(error.get("Cause", ""))
    try:
        parsed = json.loads(cause)
        if isinstance(parsed, dict) and parsed.get("errorMessage"):
            cause = str(parsed["errorMessage"])
    except ValueError:
        pass
    return f"{name}: {cause}".strip().rstrip(":")[:1000]


@dataclass
class Workflow:
    jobs: JobStore
    data: BlobStore
    artifacts: BlobStore
    search_service: Callable[[], SearchPort]
    extraction_service: Callable[[], FullTextPort]
    events: EventPublisher
    settings: WorkflowSettings
    # (team_id, job_id, request, source, schedule_id=None) -> a new job record
    new_job_record: Callable[..., dict[str, Any]]
    render: Renderer = connector_syntax
    llm: Callable[[], LlmProvider | None] = field(default=lambda: None)
    relevance_scorer: Callable[[], RelevanceScorer] = field(default=lambda: RelevanceScorer(None))
    run: Callable[[Coroutine[Any, Any, Any]], Any] = field(default=asyncio.run)
    artifact_uri: Callable[[str], str] = field(default=lambda key: key)
    # The job's agent trace (its id is the job id), readable at GET /v1/traces/{job_id}.
    traces: Callable[[], TraceStore | None] = field(default=lambda: None)
    # Living reviews (a scheduled run's changes_since_last_run, ResearchDigestReady) and completion
    # webhooks: functions/schedules/living.py, functions/webhooks/notify.py. None: neither.
    living_review: Callable[[], LivingReview | None] = field(default=lambda: None)
    # Job and monthly budgets (functions/metering/budget.py): asked before each search, extraction and
    # synthesis. None: no budgets.
    budget: Callable[[], BudgetGate | None] = field(default=lambda: None)
    webhooks: Callable[[], WebhookNotifier | None] = field(default=lambda: None)

    def _trace(
        self,
        team_id: str,
        job_id: str,
        agent: str,
        event_type: str,
        name: str,
        query: str | None = None,
        **payload: Any,
    ) -> None:
        """One trace event; a trace store that fails never fails the job (the audit log stays complete)."""
        store = self.traces()
        if store is None:
            return
        event = TraceEvent(f"evt-{uuid.uuid4().hex[:12]}", agent, event_type, name, utc_timestamp(), payload)
        try:
            if query is not None:
                store.put(team_id, job_id, query, [event.to_dict()], kind="job")
            else:
                store.append(team_id, job_id, [event.to_dict()])
        except Exception:
            logger.warning("trace event not stored", job_id=job_id, trace_event=name, exc_info=True)

    # --- Plan -------------------------------------------------------------------------------------

    def plan(self, event: dict[str, Any]) -> dict[str, Any]:
        state = event.get("input") or {}
        job_id = str(state.get("job_id") or event.get("execution_name") or "")
        if not job_id:
            raise InvalidInput("the state machine input names no job and the execution has no name")
        team_id = self._team(state)
        job = self.jobs.get(team_id, job_id)
        if job is None:  # started directly (EventBridge Scheduler): the job record is made here
            request = _request_in(state)
            record = self.new_job_record(
                team_id,
                job_id,
                request,
                str(state.get("source") or "schedule"),
                state.get("schedule_id"),
            )
            self.jobs.create(record)
            self._hold_budget(team_id, job_id, record)  # BudgetExceeded: MarkFailed records why
            job = self.jobs.get(team_id, job_id)
            if job is None:
                raise RetryableStepError(f"job {job_id} record not readable after creation")
        plan = ResearchPlan.from_dict(job["plan"])
        self.jobs.update(
            team_id,
            job_id,
            status=JobStatus.PLANNING,
            append={
                "audit": [audit_event("PLANNING", "PLAN_CREATED", f"{len(plan.queries)} queries planned")]
            },
            once="plan",  # a retried step writes its entries once
        )
        self.jobs.update(
            team_id,
            job_id,
            status=JobStatus.SEARCHING,
            set_fields={"queries_total": len(plan.queries), "updated_at": utc_now()},
            append={
                "actions": [
                    f"Decomposed the goal into {len(plan.sub_questions)} sub-questions and "
                    f"{len(plan.queries)} database queries"
                ]
            },
            once="plan:searching",
        )
        self._trace(
            team_id,
            job_id,
            PLANNER,
            "plan",
            "plan_created",
            query=plan.goal,
            sub_questions=plan.sub_questions,
            queries=len(plan.queries),
            concepts=plan.key_phrases,
            connectors=list(self._connectors(plan)),
        )
        if plan.budget_notes:
            self.jobs.update(
                team_id,
                job_id,
                append={
                    "decisions": [
                        decision(
                            "PLANNED_TO_RATE_BUDGET",
                            "The upstreams' rate limits and daily allowances bound what one job may ask",
                            note,
                        )
                        for note in plan.budget_notes
                    ]
                },
                once="plan:budget",
            )
        scope = job.get("scope_parameters") or {}
        return {
            "job_id": job_id,
            "team_id": team_id,
            "search": SearchState(pending=[query.to_dict() for query in plan.queries]).to_dict(),
            "focus_areas": plan.focus_areas,
            "max_concurrency": max(1, self.settings.extract_max_concurrency),
            "checkpoint": bool(scope.get("human_checkpoints", False)),
        }

    # --- Search (iterations of one task, functions/orchestrate/search_round.py) -------------------

    def search(self, event: dict[str, Any]) -> dict[str, Any]:
        job_id = str(event["job_id"])
        team_id = self._team(event)
        state = SearchState.from_event(event.get("search") or {})
        job = self._job(team_id, job_id)
        depth = str((job.get("scope_parameters") or {}).get("discovery_depth") or "rapid")
        seconds = self.settings.search_seconds(depth, refinement=state.phase == "refine")
        search_round = SearchRound(
            jobs=self.jobs,
            data=self.data,
            search_service=self.search_service,
            over_budget=lambda team, job_, what: self._over_budget(team, job_, "search", what),
            trace=lambda team, job_, **payload: self._trace(
                team, job_, RETRIEVER, "search", "search_completed", **payload
            ),
            iteration_seconds=self.settings.search_iteration_seconds,
        )
        return dict(self.run(search_round.run(team_id, job_id, state, seconds)).to_dict())

    # --- Screen -----------------------------------------------------------------------------------

    def _hits(self, results: list[dict[str, Any]]) -> list[tuple[str, Paper]]:
        hits: list[tuple[str, Paper]] = []
        for result in results:
            if not result.get("key"):
                continue
            for item in get_json(self.data, result["key"]) or []:
                hits.append((str(result["query_id"]), Paper.model_validate(item)))
        return hits

    def screen(self, event: dict[str, Any]) -> dict[str, Any]:
        job_id = str(event["job_id"])
        team_id = self._team(event)
        job = self._job(team_id, job_id)
        plan = ResearchPlan.from_dict(job["plan"])
        searches = list(event.get("search_results") or [])
        refined_already = bool(job.get("refined"))
        self.jobs.update(team_id, job_id, status=JobStatus.VALIDATING)
        scorer = self.relevance_scorer()
        result = screen(
            self._hits(searches),
            plan,
            current_year=datetime.now(UTC).year,
            allow_refinement=not refined_already
            and not job.get("budget_skipped_queries")
            and any(self._refine_turns(plan, searches).values()),
            scorer=scorer,
        )
        if result.needs_refinement:
            queries = refined_queries(
                plan,
                [c.paper.title for c in result.selected],
                connectors=self._connectors(plan),
                render=self.render,
                turns=self._refine_turns(plan, searches),
            )
            variants = len({tuple(q.terms) for q in queries})
            self.jobs.update(
                team_id,
                job_id,
                set_fields={"refined": True},
                add_counters={"queries_total": len(queries)},
                once="refine",
                append={
                    "decisions": [
                        decision(
                            "ADAPTIVE_REFINEMENT",
                            f"Insufficient sources found: {result.passed} of the {plan.target_sources} required "
                            f"passed the {plan.policies.relevance_threshold:.1f} relevance threshold and policies",
                            f"Generated {variants} refined search queries ({len(queries)} database requests)",
                        )
                    ],
                    "actions": [f"Refined the search with {variants} broader queries"],
                },
            )
            return {"action": "REFINE", "refined_queries": [q.to_dict() for q in queries], "selected": []}

        to_extract = self._affordable(team_id, job_id, result.selected)
        key = f"payloads/{team_id}/{job_id}/screening.json"
        put_json(
            self.data,
            key,
            {
                "candidates": [c.to_dict() for c in result.candidates],
                "selected": [c.source_id for c in result.selected],
                "budget_skipped": [c.source_id for c in result.selected[len(to_extract) :]],
                "discovered": result.discovered,
                "duplicates": result.duplicates,
                "validated": len(result.candidates),
                "passed": result.passed,
                "rejection_counts": result.rejection_counts,
            },
        )
        decisions: list[dict[str, str]] = []
        if refined_already and result.passed < plan.target_sources:
            decisions.append(
                decision(
                    "PROCEED_WITH_AVAILABLE_SOURCES",
                    f"Still {result.passed} of {plan.target_sources} sources after one refinement round",
                    f"Continuing with {len(result.selected)} validated sources",
                )
            )
        if result.rejection_counts.get("diversity_cap"):
            decisions.append(
                decision(
                    "DIVERSITY_ENFORCEMENT",
                    "SourceDiversityPolicy caps the share of sources from one venue",
                    f"Held back {result.rejection_counts['diversity_cap']} source(s) from over-represented venues",
                )
            )
        unique = len(result.candidates)
        self.jobs.update(
            team_id,
            job_id,
            status=JobStatus.EXTRACTING,
            set_fields={
                "screening_key": key,
                "sources_discovered": unique,
                "sources_validated": result.passed,
                "sources_accepted": len(result.selected),
                "sources_rejected": unique - len(result.selected),
                "average_quality_score": result.average_quality,
                "extract_total": len(to_extract),
                "updated_at": utc_now(),
            },
            append={
                "decisions": decisions,
                "actions": [
                    f"Validated {unique} unique sources ({result.duplicates} duplicates merged)",
                    f"Selected {len(result.selected)} sources for extraction",
                ],
                "audit": [
                    audit_event(
                        "VALIDATING",
                        "SCREENING_COMPLETED",
                        f"{result.passed} passed policies; rejected: {json.dumps(result.rejection_counts)}; "
                        f"relevance: {scorer.method}, calibrated probability threshold "
                        f"{plan.policies.relevance_threshold:.2f}",
                    )
                ],
            },
            once="screen",  # a retried step writes its decisions and entries once
        )
        self._trace(
            team_id,
            job_id,
            RETRIEVER,
            "rank",
            "sources_ranked",
            discovered=unique,
            passed=result.passed,
            selected=[c.source_id for c in result.selected],
            rejected=result.rejection_counts,
            method=scorer.method,
        )
        return {
            "action": "EXTRACT",
            "refined_queries": [],
            "selected": [
                {"source_id": c.source_id, "url": c.paper.url, "title": c.paper.title[:300]}
                for c in to_extract
            ],
        }

    @staticmethod
    def _connectors(plan: ResearchPlan) -> tuple[str, ...]:
        return tuple(dict.fromkeys(q.connector for q in plan.queries))

    @staticmethod
    def _refine_turns(plan: ResearchPlan, searches: list[dict[str, Any]]) -> dict[str, int]:
        """Refinement queries each connector may still be sent: one, except where the plan's own queries
        did not all run (its rate budget is spent), where it failed, and on a boolean engine (arXiv), whose
        one query already ORed every concept and whose turns are the scarcest."""
        not_run = not_run_counts(searches)
        failed = upstream_failures(searches)
        return {
            name: 0 if name in not_run or name in failed or name in BOOLEAN_CONNECTORS else 1
            for name in dict.fromkeys(q.connector for q in plan.queries)
        }

    # --- Checkpoint (waitForTaskToken) ------------------------------------------------------------

    def checkpoint(self, event: dict[str, Any]) -> dict[str, Any]:
        job_id = str(event["job_id"])
        team_id = self._team(event)
        job = self._job(team_id, job_id)
        started = job.get("checkpoint_started_at")
        now = datetime.now(UTC)
        if (
            started
            and (now - datetime.fromisoformat(started)).total_seconds()
            > self.settings.checkpoint_window_seconds
        ):
            raise CheckpointExpired(f"no approve/abort within {self.settings.checkpoint_window_seconds} s")
        fields: dict[str, Any] = {"checkpoint_token": event["task_token"], "awaiting_checkpoint": True}
        appended: dict[str, list[Any]] = {}
        if not started:
            fields["checkpoint_started_at"] = now.isoformat()
            appended["actions"] = [
                f"Awaiting human approval of {event.get('selected_count', 0)} selected sources"
            ]
        self.jobs.update(team_id, job_id, set_fields=fields, append=appended)
        return {"job_id": job_id, "waiting": True}

    # --- Extract (one Map item) -------------------------------------------------------------------

    async def _extract_once(
        self, team_id: str, job_id: str, url: str, focus_areas: list[str], budget: float, priority: int
    ) -> ExtractedPaper:
        """A fresh service per invocation (its HTTP client belongs to this event loop), closed after.
        `library://` sources resolve within the job's team only; its fetches queue at a provider as the
        job's, ranked by the source's place in the selection."""
        service = self.extraction_service()
        try:
            return await service.extract(
                url,
                focus_areas=focus_areas,
                max_length=20000,
                budget_seconds=budget,
                team_id=team_id,
                job_id=job_id,
                priority=priority,
            )
        finally:
            close = getattr(service, "aclose", None)
            if close is not None:
                await close()

    def extract(self, event: dict[str, Any]) -> dict[str, Any]:
        job_id = str(event["job_id"])
        team_id = self._team(event)
        source = event["source"]
        source_id, url = str(source["source_id"]), str(source["url"])
        budget = self.settings.extract_budget_seconds
        base = {"source_id": source_id, "url": url, "parsed_key": None, "evidence_count": 0}
        if self._over_budget(team_id, job_id, "extract", url):
            return {
                **base,
                "success": False,
                "failure_reason": BUDGET_NOT_EXTRACTED,
                "unavailable": True,
                "budget_skipped": True,
            }
        failure: str | None = None
        event_name = "EXTRACTION_FAILED"
        no_open_full_text = False  # the source exists but offers no full text to us: retrying won't help
        paper: ExtractedPaper | None = None
        try:
            paper = self.run(
                asyncio.wait_for(
                    self._extract_once(
                        team_id,
                        job_id,
                        url,
                        list(event.get("focus_areas") or []),
                        budget,
                        int(event.get("priority") or 0),
                    ),
                    timeout=budget * 1.1 + 0.5,  # a guard in case the service overruns its own budget
                )
            )
        except (TimeoutError, FetchTimeout) as exc:
            failure, event_name = (
                f"timed out after the {budget:g} s extraction budget ({exc})",
                "EXTRACTION_TIMEOUT",
            )
        except FetchStatusError as exc:
            if exc.status_code >= 500 or exc.status_code == 429:
                self._retrying(team_id, job_id, url, exc.message)
            failure, no_open_full_text = exc.message, exc.status_code in (401, 402, 403, 404, 410, 451)
        except NotFound as exc:  # includes the extract service's SourceUnavailable
            if getattr(exc, "transient", False):
                self._retrying(team_id, job_id, url, exc.message)
            failure, no_open_full_text = exc.message, True
        except (InvalidInput, FetchError) as exc:  # incl. FetchBlocked and FetchTooLarge
            failure = exc.message
        except UpstreamError as exc:
            self._retrying(team_id, job_id, url, exc.message)
        if paper is not None and not paper.success:
            failure = paper.failure_reason or "extraction returned no content"
        if failure is not None or paper is None:
            reason = failure or "extraction failed"
            self.jobs.update(
                team_id,
                job_id,
                add_counters={"extract_done": 1, "extract_failed": 1},
                once=f"extract:{source_id}",  # a retried step counts its source once
                append={"audit": [audit_event("EXTRACTING", event_name, f"{url}: {reason}")]},
            )
            self._trace(
                team_id,
                job_id,
                RETRIEVER,
                "retrieve",
                "source_read",
                source_id=source_id,
                success=False,
                reason=reason,
            )
            return {**base, "success": False, "failure_reason": reason, "unavailable": no_open_full_text}
        key = f"payloads/{team_id}/{job_id}/extracted/{source_id}.json"
        put_json(self.data, key, paper.model_dump(mode="json"))
        self.jobs.update(
            team_id, job_id, add_counters={"extract_done": 1, "extract_ok": 1}, once=f"extract:{source_id}"
        )
        self._trace(
            team_id,
            job_id,
            RETRIEVER,
            "retrieve",
            "source_read",
            source_id=source_id,
            success=True,
            evidence=len(paper.evidence),
            pages=paper.page_count,
        )
        return {
            **base,
            "success": True,
            "failure_reason": None,
            "parsed_key": key,
            "evidence_count": len(paper.evidence),
            "confidence_score": paper.confidence_score,
        }

    def _retrying(self, team_id: str, job_id: str, url: str, message: str) -> None:
        self.jobs.update(
            team_id,
            job_id,
            append={
                "audit": [
                    audit_event("EXTRACTING", "RETRYABLE_ERROR", f"{url}: {message}; the step is retried")
                ]
            },
        )
        raise RetryableStepError(f"transient failure extracting {url}: {message}")

    # --- Synthesize -------------------------------------------------------------------------------

    def _screened(self, job: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Candidate]]:
        screening = get_json(self.data, job["screening_key"]) if job.get("screening_key") else None
        screening = screening or {"candidates": [], "selected": []}
        candidates = {c["source_id"]: Candidate.from_dict(c) for c in screening["candidates"]}
        return screening, candidates

    def synthesize(self, event: dict[str, Any]) -> dict[str, Any]:
        job_id = str(event["job_id"])
        team_id = self._team(event)
        job = self._job(team_id, job_id)
        plan = ResearchPlan.from_dict(job["plan"])
        self.jobs.update(team_id, job_id, status=JobStatus.SYNTHESIZING, set_fields={"updated_at": utc_now()})
        _, candidates = self._screened(job)
        extractions = list(event.get("extractions") or [])
        sources: list[tuple[Candidate, ExtractedPaper]] = []
        caught: list[dict[str, str]] = []
        for item in extractions:
            if item.get("success") and item.get("parsed_key") and item.get("source_id") in candidates:
                data = get_json(self.data, item["parsed_key"])
                if data:
                    sources.append((candidates[item["source_id"]], ExtractedPaper.model_validate(data)))
            elif item.get("caught"):  # the Map's Catch recorded a step that failed after its retries
                caught.append(
                    audit_event(
                        "EXTRACTING", "SOURCE_STEP_FAILED", f"{item.get('url')}: {item.get('failure_reason')}"
                    )
                )
        budget_reason = self._over_budget(team_id, job_id, "synthesize", "synthesis", sources=len(sources))
        if budget_reason is None:
            result = self.run(
                synthesize(
                    plan,
                    sources,
                    provider=self.llm(),
                    llm_budget_seconds=self.settings.synthesis_llm_budget_seconds,
                )
            )
        else:  # skipped: an empty synthesis that says why
            result = self.run(synthesize(plan, [], provider=None))
            result.refusal_reason = f"Synthesis skipped: {budget_reason}"
        key = f"payloads/{team_id}/{job_id}/synthesis.json"
        put_json(self.data, key, result.to_dict())
        kept = sum(1 for claim in result.claims if claim.kept)
        self.jobs.update(
            team_id,
            job_id,
            append={
                "audit": [
                    *caught,
                    audit_event(
                        "SYNTHESIZING",
                        "SYNTHESIS_REFUSED" if result.refusal else "SYNTHESIS_WRITTEN",
                        result.refusal_reason
                        or f"{len(result.primary_themes)} themes, {kept} verified claims, writer {result.writer}",
                    ),
                    *[audit_event("SYNTHESIZING", "NOTE", note) for note in result.notes],
                ],
                "actions": [
                    f"Synthesised {len(result.primary_themes)} themes from {len(result.evidence)} evidence quotes"
                ],
            },
            once="synthesize",
        )
        self._trace(
            team_id,
            job_id,
            WRITER,
            "write",
            "draft_written",
            writer=result.writer,
            themes=result.primary_themes,
            claims=len(result.claims),
        )
        self._trace(
            team_id,
            job_id,
            VERIFIER,
            "verify",
            "verification_completed",
            verdicts={claim.claim_id: claim.verdict for claim in result.claims},
            removed=[claim.claim_id for claim in result.claims if not claim.kept],
        )
        self._trace(
            team_id,
            job_id,
            RED_TEAM,
            "critique",
            "redteam_completed",
            flags=result.red_team.get("flags", []),
            force_refusal=result.red_team.get("force_refusal", False),
        )
        return {"synthesis_key": key, "refused": result.refusal, "confidence_score": result.confidence_score}

    # --- Finalize ---------------------------------------------------------------------------------

    def finalize(self, event: dict[str, Any]) -> dict[str, Any]:
        job_id = str(event["job_id"])
        team_id = self._team(event)
        job = self._job(team_id, job_id)
        synthesis = get_json(self.data, event["synthesis"]["synthesis_key"]) or {}
        screening, candidates = self._screened(job)
        searches = list(event.get("search_results") or [])
        extractions = list(event.get("extractions") or [])
        by_source = {item["source_id"]: item for item in extractions if item.get("source_id")}
        selected = [candidates[i] for i in screening.get("selected", []) if i in candidates]
        budget_skipped = set(screening.get("budget_skipped") or [])
        failed_sources = [item for item in extractions if not item.get("success")]
        upstream_failed = upstream_failures(searches)
        failed_connectors = sorted(upstream_failed)
        not_run = not_run_counts(searches)
        # PARTIAL: coverage was really lost. An upstream answered errors, a concept of the goal found
        # nothing from any connector, or a source failed in a way a retry might mend. Queries that waited
        # past the job's search time for their turn are reported (not run), not counted as failures; a
        # source with no open full text (paywalled, gone) is reported per source.
        interrupted = [item for item in failed_sources if not item.get("unavailable")]
        uncovered = uncovered_concepts(job["plan"].get("key_phrases") or [], searches)
        partial_reasons = [
            *(f"{name} answered errors: {reason}" for name, reason in sorted(upstream_failed.items())),
            *(f"no results for '{concept}' from any connector" for concept in uncovered),
            *(
                [
                    f"{len(interrupted)} source(s) could not be extracted: {interrupted[0].get('failure_reason')}"
                ]
                if interrupted
                else []
            ),
        ]
        if synthesis.get("refusal"):
            status = JobStatus.REFUSED
        elif partial_reasons:
            status = JobStatus.PARTIAL
        else:
            status = JobStatus.COMPLETED
        budget_decisions = _budget_decisions(job)
        if budget_decisions:  # work was skipped for the budget: never COMPLETED, nor a plain refusal
            status = JobStatus.PARTIAL
            partial_reasons.append("stopped at its cost budget")
        bib, keys = outputs.bibtex_entries(selected)
        outputs.validate_bibtex(bib, len(selected))
        files = {
            "report.md": outputs.report_markdown(synthesis, selected, keys, status.value),
            "bibliography.bib": bib,
            "annotated_bibliography.md": outputs.annotated_bibliography(
                selected, keys, by_source, synthesis.get("evidence", [])
            ),
            "quote_library.json": outputs.to_json(
                outputs.quote_library(selected, synthesis.get("evidence", []))
            ),
            "search_report.md": outputs.search_report(
                job["plan"], searches, screening, extractions, list(job.get("decisions") or [])
            ),
        }
        prefix = artifact_prefix(team_id, job_id)
        artifact_keys = {name: prefix + name for name in files}
        for name, body in files.items():
            self.artifacts.put_bytes(artifact_keys[name], body.encode("utf-8"), ARTIFACT_NAMES[name])
        kept_claims = [c for c in synthesis.get("claims", []) if c.get("kept")]
        cited_ids = {i for c in kept_claims for i in c["evidence_ids"]}
        results = {
            "job_id": job_id,
            "status": status.value,
            "synthesis": {
                name: synthesis.get(name)
                for name in (
                    "research_goal",
                    "executive_summary",
                    "synthesis_text",
                    "primary_themes",
                    "gaps_identified",
                    "sources_analyzed",
                    "methodologies_found",
                )
            },
            "execution_summary": {
                "total_sources_discovered": int(screening.get("validated", 0)),
                "search_hits": int(job.get("hits_found", 0)),
                "sources_validated": int(screening.get("passed", 0)),
                "sources_selected": len(selected),
                "extractions_successful": sum(1 for item in extractions if item.get("success")),
                "extractions_failed": len(failed_sources),
                "queries_executed": len(searches) - sum(not_run.values()),
                "failed_connectors": failed_connectors,
                "queries_not_run": {
                    name: f"{count} not run: {name}'s rate budget" for name, count in sorted(not_run.items())
                },
                "partial_reasons": partial_reasons if status is JobStatus.PARTIAL else [],
                "search_stats": {
                    "requests_planned": len(searches),
                    "cache_hits": int(job.get("search_cache_hits", 0)),
                    "coalesced": int(job.get("search_coalesced", 0)),
                },
            },
            "sources": [
                {
                    "source_id": c.source_id,
                    "citation_key": keys[c.source_id],
                    "title": c.paper.title,
                    "authors": c.paper.authors,
                    "year": c.paper.year,
                    "venue": c.paper.venue,
                    "doi": c.paper.doi,
                    "url": c.paper.url,
                    "found_by": c.paper.found_by or [c.paper.source],
                    "scores": c.scores,
                    "score_explanations": c.explanations,
                    "total_score": c.total_score,
                    "extraction_success": bool(by_source.get(c.source_id, {}).get("success")),
                    "failure_reason": by_source.get(c.source_id, {}).get("failure_reason")
                    or (BUDGET_NOT_EXTRACTED if c.source_id in budget_skipped else None),
                    "cited": any(
                        e["source_id"] == c.source_id and e["evidence_id"] in cited_ids
                        for e in synthesis.get("evidence", [])
                    ),
                }
                for c in selected
            ],
            "evidence": synthesis.get("evidence", []),
            "claims": synthesis.get("claims", []),
            "methodologies": synthesis.get("methodologies", {}),
            "confidence_score": synthesis.get("confidence_score", 0.0),
            "confidence_rationale": synthesis.get("confidence_rationale"),
            "refusal": bool(synthesis.get("refusal")),
            "refusal_reason": synthesis.get("refusal_reason"),
            "writer": synthesis.get("writer"),
            "artifact_keys": artifact_keys,
        }
        self._living_review_changes(team_id, job, results, candidates)
        self.artifacts.put_bytes(
            results_key(team_id, job_id), outputs.to_json(results).encode("utf-8"), "application/json"
        )
        finished = audit_event("FINALIZING", "JOB_FINISHED", f"status {status.value}")
        # Before the status moves: a client that sees the job finished finds its whole trace.
        self._trace(
            team_id,
            job_id,
            DECISION,
            "refuse" if synthesis.get("refusal") else "finalize",
            "decision",
            status=status.value,
            refusal=bool(synthesis.get("refusal")),
            reason=synthesis.get("refusal_reason"),
            confidence=synthesis.get("confidence_score", 0.0),
        )
        moved = self.jobs.update(
            team_id,
            job_id,
            status=status,
            set_fields={
                "results_key": results_key(team_id, job_id),
                "artifacts": artifact_keys,
                "confidence_score": float(synthesis.get("confidence_score", 0.0)),
                "refusal_reason": synthesis.get("refusal_reason"),
                "partial_reasons": partial_reasons if status is JobStatus.PARTIAL else [],
                "finished_at": utc_now(),
                "updated_at": utc_now(),
            },
            append={
                "audit": [finished],
                "actions": [f"Wrote {len(files)} report artifacts"],
                "decisions": budget_decisions,
            },
        )
        if moved:
            record_metric("orchestrate", "JobsFinished", 1, status=status.value)
            self.events.publish(
                "ResearchJobCompleted",
                {
                    "job_id": job_id,
                    "team_id": team_id,
                    "status": status.value,
                    "research_goal": job.get("research_goal"),
                    "confidence_score": synthesis.get("confidence_score", 0.0),
                    "refusal": bool(synthesis.get("refusal")),
                    "artifacts": {name: self.artifact_uri(key) for name, key in artifact_keys.items()},
                    "results_key": results_key(team_id, job_id),
                },
            )
            self._announce_finished(team_id, job, status.value, results=results)
        return {"job_id": job_id, "status": status.value, "moved": moved}

    # --- Failure ----------------------------------------------------------------------------------

    def fail(self, event: dict[str, Any]) -> dict[str, Any]:
        state = event.get("state") or {}
        job_id = str(
            state.get("job_id") or (state.get("input") or {}).get("job_id") or event.get("execution_name")
        )
        team_id = self._team(state if state.get("team_id") else state.get("input") or {})
        reason = _error_reason(state.get("error"))
        existing = self.jobs.get(team_id, job_id)
        if existing is not None and (state.get("error") or {}).get("Error") == "CheckpointAborted":
            reason = f"CheckpointAborted: {existing.get('checkpoint_reason') or 'aborted by the reviewer'}"
        if existing is None:
            try:
                request = _request_in(state)
                source = str(state.get("source") or "schedule")
                self.jobs.create(
                    self.new_job_record(team_id, job_id, request, source, state.get("schedule_id"))
                )
            except ValueError:
                self.jobs.create(self.new_job_record(team_id, job_id, _placeholder_request(), "schedule"))
        self._trace(team_id, job_id, DECISION, "refuse", "job_failed", reason=reason)
        moved = self.jobs.update(
            team_id,
            job_id,
            status=JobStatus.FAILED,
            set_fields={"failure_reason": reason, "finished_at": utc_now(), "updated_at": utc_now()},
            append={"audit": [audit_event("FAILED", "JOB_FAILED", reason)]},
        )
        if moved:
            record_metric("orchestrate", "JobsFinished", 1, status="FAILED")
            self.events.publish(
                "ResearchJobFailed",
                {"job_id": job_id, "team_id": team_id, "status": "FAILED", "reason": reason},
            )
            failed_job = self.jobs.get(team_id, job_id) or {"job_id": job_id}
            self._announce_finished(team_id, failed_job, "FAILED", failure_reason=reason)
        return {"job_id": job_id, "status": "FAILED", "reason": reason, "moved": moved}

    # --- Budgets (functions/metering) --------------------------------------------------------------

    def _over_budget(self, team_id: str, job_id: str, unit: Unit, what: str, sources: int = 0) -> str | None:
        """None when the job's and the team's budgets allow the next unit (its estimate is reserved), else
        why not: the unit is then skipped, counted on the job record (as done, for progress) and audited.
        A budget check that fails lets the unit run (metering never fails a job)."""
        gate = self.budget()
        if gate is None:
            return None
        try:
            refusal = gate.admit(
                team_id, job_id, unit, sources=sources, pending=self._pending_units(team_id, job_id, unit)
            )
        except Exception:
            logger.warning("budget check failed; the unit runs", job_id=job_id, unit=unit, exc_info=True)
            return None
        if refusal is None:
            return None
        counters, phase = _BUDGET_SKIPS[unit]
        self.jobs.update(
            team_id,
            job_id,
            add_counters=counters,
            set_fields={"budget_reason": refusal.reason},
            append={"audit": [audit_event(phase, "BUDGET_SKIPPED", f"{what}: {refusal.reason}")]},
        )
        return refusal.reason

    def _pending_units(self, team_id: str, job_id: str, unit: Unit) -> int:
        """How many units of the same Map come after this one (they run even when the budget refuses).
        A search unit is a Search iteration, which runs the job's queries together: none come after."""
        if unit in ("synthesize", "search"):
            return 0
        job = self.jobs.get(team_id, job_id) or {}
        total, done = (
            ("queries_total", "queries_done") if unit == "search" else ("extract_total", "extract_done")
        )
        return max(0, int(job.get(total, 0)) - int(job.get(done, 0)) - 1)

    def _affordable(self, team_id: str, job_id: str, selected: list[Candidate]) -> list[Candidate]:
        """The selected sources the job's budget can start extracting (each Map iteration costs, even
        one the budget then refuses); the rest are skipped for the budget like refused extractions."""
        gate = self.budget()
        if gate is None or not selected:
            return selected
        try:
            affordable = gate.affordable_extractions(team_id, job_id, len(selected))
        except Exception:
            logger.warning("budget check failed; every source is extracted", job_id=job_id, exc_info=True)
            return selected
        skipped = len(selected) - affordable
        if skipped > 0:
            reason = (
                f"the budget cannot pay for extracting more than {affordable} of the {len(selected)} selected "
                "sources (each extraction costs at least its invocation, even one the budget then refuses)"
            )
            self.jobs.update(
                team_id,
                job_id,
                add_counters={"budget_skipped_sources": skipped},
                set_fields={"budget_reason": reason},
                append={"audit": [audit_event("EXTRACTING", "BUDGET_SKIPPED", reason)]},
                once="screen:budget",
            )
        return selected[:affordable]

    def _hold_budget(self, team_id: str, job_id: str, record: dict[str, Any]) -> None:
        """A fired schedule's job holds its share of the team's month as a submitted one does; one that
        cannot afford its quote's low figure raises BudgetExceeded. A hold that fails otherwise lets the
        job run (metering never fails a job)."""
        from functions.metering.budget import BudgetExceeded

        gate = self.budget()
        estimate = json.loads(record["execute_response"]).get("cost_estimate")
        if gate is None or estimate is None:
            return
        try:
            gate.hold(team_id, job_id, estimate)
        except BudgetExceeded:
            raise
        except Exception:
            logger.warning("budget hold failed; the job runs", job_id=job_id, exc_info=True)

    @staticmethod
    def _team(state: dict[str, Any]) -> str:
        """The job's team, carried by the state machine next to the job id. Executions started before
        jobs had teams carry none: they belong to the default team."""
        return checked_team(str(state.get("team_id") or DEFAULT_TEAM))

    def _job(self, team_id: str, job_id: str) -> dict[str, Any]:
        job = self.jobs.get(team_id, job_id)
        if job is None:
            raise NotFound(f"job {job_id} not found")
        return job

    # --- Living reviews and webhooks (helper C: functions/schedules/living.py, functions/webhooks) --

    def _living_review_changes(
        self, team_id: str, job: dict[str, Any], results: dict[str, Any], candidates: dict[str, Candidate]
    ) -> None:
        """A scheduled run's results carry `changes_since_last_run` (and each source `is_retracted`).
        Never fails the job: without a digest the results are still whole."""
        if not job.get("schedule_id"):
            return
        try:
            review = self.living_review()
            if review is not None:
                results["changes_since_last_run"] = review.changes(team_id, job, results, candidates)
        except Exception:
            logger.warning("changes since the last run not computed", job_id=job.get("job_id"), exc_info=True)

    def _announce_finished(
        self,
        team_id: str,
        job: dict[str, Any],
        status: str,
        *,
        results: dict[str, Any] | None = None,
        failure_reason: str | None = None,
    ) -> None:
        """After the job's final status is recorded: a scheduled run becomes its schedule's last run and
        publishes ResearchDigestReady; then the job's webhook is delivered (retried within its own
        budget). Nothing here can change the job's outcome: failures are logged."""
        job_id = str(job.get("job_id"))
        digest = None
        if results is not None and job.get("schedule_id"):
            try:
                review = self.living_review()
                if review is not None:
                    key = results_key(team_id, job_id)
                    digest = review.finished(team_id, job, results, key, self.events.publish)
            except Exception:
                logger.warning("living review not recorded", job_id=job_id, exc_info=True)
        try:
            notifier = self.webhooks() if job.get("callback_url") else None
            if notifier is not None:
                notifier.job_finished(
                    team_id, job, status, results=results, failure_reason=failure_reason, digest=digest
                )
        except Exception:
            logger.warning("webhook not delivered", job_id=job_id, exc_info=True)


BUDGET_NOT_EXTRACTED = "not extracted: the budget was reached"
_BUDGET_SKIPS: dict[str, tuple[dict[str, int], str]] = {
    "search": ({"budget_skipped_queries": 1, "queries_done": 1}, "SEARCHING"),
    "extract": ({"budget_skipped_sources": 1, "extract_done": 1}, "EXTRACTING"),
    "synthesize": ({"budget_skipped_synthesis": 1}, "SYNTHESIZING"),
}


def _budget_decisions(job: dict[str, Any]) -> list[dict[str, str]]:
    """The BUDGET_REACHED decision of a job that skipped work for its budget (none otherwise)."""
    queries = int(job.get("budget_skipped_queries", 0))
    sources = int(job.get("budget_skipped_sources", 0))
    synthesis = int(job.get("budget_skipped_synthesis", 0))
    if not (queries or sources or synthesis):
        return []
    skipped = [
        *([f"{queries} search quer{'y' if queries == 1 else 'ies'} not run"] if queries else []),
        *([f"{sources} source{'' if sources == 1 else 's'} not extracted"] if sources else []),
        *(["synthesis skipped"] if synthesis else []),
    ]
    return [
        decision(
            BUDGET_REACHED,
            str(job.get("budget_reason") or "the budget was reached"),
            f"Skipped: {', '.join(skipped)}; finished PARTIAL with the work done within the budget",
        )
    ]


def _placeholder_request() -> ExecuteRequest:
    """Only for recording a FAILED job whose scheduled input was not even a valid request."""
    return ExecuteRequest(research_goal="(invalid scheduled research goal)")
