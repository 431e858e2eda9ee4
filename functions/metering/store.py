"""The usage store: its items and its protocol (the DynamoDB adapter is functions/metering/dynamodb.py).

One table (`usage_table` in the registry), `pk` + `sk`, every counter changed by atomic ADD only:

| pk                               | sk                            | holds                                      |
|----------------------------------|-------------------------------|--------------------------------------------|
| `TEAM#<team>#MONTH#<YYYY-MM>`    | `TOTALS`                      | the month's quantities, cost and its parts, |
|                                  |                               | sources, tokens, requests, `committed_usd` |
|                                  | `ROUTE#<METHOD> <template>`   | requests, client_errors, server_errors     |
|                                  | `JOBS#<depth>#<outcome>`      | jobs that ended so                         |
|                                  | `JOB#<job_id>`                | the job's usage and cost in that month     |
| `TEAM#<team>#JOB#<job_id>`       | `LEDGER`                      | the job's whole usage and cost, its budget, |
|                                  |                               | its hold on the month (`held_usd`,         |
|                                  |                               | `hold_month`, `settled_at` once released)  |

`committed_usd` is the recorded cost plus what is reserved (functions/metering/budget.py): on the month,
the hold of every job not yet settled (taken at submission, a conditional ADD on `TOTALS`, so concurrent
submissions cannot pass the same remainder); on a job's ledger, what its running steps reserved (a
conditional ADD, so concurrent steps cannot together pass the job's cap). While a job holds part of the
month, its recorded cost adds to the month's `committed_usd` only where it passes the hold; settling the
job returns what it did not spend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal, Protocol

TOTALS = "TOTALS"
LEDGER = "LEDGER"
ROUTE_PREFIX = "ROUTE#"
JOBS_PREFIX = "JOBS#"
JOB_PREFIX = "JOB#"

Refused = Literal["job", "team"]
HoldOutcome = Literal["held", "already_held", "refused"]


def month_pk(team_id: str, month: str) -> str:
    return f"TEAM#{team_id}#MONTH#{month}"


def job_pk(team_id: str, job_id: str) -> str:
    return f"TEAM#{team_id}#JOB#{job_id}"


def route_dimension(method: str, template: str) -> str:
    return f"{ROUTE_PREFIX}{method.upper()} {template}"


def jobs_dimension(depth: str, outcome: str) -> str:
    return f"{JOBS_PREFIX}{depth}#{outcome}"


def job_dimension(job_id: str) -> str:
    return f"{JOB_PREFIX}{job_id}"


@dataclass(frozen=True)
class UsageKey:
    """Which item of a team's month: `dimension` is its sort key (TOTALS, a route, a job...)."""

    team_id: str
    month: str
    dimension: str

    @property
    def pk(self) -> str:
        return month_pk(self.team_id, self.month)


@dataclass(frozen=True)
class UsageItem:
    dimension: str  # the sort key
    counters: dict[str, float] = field(default_factory=dict)
    labels: dict[str, list[str]] = field(default_factory=dict)  # string sets, sorted

    def count(self, name: str) -> float:
        return float(self.counters.get(name, 0.0))


@dataclass(frozen=True)
class JobLedger:
    team_id: str
    job_id: str
    counters: dict[str, float] = field(default_factory=dict)
    depth: str | None = None
    max_cost_usd: float | None = None
    monthly_budget_usd: float | None = None
    max_step_usd: float = 0.0
    held_usd: float | None = None  # what the job holds of its team's month (None: no hold)
    hold_month: str | None = None
    settled: bool = False  # the hold was settled: the job's costs now count in full
    hold_margin_sq: float = 0.0  # (high - mean)^2 of the job's quote, while it holds (HoldRequest)
    planned_extractions: int | None = None  # the quote's extractions, for the hold's true-up
    selected_extractions: int | None = None  # how many the screening handed the extraction Map

    @classmethod
    def from_stored(
        cls, team_id: str, job_id: str, counters: Mapping[str, float], described: Mapping[str, object]
    ) -> JobLedger:
        """The ledger of a job's stored counters and its description (budget, depth, hold, settling)."""
        counters = dict(counters)
        max_step = counters.pop("max_step_usd", 0.0)

        def number(name: str) -> float | None:
            value = described.get(name)
            return float(value) if isinstance(value, Decimal | int | float) else None

        depth = described.get("depth")
        hold_month = described.get("hold_month")
        return cls(
            team_id,
            job_id,
            counters,
            depth=str(depth) if depth is not None else None,
            max_cost_usd=number("max_cost_usd"),
            monthly_budget_usd=number("monthly_budget_usd"),
            max_step_usd=max_step,
            held_usd=number("held_usd"),
            hold_month=str(hold_month) if hold_month is not None else None,
            settled="settled_at" in described,
            hold_margin_sq=number("hold_margin_sq") or 0.0,
            planned_extractions=int(planned)
            if (planned := number("planned_extractions")) is not None
            else None,
            selected_extractions=int(chosen)
            if (chosen := number("selected_extractions")) is not None
            else None,
        )

    @property
    def cost_usd(self) -> float:
        return float(self.counters.get("cost_usd", 0.0))

    @property
    def committed_usd(self) -> float:
        return float(self.counters.get("committed_usd", 0.0))


