"""Budgets: a job's `max_cost_usd` and a team's monthly budget, before and while a job runs.

- Before: `Budgets.check_submit` refuses a job whose quote's low figure exceeds what is left of the
  team's monthly budget (BudgetExceeded: 402 in the agent API, see docs/usage.md).
- While: the Plan step writes the job's budget and the team's monthly budget to the job's ledger
  (`open_job`); before each search, extraction and synthesis the workflow asks `admit`, which reserves
  the unit's high estimate on the job's ledger and the month's totals in one conditional write. It
  refuses when the reservation, plus what the job must still spend to finish (screening, finalisation),
  would take either past its budget. When the step is recorded the reservation is replaced by the
  measured cost, so concurrent steps (a Map's iterations) never together pass a budget, and a job
  passes it by no more than an estimate's error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

from functions.common.errors import DomainError
from functions.metering.estimate import CostModel, Unit
from functions.metering.meter import current_meter
from functions.metering.store import TOTALS, UsageStore

TeamBudget = Callable[[str], float | None]  # a team's monthly budget in USD; None when it has none


def utc_now() -> datetime:
    return datetime.now(UTC)


def month_of(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m")


def usd(amount: float) -> str:
    return f"${amount:.6f}"


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


class BudgetGate(Protocol):
    """What the workflow asks before each unit of work (Budgets.admit)."""

    def admit(self, team_id: str, job_id: str, unit: Unit, *, sources: int = 0) -> Refusal | None: ...


@dataclass
class Budgets:
    store: UsageStore
    costs: CostModel
    team_budget: TeamBudget
    clock: Callable[[], datetime] = utc_now

    def quote(self, plan: Mapping[str, Any]) -> dict[str, Any]:
        """The plan's cost estimate (`cost_estimate` of POST /api/agent/execute)."""
        return self.costs.quote(plan)

    # --- the team's month -------------------------------------------------------------------------

    def month_committed(self, team_id: str, month: str) -> float:
        totals = self.store.get(team_id, month, TOTALS)
        if totals is None:
            return 0.0
        return max(totals.count("committed_usd"), totals.count("cost_usd"))

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

    def check_submit(self, team_id: str, quote: Mapping[str, Any]) -> None:
        """Raise BudgetExceeded when the quote's low figure does not fit the team's remaining budget."""
        budget = self.team_budget(team_id)
        if budget is None:
            return
        month = month_of(self.clock())
        remaining = max(0.0, budget - self.month_committed(team_id, month))
        low = float(quote.get("low_usd", 0.0))
        if low > remaining:
            raise BudgetExceeded(
                f"the job's estimated cost ({usd(low)} at least) exceeds the {usd(remaining)} left of the "
                f"team's monthly budget of {usd(budget)} for {month}",
                month=month,
                monthly_budget_usd=budget,
                remaining_budget_usd=remaining,
                cost_estimate=quote,
            )

    # --- a running job ----------------------------------------------------------------------------

    def open_job(self, team_id: str, job_id: str, scope: Mapping[str, Any]) -> None:
        """Record the job's depth, `max_cost_usd` and the team's monthly budget on its ledger."""
        raw_max = scope.get("max_cost_usd")
        max_cost = float(raw_max) if isinstance(raw_max, int | float) and raw_max > 0 else None
        depth = scope.get("discovery_depth")
        self.store.open_job(
            team_id,
            job_id,
            depth=str(depth) if depth else None,
            max_cost_usd=max_cost,
            monthly_budget_usd=self.team_budget(team_id),
        )

    def admit(self, team_id: str, job_id: str, unit: Unit, *, sources: int = 0) -> Refusal | None:
        """None when the unit may start (its estimate is then reserved), else why not."""
        ledger = self.store.job(team_id, job_id)
        if ledger is None or (ledger.max_cost_usd is None and ledger.monthly_budget_usd is None):
            return None
        estimate = self.costs.unit_cost(unit, sources=sources)
        closing = self.costs.closing_cost(unit)
        need = estimate + closing
        month = month_of(self.clock())

        def refuse_job() -> Refusal:
            assert ledger is not None and ledger.max_cost_usd is not None
            return Refusal(
                "job",
                f"the job's budget of {usd(ledger.max_cost_usd)} (max_cost_usd) would be exceeded: "
                f"{usd(ledger.committed_usd)} spent or reserved, and the next {unit} needs up to "
                f"{usd(estimate)} plus {usd(closing)} to finish the job",
            )

        def refuse_team() -> Refusal:
            assert ledger is not None and ledger.monthly_budget_usd is not None
            return Refusal(
                "team",
                f"the team's monthly budget of {usd(ledger.monthly_budget_usd)} for {month} would be "
                f"exceeded: the next {unit} needs up to {usd(estimate)} plus {usd(closing)} to finish "
                "the job",
            )

        job_limit = None if ledger.max_cost_usd is None else ledger.max_cost_usd - need
        month_limit = None if ledger.monthly_budget_usd is None else ledger.monthly_budget_usd - need
        if job_limit is not None and job_limit < 0:
            return refuse_job()
        if month_limit is not None and month_limit < 0:
            return refuse_team()
        meter = current_meter()
        if meter is None:  # nothing would settle a reservation: check without one
            if job_limit is not None and ledger.committed_usd > job_limit:
                return refuse_job()
            if month_limit is not None and self.month_committed(team_id, month) > month_limit:
                return refuse_team()
            return None
        refused = self.store.reserve(
            team_id, job_id, month, estimate, job_limit=job_limit, month_limit=month_limit
        )
        if refused is None:
            meter.reserve(estimate, month)
            return None
        return refuse_job() if refused == "job" else refuse_team()
