"""A team's usage for one month, as the API shows it (JSON) and as charge-back reads it (CSV)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from functions.common.errors import InvalidInput, NotFound
from functions.metering.budget import Budgets, month_of, utc_now
from functions.metering.prices import PriceTable
from functions.metering.store import (
    JOB_PREFIX,
    JOBS_PREFIX,
    ROUTE_PREFIX,
    TOTALS,
    UsageItem,
    UsageStore,
)
from functions.metering.usage import DEFERRAL_PREFIX, TERMINAL_STEPS, Cost, Quantities

MONTH_PATTERN = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
CSV_COLUMNS = ("month", "team_id", "metric", "dimension", "quantity", "unit", "cost_usd")
QUANTITY_UNITS = {
    "lambda_gb_seconds": "GB-second",
    "lambda_requests": "request",
    "sfn_transitions": "state transition",
    "s3_tier1_requests": "request",
    "s3_tier2_requests": "request",
    "dynamodb_write_requests": "request",
    "dynamodb_read_requests": "request",
    "llm_tokens_in": "token",
    "llm_tokens_out": "token",
}


def parse_month(raw: str | None, now: datetime) -> str:
    """`YYYY-MM`, default the current (UTC) month; InvalidInput otherwise."""
    if raw is None or raw == "":
        return month_of(now)
    if not MONTH_PATTERN.match(raw):
        raise InvalidInput("month must be YYYY-MM, e.g. 2026-05", field="month")
    return raw


def _int(value: float) -> int:
    return round(value)


@dataclass
class UsageReports:
    store: UsageStore
    prices: PriceTable
    budgets: Budgets | None = None
    clock: Callable[[], datetime] = utc_now

    def month(self, team_id: str, raw_month: str | None) -> dict[str, Any]:
        month = parse_month(raw_month, self.clock())
        items = self.store.month(team_id, month)
        totals = next((item for item in items if item.dimension == TOTALS), UsageItem(TOTALS))
        routes = [
            {
                "route": item.dimension.removeprefix(ROUTE_PREFIX),
                "requests": _int(item.count("requests")),
                "client_errors": _int(item.count("client_errors")),
                "server_errors": _int(item.count("server_errors")),
            }
            for item in items
            if item.dimension.startswith(ROUTE_PREFIX)
        ]
        jobs_by_kind = []
        for item in items:
            if item.dimension.startswith(JOBS_PREFIX):
                depth, _, outcome = item.dimension.removeprefix(JOBS_PREFIX).partition("#")
                jobs_by_kind.append({"depth": depth, "outcome": outcome, "jobs": _int(item.count("jobs"))})
        jobs = [self._job(item) for item in items if item.dimension.startswith(JOB_PREFIX)]
        report: dict[str, Any] = {
            "team_id": team_id,
            "month": month,
            "requests_total": sum(route["requests"] for route in routes),
            "requests_by_route": routes,
            "jobs_by_depth_and_outcome": jobs_by_kind,
            "sources_fetched": _int(totals.count("sources_fetched")),
            "sources_parsed": _int(totals.count("sources_parsed")),
            "sources_failed": _int(totals.count("sources_failed")),
            "llm_tokens_in": _int(totals.count("llm_tokens_in")),
            "llm_tokens_out": _int(totals.count("llm_tokens_out")),
            "aws_cost_usd": Cost.from_counters(totals.counters).to_dict(),
            "usage": _quantities(totals),
            "jobs": sorted(jobs, key=lambda job: -job["cost_usd"]),
            "prices": {"as_of": self.prices.as_of, "region": self.prices.region},
        }
        if self.budgets is not None and month == month_of(self.clock()):
            report["budget"] = self.budgets.monthly_status(team_id)
        return report

    def job(self, team_id: str, job_id: str) -> dict[str, Any]:
        """One job's whole usage and cost so far (its ledger); NotFound for an unknown job, another
        team's included."""
        ledger = self.store.job(team_id, job_id)
        if ledger is None:
            raise NotFound(f"no usage recorded for job {job_id}")
        item = UsageItem(JOB_PREFIX + job_id, ledger.counters)
        closed = any(ledger.counters.get(f"steps_{step}") for step in TERMINAL_STEPS)
        return {
            **self._job(item),
            # its last step (Finalize or MarkFailed) is recorded and its hold settled: the whole bill
            "final": closed and (ledger.held_usd is None or ledger.settled),
            "depth": ledger.depth,
            "max_cost_usd": ledger.max_cost_usd,
            "monthly_budget_usd": ledger.monthly_budget_usd,
            "committed_usd": round(ledger.committed_usd, 8),
            "max_step_cost_usd": round(ledger.max_step_usd, 8),
        }

    @staticmethod
    def _job(item: UsageItem) -> dict[str, Any]:
        cost = Cost.from_counters(item.counters)
        steps = {
            name.removeprefix("steps_"): _int(value)
            for name, value in sorted(item.counters.items())
            if name.startswith("steps_")
        }
        deferred = {
            name.removeprefix(DEFERRAL_PREFIX): _int(value)
            for name, value in sorted(item.counters.items())
            if name.startswith(DEFERRAL_PREFIX)
        }
        return {
            "job_id": item.dimension.removeprefix(JOB_PREFIX),
            "depth": _first(item.labels.get("depth")),
            "outcome": _first(item.labels.get("outcome")),
            "cost_usd": round(cost.total_usd, 8),
            "cost": cost.to_dict(),
            "usage": _quantities(item),
            "steps": steps,
            # attempts that handed a wait for an upstream's turn to the state machine (billed, no step)
            "deferred": deferred,
            "sources_fetched": _int(item.count("sources_fetched")),
            "sources_parsed": _int(item.count("sources_parsed")),
        }

    def csv(self, team_id: str, raw_month: str | None) -> str:
        """One row per metric: requests by route, jobs by depth and outcome, sources, every billed
        quantity, the cost by service, and each job's cost."""
        report = self.month(team_id, raw_month)
        month = report["month"]
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(CSV_COLUMNS)

        def row(
            metric: str, dimension: str, quantity: float | int | str, unit: str, cost: float | str = ""
        ) -> None:
            writer.writerow([month, team_id, metric, dimension, quantity, unit, cost])

        for route in report["requests_by_route"]:
            row("requests", route["route"], route["requests"], "request")
        for kind in report["jobs_by_depth_and_outcome"]:
            row("jobs", f"{kind['depth']}/{kind['outcome']}", kind["jobs"], "job")
        for name in ("sources_fetched", "sources_parsed", "sources_failed"):
            row(name, "", report[name], "source")
        for name, value in report["usage"].items():
            row(name, "", value, QUANTITY_UNITS.get(name, ""))
        costs = report["aws_cost_usd"]
        for part in ("lambda_usd", "step_functions_usd", "s3_usd", "dynamodb_usd", "llm_usd"):
            row("cost_usd", part.removesuffix("_usd"), "", "USD", f"{costs[part]:.8f}")
        row("cost_usd", "total", "", "USD", f"{costs['total_usd']:.8f}")
        for job in report["jobs"]:
            row("job_cost_usd", job["job_id"], "", "USD", f"{job['cost_usd']:.8f}")
        return buffer.getvalue()


def _first(values: list[str] | None) -> str | None:
    return values[0] if values else None


def _quantities(item: UsageItem) -> dict[str, float | int]:
    quantities = Quantities.from_counters(item.counters)
    values: dict[str, float | int] = {}
    for name in QUANTITY_UNITS:
        value = getattr(quantities, name)
        values[name] = round(value, 6) if isinstance(value, float) else value
    return values
