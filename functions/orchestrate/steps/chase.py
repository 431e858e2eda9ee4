"""Chase: citation chasing after screening (functions/research/retrieval/chasing.py). The best selected sources
(or those a reviewer chose at the screening checkpoint) are the seeds; their references and the works
citing them come from the providers' citation graphs (functions/search/citations.py), are screened with
the searches' hits, and those selected join the sources to extract. A job that does not chase passes its
selection through unchanged."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from functions.common.ml.embedder import default_embedder
from functions.common.models import Paper
from functions.orchestrate.contracts import ChaseInput, ChaseOutput, SelectedSource
from functions.orchestrate.models import JobRecord
from functions.orchestrate.payloads import SCREEN_VECTORS, payload_key, screened, store
from functions.orchestrate.progress import JobProgress, record_chasing
from functions.orchestrate.screen_vectors import load_vectors
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.steps.base import BudgetedStep
from functions.orchestrate.steps.deployed import deployed_adapters
from functions.orchestrate.steps.screen import search_hits
from functions.orchestrate.wiring import shared_search_service
from functions.research.job.inputs import ScreeningPayload
from functions.research.retrieval.chasing import (
    CHASED_PER_SEED,
    DIRECTIONS,
    ChasingRecord,
    SeedOutcome,
    chase_query_id,
    joined_screening,
    rejection_counts,
    seed_count,
)
from functions.research.retrieval.relevance import RelevanceScorer
from functions.research.retrieval.screening import Candidate, screen

if TYPE_CHECKING:
    from functions.search.citations import ChaseOutcome, CitationGraph, Seed

# rejections given after every policy passed (the depth's cut, the venue cap)
PASSED_POLICIES = (None, "beyond_depth_limit", "diversity_cap")


def default_citation_graph() -> CitationGraph:
    # the connectors (and the HTTP client under them) are imported where the step first chases
    from functions.search.citations import CitationGraph

    service = shared_search_service()
    return CitationGraph.of(service.connectors, service.cache, service.search_settings.cache_ttl_seconds)


@dataclass(kw_only=True)
class Chase(BudgetedStep):
    graph: Callable[[], CitationGraph] = field(default=default_citation_graph)
    relevance_scorer: Callable[[], RelevanceScorer] = field(default=lambda: RelevanceScorer(None))

    def __call__(self, request: ChaseInput) -> ChaseOutput:
        progress = self.progress(request.team, request.job_id)
        job = progress.job()
        mode = job.citation_chasing
        if mode == "off" or not request.selected or not job.screening_key:
            return ChaseOutput(selected=request.selected)
        screening = screened(self.data, job)
        if screening.chasing is not None:  # a retry of a step that chased and stored its screening
            known = {s.source_id for s in request.selected}
            again = [screening.by_id()[i] for i in screening.chasing.selected if i not in known]
            return ChaseOutput(selected=[*request.selected, *(_selected(c) for c in again)])
        seeds = self._seeds(screening, request.selected, job.depth)
        record = ChasingRecord(mode=mode, seeds=[seed.seed_id for seed in seeds])
        refusal = self.budget.refusal(progress.team_id, progress.job_id, "search")
        if refusal is not None:
            progress.budget_skipped("search", "citation chasing", refusal)
            record.skipped_reason = refusal
            store(self.data, job.screening_key, screening.model_copy(update={"chasing": record}))
            return ChaseOutput(selected=request.selected)
        outcome = asyncio.run(
            self.graph().chase(
                seeds,
                DIRECTIONS[mode],
                limits=CHASED_PER_SEED,
                team_id=progress.team_id,
                job_id=progress.job_id,
                deadline=time.time() + self.settings.chase_seconds,
            )
        )
        chosen = self._screen(progress, job, request, screening, outcome, record)
        selected = [*request.selected, *(_selected(c) for c in chosen)]
        record_chasing(progress, record, len(selected))
        return ChaseOutput(selected=selected)

    def _seeds(self, screening: ScreeningPayload, selected: list[SelectedSource], depth: str) -> list[Seed]:
        """The reviewer's seeds, else the best `seed_count(depth)` selected sources (the selection's order)."""
        from functions.search.citations import Seed

        by_id = screening.by_id()
        chosen = screening.chase_seeds or [s.source_id for s in selected][: seed_count(depth)]
        return [
            Seed(source_id, by_id[source_id].paper.doi, by_id[source_id].paper.arxiv_id)
            for source_id in chosen
            if source_id in by_id
        ]

    def _screen(
        self,
        progress: JobProgress,
        job: JobRecord,
        request: ChaseInput,
        screening: ScreeningPayload,
        outcome: ChaseOutcome,
        record: ChasingRecord,
    ) -> list[Candidate]:
        """Screens the chased works with every search hit; stores the joined screening and `record`, and
        returns the chased sources selected."""
        chased = [
            (
                chase_query_id(chase.direction, chase.seed.seed_id, chase.connector),
                Paper.model_validate(paper),
            )
            for chase in outcome.chases
            if chase.connector is not None
            for paper in chase.papers
        ]
        scorer = self.relevance_scorer()
        if scorer.embedder is not None:
            kept = load_vectors(self.data, payload_key(progress.team_id, progress.job_id, SCREEN_VECTORS))
            scorer.resume(kept.vectors, finish=False)
        union = screen(
            [*search_hits(self.data, request.search_results), *chased],
            job.research_plan,
            current_year=datetime.now(UTC).year,
            allow_refinement=False,
            scorer=scorer,
        )
        selection = [s.source_id for s in request.selected]
        affordable = self.budget.affordable_extractions(
            progress.team_id, progress.job_id, len(union.selected)
        )
        new, chosen = joined_screening(screening.candidates, selection, union, affordable)
        _record_outcome(record, outcome, len(chased), new, chosen)
        candidates = [*screening.candidates, *new]
        joined = screening.model_copy(
            update={
                "candidates": candidates,
                "selected": [*selection, *record.selected],
                "discovered": screening.discovered + len(chased),
                "duplicates": screening.duplicates + len(chased) - len(new),
                "validated": len(candidates),
                "passed": screening.passed + sum(1 for c in new if c.rejection in PASSED_POLICIES),
                "rejection_counts": rejection_counts(candidates),
                "chasing": record,
            }
        )
        store(self.data, str(job.screening_key), joined)
        return chosen


def _record_outcome(
    record: ChasingRecord, outcome: ChaseOutcome, chased: int, new: list[Candidate], chosen: list[Candidate]
) -> None:
    """What each seed's chase found (or why it was not chased), the graph requests, and the counts."""
    record.outcomes = [
        SeedOutcome(
            seed=c.seed.seed_id,
            direction=c.direction,
            connector=c.connector,
            found=len(c.papers),
            not_chased_reason=None if c.connector else c.reason,
        )
        for c in outcome.chases
    ]
    record.requests = dict(sorted(outcome.requests.items()))
    record.chased_works, record.new_candidates = chased, len(new)
    record.selected = [c.source_id for c in chosen]


def _selected(candidate: Candidate) -> SelectedSource:
    return SelectedSource(
        source_id=candidate.source_id, url=candidate.paper.url, title=candidate.paper.title[:300]
    )


def build() -> Chase:
    from functions.orchestrate.config import get_workflow_settings

    return Chase(
        graph=default_citation_graph,
        relevance_scorer=lambda: RelevanceScorer(
            default_embedder(), embed_seconds=get_workflow_settings().chase_embedding_seconds
        ),
        **deployed_adapters(),
    )


handler = step_handler("chase", ChaseInput, build)
