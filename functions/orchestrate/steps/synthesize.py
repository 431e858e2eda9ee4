"""Synthesize: the cited synthesis of the extracted sources (functions/research/job/synthesis.py), stored for
Finalize; an empty one that says why when the budget refuses it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from functions.common.llm import LlmProvider, provider_from_settings
from functions.common.models import ExtractedPaper
from functions.metering.meter import metered_llm
from functions.orchestrate.contracts import SynthesizeInput, SynthesizeOutput
from functions.orchestrate.payloads import SYNTHESIS, load, payload_key, screened, store
from functions.orchestrate.steps.adapter import step_handler
from functions.orchestrate.steps.base import BudgetedStep
from functions.orchestrate.steps.deployed import deployed_adapters
from functions.research.job.inputs import Extraction
from functions.research.job.synthesis import synthesize
from functions.research.retrieval.screening import Candidate


@dataclass(kw_only=True)
class Synthesize(BudgetedStep):
    llm: Callable[[], LlmProvider | None] = field(default=lambda: None)

    def __call__(self, request: SynthesizeInput) -> SynthesizeOutput:
        progress = self.progress(request.team, request.job_id)
        job = progress.job()
        progress.synthesising()
        sources = self._sources(request.extractions, screened(self.data, job).by_id())
        # sources whose step the Map's Catch recorded after its retries
        caught = [(str(item.url), str(item.failure_reason)) for item in request.extractions if item.caught]
        refused = self.budget.refusal(progress.team_id, progress.job_id, "synthesize", sources=len(sources))
        if refused is None:
            result = asyncio.run(
                synthesize(
                    job.research_plan,
                    sources,
                    provider=self.llm(),
                    llm_budget_seconds=self.settings.synthesis_llm_budget_seconds,
                    trace=progress.trace_recorder,
                    struck_evidence=frozenset(job.struck_evidence),
                )
            )
        else:  # skipped: an empty synthesis that says why
            progress.budget_skipped("synthesize", "synthesis", refused)
            result = asyncio.run(
                synthesize(job.research_plan, [], provider=None, trace=progress.trace_recorder)
            )
            result.refusal_reason = f"Synthesis skipped: {refused}"
        key = payload_key(progress.team_id, progress.job_id, SYNTHESIS)
        store(self.data, key, result)
        progress.synthesised(result, caught)
        return SynthesizeOutput(
            synthesis_key=key, refused=result.refusal, confidence_score=result.confidence_score
        )

    def _sources(
        self, extractions: list[Extraction], candidates: dict[str, Candidate]
    ) -> list[tuple[Candidate, ExtractedPaper]]:
        """The screened candidates whose extraction succeeded, with their stored papers."""
        sources: list[tuple[Candidate, ExtractedPaper]] = []
        for item in extractions:
            if item.success and item.parsed_key and item.source_id in candidates:
                paper = load(self.data, item.parsed_key, ExtractedPaper)
                if paper is not None:
                    sources.append((candidates[item.source_id], paper))
        return sources


def build() -> Synthesize:
    return Synthesize(llm=lambda: metered_llm(provider_from_settings()), **deployed_adapters())


handler = step_handler("synthesize", SynthesizeInput, build)
