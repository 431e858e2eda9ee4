"""An in-memory UsageStore with the semantics of DynamoDbUsageStore, for tests."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from functions.metering.store import (
    LEDGER,
    TOTALS,
    HoldChange,
    HoldOutcome,
    HoldRequest,
    JobLedger,
    JobTerms,
    Refused,
    ReserveRequest,
    UsageItem,
    UsageKey,
    job_pk,
    month_pk,
)


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
        self, key: UsageKey, counters: Mapping[str, float], labels: Mapping[str, str] | None = None
    ) -> None:
        item_key = (key.pk, key.dimension)
        with self._lock:
            self._add(item_key, counters)
            sets = self.sets.setdefault(item_key, {})
            for name, value in (labels or {}).items():
                sets.setdefault(name, set()).add(value)

    def _item(self, key: tuple[str, str]) -> UsageItem | None:
        if key not in self.items and key not in self.sets:
            return None
        labels = {name: sorted(values) for name, values in self.sets.get(key, {}).items()}
        return UsageItem(key[1], dict(self.items.get(key, {})), labels)

    def get(self, key: UsageKey) -> UsageItem | None:
        with self._lock:
            return self._item((key.pk, key.dimension))

    def month(self, team_id: str, month: str) -> list[UsageItem]:
        pk = month_pk(team_id, month)
        with self._lock:
            keys = sorted({key for key in [*self.items, *self.sets] if key[0] == pk})
            return [item for key in keys if (item := self._item(key)) is not None]

    def open_job(self, terms: JobTerms) -> None:
        with self._lock:
            ledger = self.ledgers.setdefault((terms.team_id, terms.job_id), {})
            for name, value in (
                ("depth", terms.depth),
                ("max_cost_usd", terms.max_cost_usd),
                ("monthly_budget_usd", terms.monthly_budget_usd),
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

    def reserve(self, request: ReserveRequest) -> Refused | None:
        team_id, month, usd = request.team_id, request.month, request.usd
        job_limit, month_limit = request.job_limit, request.month_limit
        ledger_key = (job_pk(team_id, request.job_id), LEDGER)
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

    def hold(self, request: HoldRequest) -> HoldOutcome:
        totals_key = (month_pk(request.team_id, request.month), TOTALS)
        with self._lock:
            month_committed = self.items.get(totals_key, {}).get("committed_usd")
            if month_committed is not None and month_committed > request.month_limit:
                return "refused"
            ledger = self.ledgers.setdefault((request.team_id, request.job_id), {})
            if "held_usd" in ledger:
                return "already_held"
            ledger.update(
                held_usd=request.usd,
                hold_month=request.month,
                hold_margin_sq=request.margin_sq,
                planned_extractions=float(request.planned_extractions),
            )
            ledger.setdefault("monthly_budget_usd", request.monthly_budget_usd)
            self._add(totals_key, {"committed_usd": request.usd, "hold_margin_sq": request.margin_sq})
            return "held"

    def select_extractions(self, team_id: str, job_id: str, count: int) -> None:
        with self._lock:
            self.ledgers.setdefault((team_id, job_id), {})["selected_extractions"] = float(count)

    def resize_hold(self, change: HoldChange) -> bool:
        totals_key = (month_pk(change.team_id, change.month), TOTALS)
        with self._lock:
            ledger = self.ledgers.get((change.team_id, change.job_id))
            if ledger is None or "held_usd" not in ledger or "settled_at" in ledger:
                return False
            month_committed = self.items.get(totals_key, {}).get("committed_usd")
            limit = change.month_limit
            if limit is not None and month_committed is not None and month_committed > limit:
                return False
            ledger["held_usd"] = float(ledger["held_usd"] or 0.0) + change.usd
            ledger["hold_margin_sq"] = float(ledger.get("hold_margin_sq") or 0.0) + change.margin_sq
            self._add(totals_key, {"committed_usd": change.usd, "hold_margin_sq": change.margin_sq})
            return True

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
            margin_sq = float(ledger.get("hold_margin_sq") or 0.0)
            self._add(
                (month_pk(team_id, month), TOTALS), {"committed_usd": -released, "hold_margin_sq": -margin_sq}
            )
            return month, released
