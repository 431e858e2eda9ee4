"""Turns what a step or a request used into stored usage: the job's ledger and the team's month."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from functions.metering.budget import month_of, utc_now
from functions.metering.meter import Meter
from functions.metering.prices import PriceTable
from functions.metering.store import (
    TOTALS,
    JobLedger,
    UsageKey,
    UsageStore,
    job_dimension,
    jobs_dimension,
    route_dimension,
)
from functions.metering.usage import (
    STEP_TRANSITIONS,
    Cost,
    Quantities,
    billed_gb_seconds,
    deferral_counter,
    step_cost_counter,
)

UNKNOWN_DEPTH = "unknown"


@dataclass(frozen=True)
class StepRun:
    team_id: str
    job_id: str
    step: str
    duration_seconds: float
    memory_mb: int
    meter: Meter
    outcome: str | None = None  # the job's final status, when this step moved it there
    closes_job: bool = False  # the job's last step (Finalize, MarkFailed): its hold is settled
    deferred: bool = False  # the step handed its wait to the state machine (StepDeferred): it runs again


def meter_quantities(meter: Meter) -> Quantities:
    quantities = Quantities(llm_tokens_in=meter.llm_tokens_in, llm_tokens_out=meter.llm_tokens_out)
    for service, operation, count in meter.calls():
        quantities.add_aws_call(service, operation, count)
    return quantities


def _source_counters(meter: Meter) -> dict[str, float]:
    counters = {
        "sources_fetched": meter.sources_fetched,
        "sources_parsed": meter.sources_parsed,
        "sources_failed": meter.sources_failed,
    }
    return {name: float(value) for name, value in counters.items() if value}


def _beyond_hold(ledger: JobLedger, step_cost: float) -> float:
    """What a step of a job holding part of the month adds to the month's committed amount: the part of
    its cost past the hold (all of it once the hold is settled). The ledger is read in the same atomic
    update that added the cost, so concurrent steps each count their own part exactly once."""
    hold = 0.0 if ledger.settled else float(ledger.held_usd or 0.0)
    after = ledger.cost_usd
    before = after - step_cost
    return max(hold, after) - max(hold, before)


@dataclass
class UsageRecorder:
    store: UsageStore
    prices: PriceTable
    clock: Callable[[], datetime] = utc_now

    def step_quantities(self, run: StepRun) -> Quantities:
        quantities = meter_quantities(run.meter)
        quantities.lambda_gb_seconds = billed_gb_seconds(run.duration_seconds, run.memory_mb)
        quantities.lambda_requests = 1
        quantities.sfn_transitions = STEP_TRANSITIONS.get(run.step, 1)
        return quantities

    def record_step(self, run: StepRun) -> Cost:
        """Add the step's usage and cost to the job's ledger, the job's month item and the month's
        totals, replace the step's budget reservations by its cost, and count a finished job. The
        month's `committed_usd` grows by the cost only where the job's spending passes its hold; the
        job's last step settles the hold."""
        quantities = self.step_quantities(run)
        cost = quantities.cost(self.prices)
        month = month_of(self.clock())
        counters: dict[str, float] = {
            **quantities.to_counters(),
            **cost.to_counters(),
            **_source_counters(run.meter),
            # a deferred attempt is billed but is no step: it counts apart, outside the steps' profiles
            (deferral_counter(run.step) if run.deferred else f"steps_{run.step}"): 1,
        }
        reserved_by_month: dict[str, float] = {}
        reserved = 0.0
        for reservation in run.meter.reservations:
            reserved += reservation.usd
            if reservation.month is not None:
                reserved_by_month[reservation.month] = (
                    reserved_by_month.get(reservation.month, 0.0) + reservation.usd
                )

        ledger = self.store.charge_job(
            run.team_id,
            run.job_id,
            {
                **counters,
                "committed_usd": cost.total_usd - reserved,
                # a step's cost for its unit estimates; a deferred attempt's is in `cost_usd` only
                **({} if run.deferred else {step_cost_counter(run.step): cost.total_usd}),
            },
        )
        if cost.total_usd > ledger.max_step_usd:
            self.store.raise_max_step(run.team_id, run.job_id, cost.total_usd)
        depth = ledger.depth or UNKNOWN_DEPTH

        committed = cost.total_usd - reserved_by_month.pop(month, 0.0)
        if ledger.held_usd is not None:
            committed = _beyond_hold(ledger, cost.total_usd)
        totals = {**counters, "committed_usd": committed}
        labels = {"depth": depth}
        if run.outcome:
            totals["jobs"] = 1
            labels["outcome"] = run.outcome
            self.store.add(UsageKey(run.team_id, month, jobs_dimension(depth, run.outcome)), {"jobs": 1})
        self.store.add(UsageKey(run.team_id, month, TOTALS), totals)
        for other_month, amount in reserved_by_month.items():  # reserved before the month turned
            self.store.add(UsageKey(run.team_id, other_month, TOTALS), {"committed_usd": -amount})
        self.store.add(UsageKey(run.team_id, month, job_dimension(run.job_id)), counters, labels)
        if run.closes_job:
            self.store.settle(run.team_id, run.job_id)
        return cost

    def record_request(self, team_id: str, method: str, route: str, status: int, meter: Meter) -> None:
        """One request to a route; the LLM tokens and sources it used go to the month's totals."""
        month = month_of(self.clock())
        counters = {"requests": 1.0}
        if 400 <= status < 500:
            counters["client_errors"] = 1.0
        elif status >= 500:
            counters["server_errors"] = 1.0
        self.store.add(UsageKey(team_id, month, route_dimension(method, route)), counters)
        quantities = meter_quantities(meter)
        used: dict[str, float] = {**_source_counters(meter)}
        if quantities.llm_tokens_in or quantities.llm_tokens_out:
            llm = Quantities(llm_tokens_in=quantities.llm_tokens_in, llm_tokens_out=quantities.llm_tokens_out)
            cost = llm.cost(self.prices)
            used |= {**llm.to_counters(), **cost.to_counters(), "committed_usd": cost.total_usd}
        if used:
            self.store.add(UsageKey(team_id, month, TOTALS), used)
