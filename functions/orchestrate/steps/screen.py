"""Screen: de-duplicate, score and select the searches' hits (functions/research/retrieval/screening.py). Too few
good sources and turns left: one refinement round of broader queries; else the sources the budget can
extract, with the screening payload stored for Synthesize and Finalize."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import BaseModel

from functions.common.ml.embedder import default_embedder
from functions.common.models import Paper
from functions.common.settings import get_settings
from functions.common.storage import BlobStore, S3BlobStore, get_json
from functions.common.traces import DynamoDbTraceStore
from functions.metering.job_budget import JobBudget
from functions.metering.wiring import budgets
from functions.orchestrate.config import get_workflow_settings
from functions.orchestrate.contracts import ScreenInput, ScreenOutput, SelectedSource
from functions.orchestrate.payloads import SCREEN_VECTORS, SCREENING, payload_key, store
from functions.orchestrate.progress import JobProgress
from functions.orchestrate.screen_vectors import ScreenVectors, load_vectors, save_vectors
from functions.orchestrate.search_round import not_run_counts, upstream_failures
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.steps.base import JobStep
from functions.orchestrate.store import DynamoDbJobStore
from functions.orchestrate.wiring import upstream_query
from functions.research.job.inputs import QueryResult, ScreeningPayload
from functions.research.planning.job import (
    BOOLEAN_CONNECTORS,
    Renderer,
    connector_syntax,
    refined_queries,
)
from functions.research.planning.plan import JobSettings, ResearchPlan
from functions.research.retrieval.relevance import EmbeddingUnfinished, RelevanceScorer
from functions.research.retrieval.screening import Candidate, ScreeningResult, screen


@dataclass(kw_only=True)
class Screen(JobStep):
    data: BlobStore
    budget: JobBudget
    relevance_scorer: Callable[[], RelevanceScorer] = field(default=lambda: RelevanceScorer(None))
    render: Renderer = connector_syntax
    embedding_rounds: int = 8  # iterations that may embed; the last scores what is left lexically

    def __call__(self, request: ScreenInput) -> ScreenOutput:
        progress = self.progress(request.team, request.job_id)
        job = progress.job()
        plan, searches = job.research_plan, request.search_results
        turns = _refine_turns(plan, searches)
        progress.validating()
        scorer = self.relevance_scorer()
        vectors_key = payload_key(progress.team_id, progress.job_id, SCREEN_VECTORS)
        kept = load_vectors(self.data, vectors_key) if scorer.embedder is not None else ScreenVectors()
        scorer.resume(kept.vectors, finish=kept.rounds + 1 < self.embedding_rounds)
        try:
            result = screen(
                search_hits(self.data, searches),
                plan,
                current_year=datetime.now(UTC).year,
                allow_refinement=not job.refined and not job.budget_skipped_queries and any(turns.values()),
                scorer=scorer,
            )
        except EmbeddingUnfinished as unfinished:
            save_vectors(self.data, vectors_key, ScreenVectors(kept.rounds + 1, scorer.known))
            progress.screening_continues(unfinished.embedded, unfinished.wanted, kept.rounds + 1)
            return ScreenOutput(action="CONTINUE")
        if result.needs_refinement:
            if scorer.computed:  # the refined round screens these candidates again
                save_vectors(self.data, vectors_key, ScreenVectors(kept.rounds, scorer.known))
            return self._refine(progress, plan, result, turns)
        if scorer.computed and job.citation_chasing != "off":  # the Chase step screens these again
            save_vectors(self.data, vectors_key, ScreenVectors(kept.rounds, scorer.known))
        to_extract = self._affordable(progress, result.selected)
        key = self._store(progress, result, to_extract)
        progress.screened(result, plan, job.refined, key, len(to_extract), scorer.method)
        return ScreenOutput(
            action="EXTRACT",
            selected=[
                SelectedSource(source_id=c.source_id, url=c.paper.url, title=c.paper.title[:300])
                for c in to_extract
            ],
        )

    def _refine(
        self,
        progress: JobProgress,
        plan: ResearchPlan[JobSettings],
        result: ScreeningResult,
        turns: dict[str, int],
    ) -> ScreenOutput:
        queries = refined_queries(
            plan,
            [c.paper.title for c in result.selected],
            connectors=_connectors(plan),
            render=self.render,
            turns=turns,
        )
        progress.refining(
            result, plan, variants=len({tuple(q.terms) for q in queries}), requests=len(queries)
        )
        return ScreenOutput(action="REFINE", refined_queries=queries)

    def _affordable(self, progress: JobProgress, selected: list[Candidate]) -> list[Candidate]:
        """The selected sources the job's budget can start extracting; the rest are skipped for it."""
        affordable = self.budget.affordable_extractions(progress.team_id, progress.job_id, len(selected))
        skipped = len(selected) - affordable
        if skipped > 0:
            reason = (
                f"the budget cannot pay for extracting more than {affordable} of the {len(selected)} selected "
                "sources (each extraction costs at least its invocation, even one the budget then refuses)"
            )
            progress.extractions_skipped_for_budget(skipped, reason)
        return selected[:affordable]

    def _store(self, progress: JobProgress, result: ScreeningResult, to_extract: list[Candidate]) -> str:
        key = payload_key(progress.team_id, progress.job_id, SCREENING)
        store(
            self.data,
            key,
            ScreeningPayload(
                candidates=result.candidates,
                selected=[c.source_id for c in result.selected],
                budget_skipped=[c.source_id for c in result.selected[len(to_extract) :]],
                discovered=result.discovered,
                duplicates=result.duplicates,
                validated=len(result.candidates),
                passed=result.passed,
                rejection_counts=result.rejection_counts,
            ),
        )
        return key


def search_hits(data: BlobStore, results: list[QueryResult]) -> list[tuple[str, Paper]]:
    """Every hit of the searches' results, with its query's id."""
    return [
        (result.query_id, Paper.model_validate(item))
        for result in results
        if result.key
        for item in get_json(data, result.key) or []
    ]


def _connectors(plan: ResearchPlan[JobSettings]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(q.connector for q in plan.settings.queries))


def _refine_turns(plan: ResearchPlan[JobSettings], searches: list[QueryResult]) -> dict[str, int]:
    """Refinement queries each connector may still be sent: one, except where the plan's own queries did
    not all run (its rate budget is spent), where it failed, and on a boolean engine (arXiv), whose one
    query already ORed every concept and whose turns are the scarcest."""
    not_run = not_run_counts(searches)
    failed = upstream_failures(searches)
    return {
        name: 0 if name in not_run or name in failed or name in BOOLEAN_CONNECTORS else 1
        for name in _connectors(plan)
    }


def build() -> Screen:
    return Screen(
        jobs=DynamoDbJobStore(),
        data=S3BlobStore(get_settings().data_bucket),
        budget=JobBudget(budgets()),
        relevance_scorer=lambda: RelevanceScorer(
            default_embedder(), embed_seconds=get_workflow_settings().screen_embedding_seconds
        ),
        embedding_rounds=get_workflow_settings().screen_embedding_rounds,
        render=upstream_query,
        traces=DynamoDbTraceStore(),
    )


def _not_continued(output: BaseModel) -> bool:
    """A CONTINUE is not kept: the next iteration has the same payload and goes on from the kept vectors."""
    return not (isinstance(output, ScreenOutput) and output.action == "CONTINUE")


handler = step_handler("screen", ScreenInput, build, keeps=_not_continued)