@dataclass(frozen=True)
class JobTerms:
    """What a job's ledger records when it opens: its depth, its cap and its team's monthly budget."""

    team_id: str
    job_id: str
    depth: str | None
    max_cost_usd: float | None
    monthly_budget_usd: float | None


@dataclass(frozen=True)
class ReserveRequest:
    """`usd` to reserve on a job's ledger within `job_limit`, and on `month`'s totals (None: the ledger
    only) within `month_limit`; a limit of None does not apply."""

    team_id: str
    job_id: str
    month: str | None
    usd: float
    job_limit: float | None
    month_limit: float | None


@dataclass(frozen=True)
class HoldRequest:
    """`usd` of `month` for a job to hold, if the month's committed amount is at most `month_limit`.
    `margin_sq` ((high - mean)^2 of its quote) adds to the month's `hold_margin_sq` while it holds."""

    team_id: str
    job_id: str
    month: str
    usd: float
    month_limit: float
    monthly_budget_usd: float
    margin_sq: float = 0.0
    planned_extractions: int = 0


@dataclass(frozen=True)
class HoldChange:
    """A running job's hold grown (`usd` > 0, if the month's committed amount is at most `month_limit`)
    or trued down (`usd` < 0), on its ledger and its month's totals together; `margin_sq` changes the
    job's squared margin (`hold_margin_sq`) on both as well."""

    team_id: str
    job_id: str
    month: str
    usd: float
    month_limit: float | None = None
    margin_sq: float = 0.0


class UsageStore(Protocol):
    def add(
        self, key: UsageKey, counters: Mapping[str, float], labels: Mapping[str, str] | None = None
    ) -> None:
        """ADD each counter (negative amounts subtract) and each label to its string set."""
        ...

    def get(self, key: UsageKey) -> UsageItem | None: ...

    def month(self, team_id: str, month: str) -> list[UsageItem]:
        """Every item of the team's month, in sort-key order."""
        ...

    def open_job(self, terms: JobTerms) -> None:
        """Write the job's budget and depth to its ledger; a second call changes nothing."""
        ...

    def job(self, team_id: str, job_id: str) -> JobLedger | None: ...

    def charge_job(self, team_id: str, job_id: str, counters: Mapping[str, float]) -> JobLedger:
        """ADD the counters to the job's ledger; the ledger after the update."""
        ...

    def raise_max_step(self, team_id: str, job_id: str, usd: float) -> None:
        """Keep the largest single step cost of the job."""
        ...

    def reserve(self, request: ReserveRequest) -> Refused | None:
        """ADD `usd` to `committed_usd` of the job's ledger and of the month's totals (only the ledger when
        `month` is None), both or neither, only if neither would pass its limit (committed before <=
        limit). None when reserved, else which limit refused."""
        ...

    def hold(self, request: HoldRequest) -> HoldOutcome:
        """ADD `usd` to the month's `committed_usd` if it is at most `month_limit` before, and record the
        hold on the job's ledger, both or neither. A job holds once: a second hold changes nothing."""
        ...

    def select_extractions(self, team_id: str, job_id: str, count: int) -> None:
        """Record on the job's ledger how many extractions its Map runs (the hold's true-up)."""
        ...

    def resize_hold(self, change: HoldChange) -> bool:
        """ADD `usd` to the job's `held_usd` and its month's `committed_usd`, both or neither: only while
        the hold is not settled and (growing) the month's committed amount is at most `month_limit`."""
        ...

    def settle(self, team_id: str, job_id: str) -> tuple[str, float] | None:
        """Mark the job's hold settled (once) and give back to its month what the job did not spend:
        (month, released), or None when the job has no hold or it was settled already. The month's
        `hold_margin_sq` drops the job's."""
        ...
