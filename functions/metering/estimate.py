"""Cost before the work: a quote from the job's plan, and the cost of the next unit of a running job.

Both use the price table of recorded costs (prices.py) and a profile of what each step of the workflow
uses: its Lambda duration (a low and a high figure, per step), the S3 and DynamoDB requests and state
transitions it makes (counted on the embedded runtime, see docs/usage.md), and, for the synthesis, the
LLM tokens its writer and judge spend. Durations are those of real upstreams (scholarly APIs answering
in about a second, PDFs downloading in one to four), as `bench/job_cost.py` measures them.

The quote's range spans what the plan leaves open: low is every planned query once, the plan's target
number of sources extracted, quick steps and a short synthesis; high adds the one refinement round
(as many queries again and a second screening), slow steps and the longest synthesis.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from functions.metering.prices import PriceTable
from functions.metering.usage import STEP_TRANSITIONS, Quantities, billed_gb_seconds, step_memory_mb

Unit = Literal["search", "extract", "synthesize"]
UNITS: tuple[Unit, ...] = ("search", "extract", "synthesize")


@dataclass(frozen=True)
class StepProfile:
    seconds_low: float
    seconds_high: float
    s3_tier1_requests: float = 0.0
    s3_tier2_requests: float = 0.0
    dynamodb_write_requests: float = 0.0
    dynamodb_read_requests: float = 0.0


# Per invocation. Requests: counted on the embedded runtime for a comprehensive job (the step's own
# boto3 calls, its budget check included; the synthesis reads one extracted paper per source). Durations:
# see the module docstring; the extraction waits for its PDF and for the metadata lookups.
STEP_PROFILES: Mapping[str, StepProfile] = {
    "plan": StepProfile(0.2, 0.8, 0, 0, 5, 2),
    # one Search iteration: its queries' results stored (one S3 put each) and recorded; at most the
    # iteration's 26 s when its queries wait for their turns at the providers
    "search": StepProfile(2.0, 26.0, 8, 0, 16, 4),
    "screen": StepProfile(0.5, 2.5, 1, 6, 4, 1),
    "extract": StepProfile(2.5, 4.5, 5, 2, 5, 3),
    "synthesize": StepProfile(0.3, 1.5, 1, 31, 8, 2),
    "finalize": StepProfile(0.3, 1.0, 6, 2, 3, 1),
}
# A unit the budget refused still runs as a Map iteration: its invocation, transition, budget check
# (ledger and job read) and the job record's update are billed.
SKIPPED_PROFILE = StepProfile(0.1, 0.6, 0, 0, 1, 2)
# Search iterations of a job: one when every query has its turn at once; up to the plan's search time in
# 26 s iterations and a refinement round (docs/workflow.md, "Searching under the upstreams' limits").
SEARCH_ITERATIONS = (1, 3)
# What the synthesis's LLM writer reads and writes (functions/research/job/synthesis.py: at most 60 evidence
# quotes, 400 answer tokens) and its judge (at most 8 calls of a few hundred tokens); the LLM's own time
# is Lambda time of the synthesis step, waiting.
EVIDENCE_PER_SOURCE = 2
MAX_LLM_EVIDENCE = 60
TOKENS_PER_EVIDENCE = (45, 70)
PROMPT_OVERHEAD_TOKENS = 300
ANSWER_TOKENS = (250, 400)
JUDGE_CALLS = (0, 8)
JUDGE_TOKENS_IN, JUDGE_TOKENS_OUT = 250, 20
LLM_SECONDS = (5.0, 20.0)


@dataclass(frozen=True)
class LlmTokens:
    tokens_in: int = 0
    tokens_out: int = 0


class CostModel:
    """Prices of steps, units and whole jobs from the price table and the step profiles."""

    def __init__(
        self,
        prices: PriceTable,
        *,
        llm_configured: bool,
        profiles: Mapping[str, StepProfile] = STEP_PROFILES,
    ) -> None:
        self.prices = prices
        self.llm_configured = llm_configured
        self.profiles = profiles

    # --- one step --------------------------------------------------------------------------------

    def synthesis_tokens(self, sources: int, *, high: bool) -> LlmTokens:
        if not self.llm_configured or sources <= 0:
            return LlmTokens()
        index = 1 if high else 0
        evidence = min(MAX_LLM_EVIDENCE, sources * EVIDENCE_PER_SOURCE)
        judges = JUDGE_CALLS[index]
        return LlmTokens(
            tokens_in=PROMPT_OVERHEAD_TOKENS
            + evidence * TOKENS_PER_EVIDENCE[index]
            + judges * JUDGE_TOKENS_IN,
            tokens_out=ANSWER_TOKENS[index] + judges * JUDGE_TOKENS_OUT,
        )

    def step_quantities(self, step: str, *, high: bool, sources: int = 0) -> Quantities:
        profile = self.profiles[step]
        seconds = profile.seconds_high if high else profile.seconds_low
        tokens = LlmTokens()
        if step == "synthesize":
            tokens = self.synthesis_tokens(sources, high=high)
            if tokens.tokens_in:
                seconds += LLM_SECONDS[1 if high else 0]
        return Quantities(
            lambda_gb_seconds=billed_gb_seconds(seconds, step_memory_mb(step)),
            lambda_requests=1,
            sfn_transitions=STEP_TRANSITIONS.get(step, 1),
            s3_tier1_requests=round(profile.s3_tier1_requests),
            s3_tier2_requests=round(profile.s3_tier2_requests),
            dynamodb_write_requests=round(profile.dynamodb_write_requests),
            dynamodb_read_requests=round(profile.dynamodb_read_requests),
            llm_tokens_in=tokens.tokens_in,
            llm_tokens_out=tokens.tokens_out,
        )

    def running_step_cost(self, step: str, seconds: float) -> float:
        """What a step costs that has run `seconds` so far: at least its high estimate."""
        quantities = self.step_quantities(step, high=True)
        quantities.lambda_gb_seconds = max(
            quantities.lambda_gb_seconds, billed_gb_seconds(seconds, step_memory_mb(step))
        )
        return quantities.cost(self.prices).total_usd

    def step_cost(self, step: str, *, high: bool, sources: int = 0) -> float:
        return self.step_quantities(step, high=high, sources=sources).cost(self.prices).total_usd

    # --- the next unit of a running job (budget checks) ------------------------------------------------

    def unit_cost(self, unit: Unit, *, sources: int = 0) -> float:
        """What the next unit may cost: its step at the high profile (a reservation must cover it)."""
        return self.step_cost(unit, high=True, sources=sources)

    def skipped_cost(self, unit: Unit) -> float:
        """What a unit costs when the budget refuses it (high profile): it still runs, to say so."""
        profile = SKIPPED_PROFILE
        quantities = Quantities(
            lambda_gb_seconds=billed_gb_seconds(profile.seconds_high, step_memory_mb(unit)),
            lambda_requests=1,
            sfn_transitions=STEP_TRANSITIONS.get(unit, 1),
            dynamodb_write_requests=round(profile.dynamodb_write_requests),
            dynamodb_read_requests=round(profile.dynamodb_read_requests),
        )
        return quantities.cost(self.prices).total_usd

    def least_job_cost(self) -> float:
        """What a job costs even when the budget refuses every unit it can (high profile): the plan, the
        search iteration saying its queries were skipped, the screening, the skipped synthesis, the
        finalisation. A `max_cost_usd` below it cannot be kept (a job's queries share their Search
        iterations, so their number does not change it)."""
        return (
            self.step_cost("plan", high=True)
            + self.skipped_cost("search")
            + self.step_cost("screen", high=True)
            + self.skipped_cost("synthesize")
            + self.step_cost("finalize", high=True)
        )

    def measured_ratio(self, counters: Mapping[str, float]) -> float:
        """How much a job's recorded steps cost (LLM tokens aside) against their high estimates, at least
        1: a job whose steps run slower than the profiles (a loaded machine, a slow upstream) reserves
        its next units and closing steps scaled by as much."""
        estimated = sum(
            count * self.step_cost(step, high=True)
            for step in self.profiles
            if (count := counters.get(f"steps_{step}", 0.0))
        )
        if estimated <= 0:
            return 1.0
        measured = counters.get("cost_usd", 0.0) - counters.get("cost_llm_usd", 0.0)
        return max(1.0, measured / estimated)

    def closing_cost(self, unit: Unit) -> float:
        """What the job still spends after the unit whatever the budget says: the finalisation, before it
        the synthesis step (even a skipped one runs) after a search or an extraction, and the screening
        after a search."""
        closing = self.step_cost("finalize", high=True)
        if unit != "synthesize":
            closing += self.step_cost("synthesize", high=True)
        if unit == "search":
            closing += self.step_cost("screen", high=True)
        return closing

    # --- a whole job (the quote) -----------------------------------------------------------------

    def quote(self, plan: Mapping[str, Any]) -> dict[str, Any]:
        """`cost_estimate` of POST /api/agent/execute for a plan (functions.research.planning.plan.ResearchPlan
        as a dict): low and high USD and the basis they were computed from."""
        queries = len(plan.get("queries") or [])
        sources = int(plan.get("target_sources") or 0)
        counts_low = {
            "plan": 1,
            "search": SEARCH_ITERATIONS[0],
            "screen": 1,
            "extract": sources,
            "synthesize": 1,
            "finalize": 1,
        }
        counts_high = {**counts_low, "search": SEARCH_ITERATIONS[1], "screen": 2}
        low, low_quantities = self._scenario(counts_low, sources, high=False)
        high, high_quantities = self._scenario(counts_high, sources, high=True)
        low_tokens = self.synthesis_tokens(sources, high=False)
        high_tokens = self.synthesis_tokens(sources, high=True)
        return {
            "low_usd": round(low, 6),
            "high_usd": round(high, 6),
            "currency": "USD",
            "basis": {
                "queries": queries,
                "refinement_queries_max": queries,
                "search_iterations": {"low": SEARCH_ITERATIONS[0], "high": SEARCH_ITERATIONS[1]},
                "target_sources": sources,
                "extractions": sources,
                "steps": {"low": counts_low, "high": counts_high},
                "llm_configured": self.llm_configured,
                "llm_tokens_in": {"low": low_tokens.tokens_in, "high": high_tokens.tokens_in},
                "llm_tokens_out": {"low": low_tokens.tokens_out, "high": high_tokens.tokens_out},
                "lambda_gb_seconds": {
                    "low": round(low_quantities.lambda_gb_seconds, 3),
                    "high": round(high_quantities.lambda_gb_seconds, 3),
                },
                "state_transitions": {
                    "low": low_quantities.sfn_transitions,
                    "high": high_quantities.sfn_transitions,
                },
                "step_seconds": {
                    step: [profile.seconds_low, profile.seconds_high]
                    for step, profile in self.profiles.items()
                },
                "step_memory_mb": {step: step_memory_mb(step) for step in self.profiles},
                "prices": {"as_of": self.prices.as_of, "region": self.prices.region},
            },
        }

    def _scenario(self, counts: Mapping[str, int], sources: int, *, high: bool) -> tuple[float, Quantities]:
        total = 0.0
        quantities = Quantities()
        for step, count in counts.items():
            step_quantities = self.step_quantities(step, high=high, sources=sources)
            total += count * step_quantities.cost(self.prices).total_usd
            for name, value in asdict(step_quantities).items():
                setattr(quantities, name, getattr(quantities, name) + count * value)
        return total, quantities
