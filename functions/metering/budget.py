"""Budgets: a job's `max_cost_usd` and a team's monthly budget, before and while a job runs.

- Before: `Budgets.hold` takes the job's share of the team's month at submission (or when a schedule
  fires): its quote's high figure, or what is left when less, in one conditional write on the month's
  totals, so simultaneous submissions cannot pass the same remainder. A job whose quote's low figure
  does not fit is refused (BudgetExceeded: 402 in the agent API, see docs/usage.md).
- While: the Plan step writes the job's budget and the team's monthly budget to the job's ledger
  (`open_job`); before each search, extraction and synthesis the workflow asks `admit`, which reserves
  the unit's high estimate on the job's ledger (and, for a job without a hold, on the month's totals)
  in one conditional write. It refuses when the reservation, plus what the job must still spend to
  finish (screening, finalisation), would take the job past its cap (`max_cost_usd`, its hold) or the
  month past its budget. When the step is recorded the reservation is replaced by the measured cost, so
  concurrent steps (a Map's iterations) never together pass a cap, and a job passes it by no more than
  an estimate's error.
- After: the job's final step (Finalize or MarkFailed), a workflow that could not start or an
  execution that ended without either `release` the hold: the month keeps what the job spent.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from functions.common.errors import DomainError, InvalidInput
from functions.metering.estimate import HIGH_QUANTILE_Z, CostModel, Unit, remaining_spread
from functions.metering.meter import current_meter
from functions.metering.store import (
    TOTALS,
    HoldChange,
    HoldRequest,
    JobLedger,
    JobTerms,
    ReserveRequest,
    UsageKey,
    UsageStore,
)

TeamBudget = Callable[[str], float | None]  # a team's monthly budget in USD; None when it has none

HOLD_ATTEMPTS = 6  # optimistic tries of a hold under contention, the last for the low figure alone
ROUNDING_USD = 1e-9  # amounts are stored to 12 decimals: a hold that fits exactly is not refused


def utc_now() -> datetime:
    return datetime.now(UTC)


def month_of(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m")


def usd(amount: float) -> str:
    return f"${amount:.6f}"


def pooled_share(mean: float, margin: float, pooled_sq: float) -> float:
    """A job's share of a month whose running holds' squared margins sum to `pooled_sq`: its expected
    cost plus what its margin adds to the root of that sum (its whole margin when it runs alone)."""
    margin = max(0.0, margin)
    return mean + math.sqrt(pooled_sq + margin * margin) - math.sqrt(pooled_sq)


def portfolio_margin(margin_sq: float, pooled_sq: float) -> float:
    """A running job's part of the pooled margin sqrt(pooled_sq) of the month's running jobs: in
    proportion to its own squared margin, so that the parts add up to the pool (a job alone: its own
    margin)."""
    if margin_sq <= 0:
        return 0.0
    return margin_sq / math.sqrt(max(pooled_sq, margin_sq))


@dataclass(frozen=True, slots=True)
class QuoteTerms:
    """What a hold reads of a quote: its low, high and mean figures, its 95 % margin over the mean and
    its planned extractions."""

    low: float
    high: float
    mean: float
    margin: float
    extractions: int

    def share(self, pooled_sq: float, floor: float, remaining: float) -> float:
        """Its share of a month (`pooled_share`), at most its high figure, or what is left when less,
        down to `floor`."""
        return max(floor, min(pooled_share(self.mean, self.margin, pooled_sq), self.high, remaining))


def remaining_terms(costs: CostModel, ledger: JobLedger) -> tuple[float, float]:
    """What a running job may still spend on average and its squared 95 % margin, both scaled by how
    its steps ran (`CostModel.measured_ratio`)."""
    ratio = costs.measured_ratio(ledger.counters)
    planned, selected = ledger.planned_extractions or 0, ledger.selected_extractions
    mean = costs.remaining_cost(ledger.counters, planned, high=False, selected=selected)
    spread = remaining_spread(costs, ledger.counters, planned, selected=selected)
    return ratio * mean, (HIGH_QUANTILE_Z * ratio * spread) ** 2


def quote_terms(quote: Mapping[str, Any]) -> QuoteTerms:
    """The quote's figures. The margin is 1.645 standard deviations of the job's cost (`sd_usd`): the
    margins of independent jobs add as the root of their squares (a sum's standard deviation), so a
    portfolio's 95 % point is the sum of the means plus the root of the sum of squared margins. A quote
    without `sd_usd` (recorded before it existed) gives high - mean."""
    low = max(0.0, float(quote.get("low_usd", 0.0)))
    high = max(low, float(quote.get("high_usd", low)))
    basis = quote.get("basis") or {}
    mean = min(high, max(low, float(basis.get("mean_usd") or (low + high) / 2)))
    sd = basis.get("sd_usd")
    margin = HIGH_QUANTILE_Z * float(sd) if isinstance(sd, int | float) and sd > 0 else high - mean
    return QuoteTerms(low, high, mean, margin, int(basis.get("extractions") or 0))


class BudgetExceeded(DomainError):
    """A job that cannot fit in what is left of its team's monthly budget."""

    code = "BUDGET_EXCEEDED"

    def __init__(
        self,
        message: str,
        *,
        month: str,
        monthly_budget_usd: float,
        remaining_budget_usd: float,
        cost_estimate: Mapping[str, Any],
    ) -> None:
        super().__init__(message)
        self.month = month
        self.monthly_budget_usd = monthly_budget_usd
        self.remaining_budget_usd = remaining_budget_usd
        self.cost_estimate = dict(cost_estimate)

    def details(self) -> dict[str, Any]:
        return {
            "month": self.month,
            "monthly_budget_usd": round(self.monthly_budget_usd, 6),
            "remaining_budget_usd": round(self.remaining_budget_usd, 6),
            "cost_estimate": self.cost_estimate,
        }


@dataclass(frozen=True)
class Refusal:
    """Why the next unit of a job was not started."""

    scope: Literal["job", "team"]
    reason: str


@dataclass(frozen=True, slots=True)
class UnitNeed:
    """What starting one unit of a job asks of its budgets, and how a refusal of it reads."""

    unit: Unit
    month: str
    estimate: float
    # what the job's remaining steps (and the Map's skipped units) still need after this one
    closing: float
    committed_usd: float
    job_cap: float | None
    # the cap is the job's hold on the team's month, not its own max_cost_usd
    by_hold: bool
    monthly_budget_usd: float | None

    @property
    def total(self) -> float:
        return self.estimate + self.closing

    def refuse_job(self) -> Refusal:
        assert self.job_cap is not None
        spent = f"{usd(self.committed_usd)} spent or reserved, and the next {self.unit} needs up to "
        needs = f"{usd(self.estimate)} plus {usd(self.closing)} to finish the job"
        if self.by_hold:
            return Refusal(
                "team",
                f"the job's share of the team's monthly budget ({usd(self.job_cap)} held for {self.month}) "
                f"would be exceeded: {spent}{needs}",
            )
        return Refusal(
            "job",
            f"the job's budget of {usd(self.job_cap)} (max_cost_usd) would be exceeded: {spent}{needs}",
        )

    def refuse_team(self) -> Refusal:
        assert self.monthly_budget_usd is not None
        return Refusal(
            "team",
            f"the team's monthly budget of {usd(self.monthly_budget_usd)} for {self.month} would be "
            f"exceeded: the next {self.unit} needs up to {usd(self.estimate)} plus {usd(self.closing)} "
            "to finish the job",
        )


@dataclass
class Budgets:
    store: UsageStore
    costs: CostModel
    team_budget: TeamBudget
    clock: Callable[[], datetime] = utc_now
    # Holds are settled by the recording of the job's last step: without metering nothing would settle
    # them, so submissions are then only checked against what is committed.
    holds: bool = True

    def quote(self, plan: Mapping[str, Any]) -> dict[str, Any]:
        """The plan's cost estimate (`cost_estimate` of POST /api/agent/execute)."""
        return self.costs.quote(plan)

    # --- the team's month -------------------------------------------------------------------------

    def month_committed(self, team_id: str, month: str) -> float:
        return self._month_holds(team_id, month)[0]

    def monthly_status(self, team_id: str) -> dict[str, Any]:
        """The team's monthly budget, what is committed (spent or reserved) and what remains."""
        month = month_of(self.clock())
        budget = self.team_budget(team_id)
        committed = self.month_committed(team_id, month)
        return {
            "month": month,
            "monthly_budget_usd": budget,
            "committed_usd": round(committed, 6),
            "remaining_usd": None if budget is None else round(max(0.0, budget - committed), 6),
        }

    def hold(self, team_id: str, job_id: str, quote: Mapping[str, Any]) -> float | None:
        """Hold the job's share of the team's month; None without a monthly budget. BudgetExceeded when
        the month cannot pay for what the job costs even if every unit is refused (its floor:
        `CostModel.least_job_cost`, or the quote's low figure when less).

        Jobs running at once in a month are held as one portfolio: their means plus the margin of
        their sum, the root of their squared margins (`quote_terms`), which their sum passes about 5 %
        of the time (docs/usage.md, "The portfolio"); a job holds what it adds (`QuoteTerms.share`).
        The hold is trued as its steps are recorded and grown when a unit needs more (`true_up`, `admit`).

        Optimistic: read what is committed, then ADD the share on condition that the month's committed
        amount has not grown past the budget less the share in between (else read again). The last try
        asks for the floor alone."""
        budget = self.team_budget(team_id)
        if budget is None:
            return None
        month = month_of(self.clock())
        terms = quote_terms(quote)
        low, high = terms.low, terms.high
        committed, pooled_sq = self._month_holds(team_id, month)
        remaining = max(0.0, budget - committed)
        floor = min(low, self.costs.least_job_cost())
        if not self.holds and low <= remaining + ROUNDING_USD:
            return None
        for attempt in range(HOLD_ATTEMPTS if self.holds else 0):
            if floor > remaining + ROUNDING_USD:
                break
            share = floor if attempt == HOLD_ATTEMPTS - 1 else terms.share(pooled_sq, floor, remaining)
            outcome = self.store.hold(
                HoldRequest(
                    team_id,
                    job_id,
                    month,
                    share,
                    month_limit=budget - share + ROUNDING_USD,
                    monthly_budget_usd=budget,
                    margin_sq=terms.margin**2,
                    planned_extractions=terms.extractions,
                )
            )
            if outcome == "held":
                return share
            if outcome == "already_held":  # a retried submission or Plan step: held once
                ledger = self.store.job(team_id, job_id)
                return ledger.held_usd if ledger is not None else None
            committed, pooled_sq = self._month_holds(team_id, month)
            remaining = max(0.0, budget - committed)
        raise BudgetExceeded(
            f"the job's estimated cost ({usd(low)} - {usd(high)}) does not fit the {usd(remaining)} left of "
            f"the team's monthly budget of {usd(budget)} for {month}: it needs at least {usd(floor)}",
            month=month,
            monthly_budget_usd=budget,
            remaining_budget_usd=remaining,
            cost_estimate=quote,
        )

    def _month_holds(self, team_id: str, month: str) -> tuple[float, float]:
        """What the month has committed, and the sum of its running holds' squared margins."""
        totals = self.store.get(UsageKey(team_id, month, TOTALS))
        if totals is None:
            return 0.0, 0.0
        committed = max(totals.count("committed_usd"), totals.count("cost_usd"))
        return committed, max(0.0, totals.count("hold_margin_sq"))

    def true_up(self, team_id: str, job_id: str) -> float:
        """After a step of a held job is recorded, hold what the job still needs as a member of the
        month's portfolio, and give the rest back to the month: what it has spent or reserved, what its
        remaining steps cost on average (`CostModel.remaining_cost`, scaled as its steps ran) and its
        part of the pooled margin of every running job's remaining cost (`portfolio_margin`), at least
        its closing steps' high estimate. Its own remaining margin (`estimate.remaining_spread`) then
        replaces what it added to the month's pooled squares. A unit that needs more grows the hold
        again (`admit`). Returns what was released."""
        ledger = self.store.job(team_id, job_id)
        if ledger is None or ledger.held_usd is None or ledger.settled or ledger.hold_month is None:
            return 0.0
        mean, margin_sq = remaining_terms(self.costs, ledger)
        pooled_sq = self._month_holds(team_id, ledger.hold_month)[1] - ledger.hold_margin_sq + margin_sq
        closing = self.costs.step_cost("finalize", high=True)
        needed = max(mean + portfolio_margin(margin_sq, pooled_sq), closing)
        keep = max(ledger.committed_usd + needed, ledger.cost_usd)
        release = max(0.0, ledger.held_usd - keep)
        change = HoldChange(
            team_id, job_id, ledger.hold_month, -release, margin_sq=margin_sq - ledger.hold_margin_sq
        )
        if release <= ROUNDING_USD and abs(change.margin_sq) <= ROUNDING_USD**2:
            return 0.0
        changed = self.store.resize_hold(change)
        return release if changed else 0.0

    def _grow_hold(self, ledger: JobLedger, need: UnitNeed) -> bool:
        """Grow a held job's hold by what the unit lacks, from what the month has left (others' holds
        trued down). False when the month cannot spare it or max_cost_usd binds; True when grown, or
        when the hold already had room as read (other units reserved since: ask again)."""
        if ledger.held_usd is None or ledger.hold_month is None or ledger.monthly_budget_usd is None:
            return False
        grow = need.committed_usd + need.total - ledger.held_usd + ROUNDING_USD
        if grow <= ROUNDING_USD:
            return True
        if ledger.max_cost_usd is not None and ledger.held_usd + grow > ledger.max_cost_usd:
            return False
        change = HoldChange(
            ledger.team_id,
            ledger.job_id,
            ledger.hold_month,
            grow,
            month_limit=ledger.monthly_budget_usd - grow,
        )
        return self.store.resize_hold(change)

    def check_job_cap(self, quote: Mapping[str, Any], max_cost_usd: float | None) -> None:
        """InvalidInput when `max_cost_usd` is below what the job costs even if every unit is refused:
        no check before a step could then keep the job within one step of it."""
        if max_cost_usd is None:
            return
        least = self.costs.least_job_cost()
        if max_cost_usd < least:
            raise InvalidInput(
                f"max_cost_usd {usd(max_cost_usd)} is less than the {usd(least)} this job costs even if "
                "its budget refuses every search, extraction and synthesis (planning, screening and "
                "finalising always run)",
                field="scope_parameters.max_cost_usd",
            )

    def release(self, team_id: str, job_id: str) -> float:
        """Settle the job's hold: the month keeps what the job spent; returns what was given back."""
        settled = self.store.settle(team_id, job_id)
        return settled[1] if settled is not None else 0.0

    def release_unrecorded(self, team_id: str, job_id: str) -> float:
        """Give back what the job's steps reserved and never replaced by their cost: call it only while
        none of its steps runs (the local runtime, restarting, before the job goes on), when every
        reservation left belongs to a step that died unrecorded. The job's ledger, and the month's
        totals for a job without a hold (where its reservations were made too), lose that amount;
        returns it."""
        ledger = self.store.job(team_id, job_id)
        if ledger is None:
            return 0.0
        unrecorded = ledger.committed_usd - ledger.cost_usd
        if unrecorded <= ROUNDING_USD:
            return 0.0
        self.store.charge_job(team_id, job_id, {"committed_usd": -unrecorded})
        if ledger.held_usd is None:
            month = month_of(self.clock())
            self.store.add(UsageKey(team_id, month, TOTALS), {"committed_usd": -unrecorded})
        return unrecorded

    # --- a running job ----------------------------------------------------------------------------

    def open_job(self, team_id: str, job_id: str, scope: Mapping[str, Any]) -> None:
        """Record the job's depth, `max_cost_usd` and the team's monthly budget on its ledger."""
        raw_max = scope.get("max_cost_usd")
        max_cost = float(raw_max) if isinstance(raw_max, int | float) and raw_max > 0 else None
        depth = scope.get("discovery_depth")
        self.store.open_job(
            JobTerms(
                team_id,
                job_id,
                depth=str(depth) if depth else None,
                max_cost_usd=max_cost,
                monthly_budget_usd=self.team_budget(team_id),
            )
        )

    def affordable_extractions(self, team_id: str, job_id: str, wanted: int) -> int:
        """How many of `wanted` extractions the job may start: each Map iteration costs at least what a
        refused one does, so the Map gets no more iterations than the job's cap (`max_cost_usd`, its
        hold) can pay for even if every one is refused, after the screening asking (what it has cost so
        far, at least its estimate), the synthesis and the finalisation."""
        ledger = self.store.job(team_id, job_id)
        if ledger is None:
            return wanted
        held = ledger.held_usd if not ledger.settled else None
        caps = [cap for cap in (ledger.max_cost_usd, held) if cap is not None]
        if not caps:
            return wanted
        ratio = self.costs.measured_ratio(ledger.counters)
        meter = current_meter()  # the screening asks, before its own cost is recorded
        screening = self.costs.running_step_cost("screen", meter.elapsed_seconds() if meter else 0.0)
        room = min(caps) - ledger.committed_usd - screening - ratio * self.costs.closing_cost("extract")
        each = ratio * self.costs.skipped_cost("extract")
        affordable = max(0, min(wanted, int(room // each))) if each > 0 else wanted
        if held is not None:
            self.store.select_extractions(team_id, job_id, affordable)
        return affordable

    def admit(
        self,
        team_id: str,
        job_id: str,
        unit: Unit,
        *,
        sources: int = 0,
        pending: int = 0,
    ) -> Refusal | None:
        """None when the unit may start (its estimate is then reserved), else why not.

        `pending`: the units of the same Map still to come after this one. Each runs even when refused
        (to say so), so what they cost then is part of what the job must still spend. Estimates are
        scaled by how far the job's recorded steps passed theirs (`CostModel.measured_ratio`).

        A job that holds part of the month (`hold`) is capped by that hold and reserves on its ledger
        only: the month already counts the hold; when the hold is short, it is grown from what the
        month has left and the unit asks again (the ledger read afresh: a Map's other iterations may
        have reserved in between). Other jobs reserve on the month's totals as well."""
        refused: Refusal | None = None
        for attempt in range(HOLD_ATTEMPTS):
            ledger = self.store.job(team_id, job_id)
            if ledger is None:
                return None
            need = self._unit_need(ledger, unit, sources, pending)
            if need is None:
                return None
            held = ledger.held_usd if not ledger.settled else None
            refused = self._reserve(team_id, job_id, need, held)
            if refused is None or not need.by_hold or attempt == HOLD_ATTEMPTS - 1:
                return refused
            if not self._grow_hold(ledger, need):
                return refused
        return refused

    def _unit_need(self, ledger: JobLedger, unit: Unit, sources: int, pending: int) -> UnitNeed | None:
        """What the unit asks of the job's budgets; None when the job has none."""
        held = ledger.held_usd if not ledger.settled else None
        caps = [cap for cap in (ledger.max_cost_usd, held) if cap is not None]
        if not caps and ledger.monthly_budget_usd is None:
            return None
        ratio = self.costs.measured_ratio(ledger.counters)
        skipped = max(0, pending) * self.costs.skipped_cost(unit)
        job_cap = min(caps) if caps else None
        return UnitNeed(
            unit=unit,
            month=month_of(self.clock()),
            estimate=self.costs.unit_estimate(unit, ledger.counters, sources=sources),
            closing=ratio * (self.costs.closing_cost(unit) + skipped),
            committed_usd=ledger.committed_usd,
            job_cap=job_cap,
            by_hold=held is not None
            and job_cap == held
            and (ledger.max_cost_usd is None or held < ledger.max_cost_usd),
            monthly_budget_usd=ledger.monthly_budget_usd,
        )

    def _reserve(self, team_id: str, job_id: str, need: UnitNeed, held: float | None) -> Refusal | None:
        """Reserve the unit's estimate within the job's cap and the month's budget, or refuse."""
        job_limit = None if need.job_cap is None else need.job_cap - need.total
        month_limit = None
        if held is None and need.monthly_budget_usd is not None:
            month_limit = need.monthly_budget_usd - need.total
        if job_limit is not None and job_limit < 0:
            return need.refuse_job()
        if month_limit is not None and month_limit < 0:
            return need.refuse_team()
        meter = current_meter()
        if meter is None:  # nothing would settle a reservation: check without one
            if job_limit is not None and need.committed_usd > job_limit:
                return need.refuse_job()
            if month_limit is not None and self.month_committed(team_id, need.month) > month_limit:
                return need.refuse_team()
            return None
        reserve_month = need.month if held is None else None
        refused = self.store.reserve(
            ReserveRequest(
                team_id, job_id, reserve_month, need.estimate, job_limit=job_limit, month_limit=month_limit
            )
        )
        if refused is None:
            meter.reserve(need.estimate, reserve_month)
            return None
        return need.refuse_job() if refused == "job" else need.refuse_team()
