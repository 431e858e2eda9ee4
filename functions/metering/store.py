"""The usage store: its items, its protocol, and the in-memory twin of the DynamoDB adapter.

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

import threading
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
        )

    @property
    def cost_usd(self) -> float:
        return float(self.counters.get("cost_usd", 0.0))

    @property
    def committed_usd(self) -> float:
        return float(self.counters.get("committed_usd", 0.0))


class UsageStore(Protocol):
    def add(
        self,
        team_id: str,
        month: str,
        dimension: str,
        counters: Mapping[str, float],
        labels: Mapping[str, str] | None = None,
    ) -> None:
        """ADD each counter (negative amounts subtract) and each label to its string set."""
        ...

    def get(self, team_id: str, month: str, dimension: str) -> UsageItem | None: ...

    def month(self, team_id: str, month: str) -> list[UsageItem]:
        """Every item of the team's month, in sort-key order."""
        ...

    def open_job(
        self,
        team_id: str,
        job_id: str,
        *,
        depth: str | None,
        max_cost_usd: float | None,
        monthly_budget_usd: float | None,
    ) -> None:
        """Write the job's budget and depth to its ledger; a second call changes nothing."""
        ...

    def job(self, team_id: str, job_id: str) -> JobLedger | None: ...

    def charge_job(self, team_id: str, job_id: str, counters: Mapping[str, float]) -> JobLedger:
        """ADD the counters to the job's ledger; the ledger after the update."""
        ...

    def raise_max_step(self, team_id: str, job_id: str, usd: float) -> None:
        """Keep the largest single step cost of the job."""
        ...

    def reserve(
        self,
        team_id: str,
        job_id: str,
        month: str | None,
        usd: float,
        *,
        job_limit: float | None,
        month_limit: float | None,
    ) -> Refused | None:
        """ADD `usd` to `committed_usd` of the job's ledger and of the month's totals (only the ledger when
        `month` is None), both or neither, only if neither would pass its limit (committed before <=
        limit). None when reserved, else which limit refused."""
        ...

    def hold(
        self,
        team_id: str,
        job_id: str,
        month: str,
        usd: float,
        *,
        month_limit: float,
        monthly_budget_usd: float,
    ) -> HoldOutcome:
        """ADD `usd` to the month's `committed_usd` if it is at most `month_limit` before, and record the
        hold on the job's ledger, both or neither. A job holds once: a second hold changes nothing."""
        ...

    def settle(self, team_id: str, job_id: str) -> tuple[str, float] | None:
        """Mark the job's hold settled (once) and give back to its month what the job did not spend:
        (month, released), or None when the job has no hold or it was settled already."""
        ...


