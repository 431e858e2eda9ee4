"""Cost before the work: a quote from the job's plan, and the cost of the next unit of a running job.

Both use the price table of recorded costs (prices.py) and a profile of what each step of the workflow
uses: its Lambda duration (the mean and standard deviation of the step's measured seconds), the S3 and
DynamoDB requests and state transitions it makes (counted on the embedded runtime, see docs/usage.md),
and, for the synthesis, the LLM tokens its writer and judge spend; and the shape of a job: how many
Search iterations and screenings it runs and what share of its target sources it extracts.

Where the figures come from: `bench/quote_coverage.py --split dev --record FILE` runs real jobs on the
quality bench's dev goals (real PDFs, the real provider intervals, a simulated network) and records
every metered step; `bench/quote_coverage.py --calibrate FILE` prints the profile below from them (the
held-out goals are never used). Nothing here is tuned to a figure of the held-out run.

The quote is an 80 % interval of the job's cost. The job's cost is a sum of step costs, each linear in
the step's seconds; its mean and variance follow from the plan's structure (how many of each step, the
count's own spread) and the step profiles, plus one factor shared by every step of a job (a loaded
machine or a slow upstream makes all of them slow: `LOAD_SD`, measured as the spread of each dev job's
Lambda seconds against its expectation). The cost is skewed (it cannot fall below the fixed requests but
can run long), so it is read as a log-normal with that mean and variance: `low_usd` is its 15th and
`high_usd` its 95th percentile, so that 80 % of jobs cost inside [low, high] and 95 % less than high.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from functions.metering.prices import PriceTable
from functions.metering.usage import (
    STEP_TRANSITIONS,
    Quantities,
    billed_gb_seconds,
    step_cost_counter,
    step_memory_mb,
)

Unit = Literal["search", "extract", "synthesize"]
UNITS: tuple[Unit, ...] = ("search", "extract", "synthesize")

# Standard normal quantiles of the interval's ends, and how far past its mean a unit's reservation goes.
LOW_QUANTILE_Z = -1.0364  # 15th percentile
HIGH_QUANTILE_Z = 1.6449  # 95th percentile
STEP_HIGH_SDS = 2.0


@dataclass(frozen=True)
class StepProfile:
    seconds_mean: float
    seconds_sd: float
    s3_tier1_requests: float = 0.0
    s3_tier2_requests: float = 0.0
    dynamodb_write_requests: float = 0.0
    dynamodb_read_requests: float = 0.0

    @property
    def seconds_low(self) -> float:
        return max(0.0, self.seconds_mean - self.seconds_sd)

    @property
    def seconds_high(self) -> float:
        """What a unit reserves: its mean plus two standard deviations."""
        return self.seconds_mean + STEP_HIGH_SDS * self.seconds_sd


@dataclass(frozen=True)
class CountProfile:
    """How many of a step a job runs: none with probability `zero_share` (a goal whose search finds
    nothing to extract), else a normal count of this mean and standard deviation; and the most a job
    runs (`most`; for the extractions, the plan's target sources, which also caps the count)."""

    mean: float
    sd: float
    most: float | None = None
    zero_share: float = 0.0

    def outcomes(self, cap: float) -> list[tuple[float, float]]:
        """(weight, count) of the count clipped to [0, cap], on a fixed grid of 81 points (and zero)."""
        if self.sd <= 0:
            counts = [(1.0, min(max(self.mean, 0.0), cap))]
        else:
            grid = [index / 10 for index in range(-40, 41)]
            normal = [(math.exp(-z * z / 2), min(max(self.mean + self.sd * z, 0.0), cap)) for z in grid]
            total = sum(weight for weight, _ in normal)
            counts = [(weight / total, count) for weight, count in normal]
        if not self.zero_share:
            return counts
        return [(self.zero_share, 0.0), *((w * (1 - self.zero_share), c) for w, c in counts)]

    def capped(self, cap: float) -> tuple[float, float]:
        """The mean and standard deviation of the count when it cannot pass `cap` (nor fall below 0)."""
        outcomes = self.outcomes(cap)
        total = sum(weight for weight, _ in outcomes)
        mean = sum(weight * count for weight, count in outcomes) / total
        variance = sum(weight * (count - mean) ** 2 for weight, count in outcomes) / total
        return mean, math.sqrt(variance)


# Per invocation. Requests: counted on the embedded runtime for a comprehensive job (the step's own
# boto3 calls, its budget check included; the synthesis reads one extracted paper per source). Seconds:
# measured (see the module docstring; the extraction waits for its PDF and for the metadata lookups).
STEP_PROFILES: Mapping[str, StepProfile] = {
    "plan": StepProfile(0.242, 0.287, 0, 0, 5, 2),
    # one Search iteration: its queries' results stored (one S3 put each) and recorded; up to the
    # iteration's 26 s when its queries wait for their turns at the providers
    "search": StepProfile(4.241, 6.175, 8, 0, 16, 4),
    "screen": StepProfile(6.855, 6.216, 1, 6, 4, 1),
    "extract": StepProfile(6.657, 2.341, 5, 2, 5, 3),
    "synthesize": StepProfile(0.535, 0.443, 1, 31, 8, 2),
    "finalize": StepProfile(0.627, 0.649, 6, 2, 3, 1),
}
# A job's Search iterations together: seconds per planned query, and the spread of that (the quote
# prices the search phase from the plan's queries; a unit's reservation uses the step profile above).
SEARCH_SECONDS_PER_QUERY = 0.41
SEARCH_PHASE_SD = 0.325
# A job's steps by kind. One plan, synthesis and finalisation; Search iterations: up to the plan's
# search time in 26 s iterations and a refinement round (docs/workflow.md, "Searching under the
# upstreams' limits"); a second screening after it; extractions: as many sources as the screening
# selects, which a goal's literature decides, never more than the plan's target sources.
JOB_SHAPE: Mapping[str, CountProfile] = {
    "plan": CountProfile(1, 0, 1),
    "search": CountProfile(1.812, 0.403, 3),
    "screen": CountProfile(1.875, 0.342, 2),
    "extract": CountProfile(21.333, 15.695, zero_share=0.25),
    "synthesize": CountProfile(1, 0, 1),
    "finalize": CountProfile(1, 0, 1),
}
# The spread of the factor every step of one job shares (machine load, upstream speed).
LOAD_SD = 0.331


@dataclass(frozen=True)
class ChaseProfile:
    """What citation chasing adds to a job that chases (comprehensive and exhaustive ones by default):
    one Chase step, whose seconds grow with its seeds (each seed's references and citing works are
    graph requests that wait for the providers' turns; the works found are embedded and screened with
    the searches' hits), and the chased sources it selects, extracted beside the screening's. A job
    that does not chase, or whose screening selected nothing to chase from, runs the step only to pass
    its selection through (`passing`)."""

    seconds_fixed: float
    seconds_per_seed: float
    seconds_sd: float
    selected_per_seed: float
    selected_sd_per_seed: float
    step: StepProfile
    passing: StepProfile

    def seconds(self, seeds: int) -> float:
        return self.seconds_fixed + self.seconds_per_seed * seeds

    def selected(self, seeds: int) -> tuple[float, float]:
        """The mean and standard deviation of how many chased sources a job adds to its extractions."""
        return self.selected_per_seed * seeds, self.selected_sd_per_seed * math.sqrt(seeds)


# Graph requests a seed costs, by provider and direction (docs/measured.md, "Citation chasing"): Semantic
# Scholar one batch lookup for the seeds and one references page a seed, OpenAlex the seed and its
# citing works. The step's seconds: Semantic Scholar's requests wait their 1 s turns one after the other
# (with 0.3-1.5 s of network each), OpenAlex's go meanwhile, then the chased works are embedded and
# screened (a few seconds); its chased sources: about one a seed (the chasing bench's rapid jobs, two
# seeds: the hidden paper and one or two others). Derived from that bench and the provider intervals,
# not from the quality bench's jobs: `bench.quote_coverage --record` keeps each job's `chased_selected`
# and Chase seconds for a calibration on the dev goals.
GRAPH_REQUESTS_PER_SEED = {"semantic_scholar": 1.0, "openalex": 2.0}
CHASE_PROFILE = ChaseProfile(
    5.0,  # seconds, fixed
    2.0,  # and a seed
    4.0,  # their standard deviation
    1.0,  # chased sources selected a seed
    1.0,  # their standard deviation a seed (times the root of the seeds)
    # the joined screening stored, the search hits and kept vectors read; the job record and the budget
    step=StepProfile(0.0, 0.0, 1, 8, 3, 3),
    passing=StepProfile(0.02, 0.01, 0, 0, 0, 1),
)
# A unit the budget refused still runs as a Map iteration: its invocation, transition, budget check
# (ledger and job read) and the job record's update are billed.
SKIPPED_PROFILE = StepProfile(0.25, 0.15, 0, 0, 1, 2)
# What the synthesis's LLM writer reads and writes (functions/research/writing/report_writer.py: at most 60 evidence
# quotes, 400 answer tokens) and its judge (at most 8 calls of a few hundred tokens); the LLM's own time
# is Lambda time of the synthesis step, waiting. Ranges: read as uniform between their ends.
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


@dataclass(frozen=True)
class Moments:
    """A cost's mean and variance (USD, USD^2)."""

    mean: float = 0.0
    variance: float = 0.0

    def __add__(self, other: Moments) -> Moments:
        return Moments(self.mean + other.mean, self.variance + other.variance)

    def log_normal(self) -> tuple[float, float]:
        """(mu, sigma) of the log-normal with these moments."""
        sigma_sq = math.log1p(self.variance / self.mean**2)
        return math.log(self.mean) - sigma_sq / 2, math.sqrt(sigma_sq)


def mixture_quantile(parts: list[tuple[float, Moments]], z: float) -> float:
    """The quantile (at the standard normal's `z`) of a weighted mixture of log-normal costs."""
    target = 0.5 * math.erfc(-z / math.sqrt(2))
    laws = [(weight, *moments.log_normal()) for weight, moments in parts if moments.mean > 0]
    total = sum(weight for weight, _, _ in laws)

    def below(cost: float) -> float:
        x = math.log(cost)
        return sum(
            w * 0.5 * math.erfc(-(x - mu) / (max(sigma, 1e-9) * math.sqrt(2))) for w, mu, sigma in laws
        )

    low, high = min(m.mean for _, m in parts) / 100, max(m.mean for _, m in parts) * 100
    for _ in range(100):  # bisection on the log scale
        middle = math.sqrt(low * high)
        low, high = (middle, high) if below(middle) < target * total else (low, middle)
    return math.sqrt(low * high)


def chase_moments(prices: PriceTable, seeds: int) -> Moments:
    """The Chase step's cost: passing the selection through (`seeds` 0), or chasing `seeds` seeds."""
    chase = CHASE_PROFILE
    profile = chase.step if seeds > 0 else chase.passing
    seconds = chase.seconds(seeds) if seeds > 0 else profile.seconds_mean
    spread = chase.seconds_sd if seeds > 0 else profile.seconds_sd
    fixed = Quantities(
        lambda_requests=1,
        sfn_transitions=STEP_TRANSITIONS.get("chase", 1),
        s3_tier1_requests=round(profile.s3_tier1_requests),
        s3_tier2_requests=round(profile.s3_tier2_requests),
        dynamodb_write_requests=round(profile.dynamodb_write_requests),
        dynamodb_read_requests=round(profile.dynamodb_read_requests),
    )
    per_second = billed_gb_seconds(1.0, step_memory_mb("chase")) * prices.lambda_gb_second
    return Moments(fixed.cost(prices).total_usd + per_second * seconds, (per_second * spread) ** 2)


def chase_basis(mode: str, seeds: int) -> dict[str, Any]:
    """What the quote assumes of citation chasing: its seeds, the graph requests they cost by provider
    (backward: Semantic Scholar's references, forward: OpenAlex's citing works) and the chased sources
    it adds to the extractions on average."""
    providers = {"backward": ["semantic_scholar"], "forward": ["openalex"]}.get(
        mode, list(GRAPH_REQUESTS_PER_SEED)
    )
    requests = {
        p: round(GRAPH_REQUESTS_PER_SEED[p] * seeds + (p == "semantic_scholar"), 1) for p in providers
    }
    return {
        "mode": mode,
        "seeds": seeds,
        "graph_requests": requests if seeds else {},
        "chased_sources": round(CHASE_PROFILE.selected(seeds)[0], 2),
        "step_seconds": round(
            CHASE_PROFILE.seconds(seeds) if seeds else CHASE_PROFILE.passing.seconds_mean, 3
        ),
    }


class CostModel:
    """Prices of steps, units and whole jobs from the price table and the step profiles."""

    def __init__(
        self,
        prices: PriceTable,
        *,
        llm_configured: bool,
        profiles: Mapping[str, StepProfile] = STEP_PROFILES,
        shape: Mapping[str, CountProfile] = JOB_SHAPE,
    ) -> None:
        self.prices = prices
        self.llm_configured = llm_configured
        self.profiles = profiles
        self.shape = shape

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

    def step_quantities(
        self, step: str, *, high: bool, sources: int = 0, seconds: float | None = None
    ) -> Quantities:
        """A step's usage at its high (or low) profile, or at `seconds` of Lambda time."""
        profile = self.profiles[step]
        if seconds is None:
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

    def step_moments(self, step: str, sources: int = 0) -> Moments:
        """One invocation's cost: mean and variance from its seconds' (cost is linear in them), and
        from the LLM tokens' range when a model writes the synthesis."""
        profile = self.profiles[step]
        at_mean = self.step_quantities(step, high=False, seconds=profile.seconds_mean)
        per_second = billed_gb_seconds(1.0, step_memory_mb(step)) * self.prices.lambda_gb_second
        mean = at_mean.cost(self.prices).total_usd
        variance = (per_second * profile.seconds_sd) ** 2
        if step == "synthesize" and self.llm_configured and sources > 0:
            low, high = (
                self.step_cost(step, high=False, sources=sources),
                self.step_cost(step, high=True, sources=sources),
            )
            mean = (low + high) / 2 - self.step_cost(step, high=False) + mean
            variance += (high - low) ** 2 / 12
        return Moments(mean, variance)

    # --- the next unit of a running job (budget checks) ------------------------------------------------

    def unit_cost(self, unit: Unit, *, sources: int = 0) -> float:
        """What the next unit may cost: its step at the high profile (a reservation must cover it)."""
        return self.step_cost(unit, high=True, sources=sources)

    def unit_estimate(self, unit: Unit, counters: Mapping[str, float], *, sources: int = 0) -> float:
        """What a running job reserves for its next unit: the high profile scaled by how its steps ran
        (`measured_ratio`), or, once it recorded units of this kind, their mean cost plus the profile's
        two standard deviations when that is less (a job on fast upstreams reserves what it uses)."""
        high = self.measured_ratio(counters) * self.unit_cost(unit, sources=sources)
        done = counters.get(f"steps_{unit}", 0.0)
        spent = counters.get(step_cost_counter(unit), 0.0)
        if done <= 0 or spent <= 0:
            return high
        spread = math.sqrt(self.step_moments(unit, sources).variance)
        return min(high, spent / done + STEP_HIGH_SDS * spread)

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
        # what the same steps cost: neither a step without a profile (Chase) nor a deferred attempt
        measured = sum(counters.get(step_cost_counter(step), 0.0) for step in self.profiles)
        measured -= counters.get("cost_llm_usd", 0.0)
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

    def steps_left(
        self, counters: Mapping[str, float], planned_extractions: int, *, high: bool, selected: int | None
    ) -> dict[str, float]:
        """How many of each step a running job may still run (see `remaining_cost`)."""
        done = {step: counters.get(f"steps_{step}", 0.0) for step in self.profiles}
        if high:
            left = {step: count.most or 0.0 for step, count in self.shape.items()}
            left["extract"] = float(planned_extractions)
        else:
            left = {step: count.capped(count.most or count.mean)[0] for step, count in self.shape.items()}
            left["extract"] = self.shape["extract"].capped(planned_extractions)[0]
        if selected is not None:
            left["extract"] = float(selected)
        if done["extract"] or done["synthesize"]:
            left["search"], left["screen"] = done["search"], done["screen"]
        if done["synthesize"]:
            left["extract"] = done["extract"]
        return {step: max(0.0, left.get(step, 0.0) - done[step]) for step in self.profiles}

    def remaining_cost(
        self,
        counters: Mapping[str, float],
        planned_extractions: int,
        *,
        high: bool = True,
        selected: int | None = None,
    ) -> float:
        """What a running job may still spend after the steps its ledger counts (`steps_<step>`): every
        step it can still run, none of a phase it has left behind (no search once it extracts, no
        extraction once it synthesizes). `high`: each step at its high profile and as many as a job
        runs (the plan's extractions); else each at its mean and as many as a job runs on average.
        `selected`: the extractions the screening started, once it has (then exactly those)."""
        left = self.steps_left(counters, planned_extractions, high=high, selected=selected)
        total = 0.0
        for step, profile in self.profiles.items():
            seconds = None if high else profile.seconds_mean
            each = self.step_quantities(step, high=high, sources=planned_extractions, seconds=seconds)
            total += left[step] * each.cost(self.prices).total_usd
        return total

    # --- a whole job (the quote) -----------------------------------------------------------------

    def job_parts(
        self, queries: int, sources: int, chase_seeds: int = 0
    ) -> tuple[list[tuple[float, Moments]], dict[str, float]]:
        """The cost of a job that plans `queries` and `sources` extractions, as a mixture over how many
        sources it extracts (weight, the cost's moments given that count), and its expected steps by
        kind. The search phase's seconds follow the plan's queries, its requests the iterations. A job
        that chases `chase_seeds` seeds runs the Chase step and extracts the chased sources it selects
        too, whenever its screening selected any source to chase from."""
        others = Moments()
        counts: dict[str, float] = {}
        lambda_others = 0.0
        for step, count in self.shape.items():
            n_mean, n_sd = count.capped(sources if step == "extract" else (count.most or count.mean))
            counts[step] = round(n_mean, 2)
            if step == "extract":
                continue
            per_second = billed_gb_seconds(1.0, step_memory_mb(step)) * self.prices.lambda_gb_second
            if step == "search":
                fixed = self.step_quantities(step, high=False, seconds=0.0).cost(self.prices).total_usd
                phase = SEARCH_SECONDS_PER_QUERY * queries * per_second
                others += Moments(
                    n_mean * fixed + phase, (n_sd * fixed) ** 2 + (SEARCH_PHASE_SD * phase) ** 2
                )
                lambda_others += phase
                continue
            one = self.step_moments(step, sources)
            others += Moments(n_mean * one.mean, n_mean * one.variance + (n_sd * one.mean) ** 2)
            lambda_others += n_mean * per_second * self.profiles[step].seconds_mean
        extract = self.step_moments("extract", sources)
        extract_seconds = billed_gb_seconds(self.profiles["extract"].seconds_mean, step_memory_mb("extract"))
        passing, chasing = chase_moments(self.prices, 0), chase_moments(self.prices, chase_seeds)
        added, added_sd = CHASE_PROFILE.selected(chase_seeds)
        chase_seconds = billed_gb_seconds(CHASE_PROFILE.seconds(chase_seeds), step_memory_mb("chase"))
        chase_lambda = (chase_seconds + added * extract_seconds) * self.prices.lambda_gb_second
        parts = []
        for weight, extracted in self.shape["extract"].outcomes(sources):
            lambda_mean = lambda_others + extracted * extract_seconds * self.prices.lambda_gb_second
            given = others + Moments(extracted * extract.mean, extracted * extract.variance)
            if chase_seeds > 0 and extracted > 0:
                chased = Moments(
                    added * extract.mean, added * extract.variance + (added_sd * extract.mean) ** 2
                )
                given, lambda_mean = given + chasing + chased, lambda_mean + chase_lambda
            else:
                given += passing
            parts.append((weight, given + Moments(0.0, (LOAD_SD * lambda_mean) ** 2)))
        counts["chase"] = 1
        if chase_seeds > 0:
            chases = sum(
                weight for weight, extracted in self.shape["extract"].outcomes(sources) if extracted > 0
            )
            counts["extract"] = round(counts["extract"] + added * chases, 2)
        return parts, counts

    def quote(self, plan: Mapping[str, Any]) -> dict[str, Any]:
        """`cost_estimate` of POST /api/agent/execute for a plan (functions.research.planning.plan.ResearchPlan
        as a dict): low and high USD (an 80 % interval) and the basis they were computed from."""
        queries = len(plan.get("queries") or [])
        sources = int(plan.get("target_sources") or 0)
        mode = str(plan.get("citation_chasing") or "off")
        seeds = int(plan.get("chase_seeds") or 0) if mode != "off" else 0
        parts, counts = self.job_parts(queries, sources, seeds)
        weights = sum(weight for weight, _ in parts)
        mean = sum(weight * moments.mean for weight, moments in parts) / weights
        variance = sum(weight * (m.variance + (m.mean - mean) ** 2) for weight, m in parts) / weights
        low = mixture_quantile(parts, LOW_QUANTILE_Z)
        high = mixture_quantile(parts, HIGH_QUANTILE_Z)
        low_tokens = self.synthesis_tokens(sources, high=False)
        high_tokens = self.synthesis_tokens(sources, high=True)
        return {
            "low_usd": round(low, 6),
            "high_usd": round(high, 6),
            "currency": "USD",
            "basis": {
                "interval": "80%: 15th to 95th percentile of the job's cost",
                "mean_usd": round(mean, 6),
                "sd_usd": round(math.sqrt(variance), 6),
                "queries": queries,
                "target_sources": sources,
                "extractions": sources,
                "expected_steps": counts,
                "steps_most": {
                    step: (sources if step == "extract" else count.most) for step, count in self.shape.items()
                },
                "chase": chase_basis(mode, seeds),
                "llm_configured": self.llm_configured,
                "llm_tokens_in": {"low": low_tokens.tokens_in, "high": high_tokens.tokens_in},
                "llm_tokens_out": {"low": low_tokens.tokens_out, "high": high_tokens.tokens_out},
                "step_seconds": {
                    step: {"mean": profile.seconds_mean, "sd": profile.seconds_sd}
                    for step, profile in self.profiles.items()
                },
                "job_load_sd": LOAD_SD,
                "search_seconds_per_query": SEARCH_SECONDS_PER_QUERY,
                "step_memory_mb": {step: step_memory_mb(step) for step in self.profiles},
                "prices": {"as_of": self.prices.as_of, "region": self.prices.region},
            },
        }


def remaining_spread(
    model: CostModel, counters: Mapping[str, float], planned_extractions: int, *, selected: int | None = None
) -> float:
    """The standard deviation of what a running job may still spend (`CostModel.remaining_cost`'s
    mean): the spread of each step left, that of the number of extractions while the screening has not
    chosen them, and the job's load factor on the Lambda time left."""
    left = model.steps_left(counters, planned_extractions, high=False, selected=selected)
    variance, lambda_left = 0.0, 0.0
    for step, profile in model.profiles.items():
        variance += left[step] * model.step_moments(step, planned_extractions).variance
        per_second = billed_gb_seconds(1.0, step_memory_mb(step)) * model.prices.lambda_gb_second
        lambda_left += left[step] * per_second * profile.seconds_mean
    undecided = (
        selected is None and not counters.get("steps_extract") and not counters.get("steps_synthesize")
    )
    if undecided and left["extract"] > 0:
        count_sd = model.shape["extract"].capped(planned_extractions)[1]
        variance += (count_sd * model.step_moments("extract", planned_extractions).mean) ** 2
    return math.sqrt(variance + (LOAD_SD * lambda_left) ** 2)