class InMemoryUsageStore:
    """The same semantics as DynamoDbUsageStore, for unit tests."""

    def __init__(self) -> None:
        self.items: dict[tuple[str, str], dict[str, float]] = {}
        self.sets: dict[tuple[str, str], dict[str, set[str]]] = {}
        self.ledgers: dict[tuple[str, str], dict[str, float | str | None]] = {}
        self._lock = threading.Lock()

    def _add(self, key: tuple[str, str], counters: Mapping[str, float]) -> None:
        item = self.items.setdefault(key, {})
        for name, amount in counters.items():
            item[name] = item.get(name, 0.0) + float(amount)

    def add(
        self,
        team_id: str,
        month: str,
        dimension: str,
        counters: Mapping[str, float],
        labels: Mapping[str, str] | None = None,
    ) -> None:
        key = (month_pk(team_id, month), dimension)
        with self._lock:
            self._add(key, counters)
            sets = self.sets.setdefault(key, {})
            for name, value in (labels or {}).items():
                sets.setdefault(name, set()).add(value)

    def _item(self, key: tuple[str, str]) -> UsageItem | None:
        if key not in self.items and key not in self.sets:
            return None
        labels = {name: sorted(values) for name, values in self.sets.get(key, {}).items()}
        return UsageItem(key[1], dict(self.items.get(key, {})), labels)

    def get(self, team_id: str, month: str, dimension: str) -> UsageItem | None:
        with self._lock:
            return self._item((month_pk(team_id, month), dimension))

    def month(self, team_id: str, month: str) -> list[UsageItem]:
        pk = month_pk(team_id, month)
        with self._lock:
            keys = sorted({key for key in [*self.items, *self.sets] if key[0] == pk})
            return [item for key in keys if (item := self._item(key)) is not None]

    def open_job(
        self,
        team_id: str,
        job_id: str,
        *,
        depth: str | None,
        max_cost_usd: float | None,
        monthly_budget_usd: float | None,
    ) -> None:
        with self._lock:
            ledger = self.ledgers.setdefault((team_id, job_id), {})
            for name, value in (
                ("depth", depth),
                ("max_cost_usd", max_cost_usd),
                ("monthly_budget_usd", monthly_budget_usd),
            ):
                if value is not None:
                    ledger.setdefault(name, value)
            ledger.setdefault("opened", 1.0)

    def _ledger(self, team_id: str, job_id: str) -> JobLedger | None:
        key = (job_pk(team_id, job_id), LEDGER)
        described = self.ledgers.get((team_id, job_id))
        if described is None and key not in self.items:
            return None
        return JobLedger.from_stored(team_id, job_id, self.items.get(key, {}), described or {})

    def job(self, team_id: str, job_id: str) -> JobLedger | None:
        with self._lock:
            return self._ledger(team_id, job_id)

    def charge_job(self, team_id: str, job_id: str, counters: Mapping[str, float]) -> JobLedger:
        with self._lock:
            self._add((job_pk(team_id, job_id), LEDGER), counters)
            ledger = self._ledger(team_id, job_id)
        assert ledger is not None
        return ledger

    def raise_max_step(self, team_id: str, job_id: str, usd: float) -> None:
        with self._lock:
            item = self.items.setdefault((job_pk(team_id, job_id), LEDGER), {})
            if usd > item.get("max_step_usd", 0.0):
                item["max_step_usd"] = usd

    def reserve(
        self,
        team_id: str,
        job_id: str,
        month: str | None,
        usd: float,
        *,
        job_limit: float | None,
        month_limit: float | None,
    ) -> Refused | None:
        ledger_key = (job_pk(team_id, job_id), LEDGER)
        totals_key = (month_pk(team_id, month), TOTALS) if month is not None else None
        with self._lock:
            job_committed = self.items.get(ledger_key, {}).get("committed_usd")
            if job_limit is not None and job_committed is not None and job_committed > job_limit:
                return "job"
            if totals_key is not None:
                month_committed = self.items.get(totals_key, {}).get("committed_usd")
                if month_limit is not None and month_committed is not None and month_committed > month_limit:
                    return "team"
                self._add(totals_key, {"committed_usd": usd})
            self._add(ledger_key, {"committed_usd": usd})
            return None

    def hold(
        self,
        team_id: str,
        job_id: str,
        month: str,
        usd: float,
        *,
        month_limit: float,
        monthly_budget_usd: float,
    ) -> HoldOutcome:
        totals_key = (month_pk(team_id, month), TOTALS)
        with self._lock:
            month_committed = self.items.get(totals_key, {}).get("committed_usd")
            if month_committed is not None and month_committed > month_limit:
                return "refused"
            ledger = self.ledgers.setdefault((team_id, job_id), {})
            if "held_usd" in ledger:
                return "already_held"
            ledger.update(held_usd=usd, hold_month=month)
            ledger.setdefault("monthly_budget_usd", monthly_budget_usd)
            self._add(totals_key, {"committed_usd": usd})
            return "held"

    def settle(self, team_id: str, job_id: str) -> tuple[str, float] | None:
        with self._lock:
            ledger = self.ledgers.get((team_id, job_id))
            if ledger is None or "held_usd" not in ledger or "settled_at" in ledger:
                return None
            ledger["settled_at"] = 1.0
            held = float(ledger["held_usd"] or 0.0)
            month = str(ledger["hold_month"])
            spent = self.items.get((job_pk(team_id, job_id), LEDGER), {}).get("cost_usd", 0.0)
            released = max(0.0, held - spent)
            self._add((month_pk(team_id, month), TOTALS), {"committed_usd": -released})
            return month, released
