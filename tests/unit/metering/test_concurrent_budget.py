"""A team's monthly budget under simultaneous submissions: each accepted job holds its share of the
month in one conditional write (DynamoDB on moto with the embedded runtime's per-request lock, and the
in-memory twin), so N jobs sent at once never pass the same remainder; a job's hold caps its running
units and is settled to what it spent by its last step, or given back when it never runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from functions.common.storage import InMemoryBlobStore
from functions.metering import wiring
from functions.metering.budget import Budgets
from functions.metering.estimate import (
    HIGH_QUANTILE_Z,
    SKIPPED_PROFILE,
    STEP_PROFILES,
    CostModel,
    Unit,
    remaining_spread,
)
from functions.metering.meter import Meter, metering
from functions.metering.prices import DEFAULT_PRICES
from functions.metering.recorder import StepRun, UsageRecorder
from functions.metering.store import TOTALS, UsageKey, UsageStore
from functions.metering.usage import step_memory_mb
from functions.orchestrate.app import app
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.jobs import JobService
from functions.orchestrate.routes import get_job_service
from functions.research.planning.request import ExecuteRequest
from tests.support.fakes.jobs import InMemoryJobStore, RecordingStarter
from tests.support.fakes.usage_store import InMemoryUsageStore

TEAM = "team-alpha"
GOAL = "What are recent advances in transformer architectures?"
MODEL = CostModel(DEFAULT_PRICES, llm_configured=False)
SUBMISSIONS = 20
FITS = 3  # the monthly budget fits this many rapid quotes at their high figure (more hold a pooled margin)


def _month() -> str:
    return datetime.now(UTC).strftime("%Y-%m")


RAPID = ExecuteRequest.model_validate(
    {"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}}
)


def _rapid_quote() -> dict[str, Any]:
    service = JobService(
        jobs=InMemoryJobStore(), starter=RecordingStarter(), artifacts=InMemoryBlobStore(), costs=None
    )
    plan, _, _ = service.records.describe(RAPID)
    return MODEL.quote(plan.to_dict())


QUOTE = _rapid_quote()
BUDGET = round(FITS * QUOTE["high_usd"], 6)


class FailingStarter(RecordingStarter):
    def start(self, name: str, payload: dict[str, Any]) -> str:
        raise RuntimeError("Step Functions is unavailable")


def _service(store: UsageStore, starter: RecordingStarter | None = None) -> JobService:
    budgets = Budgets(store, MODEL, team_budget=lambda team: BUDGET)
    return JobService(
        jobs=InMemoryJobStore(),
        starter=starter or RecordingStarter(),
        artifacts=InMemoryBlobStore(),
        settings=WorkflowSettings(),
        costs=budgets,
    )


@pytest.fixture
def api(store: UsageStore, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, JobService]]:
    monkeypatch.setattr(wiring, "request_usage_store", lambda: InMemoryUsageStore())
    service = _service(store)
    app.dependency_overrides[get_job_service] = lambda: service
    with TestClient(app) as client:
        yield client, service
    app.dependency_overrides.clear()


def _at_once(count: int, send: Any) -> list[Any]:
    """`count` calls released together (a barrier), each on its own thread."""
    barrier = threading.Barrier(count)

    def one(_: int) -> Any:
        barrier.wait()
        return send()

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(one, range(count)))


def _execute(client: TestClient, headers: dict[str, str] | None = None) -> Any:
    return client.post(
        "/api/agent/execute",
        json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}},
        headers={"x-team-id": TEAM, **(headers or {})},
    )


def _committed(store: UsageStore) -> float:
    totals = store.get(UsageKey(TEAM, _month(), TOTALS))
    return totals.count("committed_usd") if totals is not None else 0.0


def test_simultaneous_submissions_never_pass_the_same_remainder(
    api: tuple[TestClient, JobService], store: UsageStore
) -> None:
    client, _ = api
    responses = _at_once(SUBMISSIONS, lambda: _execute(client))
    codes = sorted(response.status_code for response in responses)
    accepted = codes.count(202)
    assert accepted >= FITS and codes.count(402) == SUBMISSIONS - accepted, codes
    for refused in (r.json() for r in responses if r.status_code == 402):
        assert refused["error"] == "BUDGET_EXCEEDED" and refused["monthly_budget_usd"] == BUDGET
        assert refused["remaining_budget_usd"] < refused["cost_estimate"]["low_usd"]
    assert _committed(store) <= BUDGET + 1e-9  # what the accepted jobs hold, together


def test_a_replayed_submission_holds_once(api: tuple[TestClient, JobService], store: UsageStore) -> None:
    client, _ = api
    responses = _at_once(10, lambda: _execute(client, {"Idempotency-Key": "same-request"}))
    assert {r.status_code for r in responses} <= {200, 201, 202}
    assert len({r.json()["job_id"] for r in responses}) == 1
    assert _committed(store) == pytest.approx(QUOTE["high_usd"])  # one hold, not ten


def test_a_job_that_cannot_start_gives_its_hold_back(store: UsageStore) -> None:
    service = _service(store, FailingStarter())
    with pytest.raises(Exception, match="could not be started"):
        service.submit(TEAM, RAPID)
    assert _committed(store) == pytest.approx(0.0)


def _step(store: UsageStore, job_id: str, step: str, seconds: float, *, last: bool = False) -> float:
    recorder = UsageRecorder(store, DEFAULT_PRICES)
    meter = Meter()
    meter.count_call("dynamodb", "UpdateItem")
    run = StepRun(TEAM, job_id, step, seconds, 1024, meter, "FAILED" if last else None, closes_job=last)
    return recorder.record_step(run).total_usd


def test_the_last_step_settles_the_hold_to_what_the_job_spent(store: UsageStore) -> None:
    service = _service(store)
    job_id = service.submit(TEAM, RAPID)[0]["job_id"]
    held = _committed(store)
    assert held == pytest.approx(QUOTE["high_usd"])
    spent = _step(store, job_id, "plan", 0.5)
    assert _committed(store) == pytest.approx(held)  # within the hold: the month already counts it
    spent += _step(store, job_id, "fail", 0.2, last=True)  # MarkFailed: the rest is given back
    assert _committed(store) == pytest.approx(spent)
    _step(store, job_id, "fail", 0.2, last=True)  # a retried last step settles nothing twice
    assert _committed(store) > spent


def _concurrent_extractions(budgets: Budgets, job_id: str, meter: Meter) -> int:
    def admit() -> bool:
        with metering(meter):
            return budgets.admit(TEAM, job_id, "extract") is None

    return sum(_at_once(40, admit))


def test_a_held_jobs_concurrent_units_stay_within_its_hold_when_the_month_has_no_more(
    store: UsageStore,
) -> None:
    """A Map's iterations asking at once: reservations on the job's ledger only, capped by the hold
    when the month has nothing left to grow it."""
    budgets = Budgets(store, MODEL, team_budget=lambda team: QUOTE["high_usd"])
    share = budgets.hold(TEAM, "job-1", QUOTE)
    assert share == pytest.approx(QUOTE["high_usd"])  # alone in its month: the quote's high figure
    budgets.open_job(TEAM, "job-1", {"discovery_depth": "rapid"})
    meter = Meter()
    admitted = _concurrent_extractions(budgets, "job-1", meter)
    unit, closing = MODEL.unit_cost("extract"), MODEL.closing_cost("extract")
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and admitted >= 1
    assert ledger.committed_usd == pytest.approx(admitted * unit)
    assert ledger.committed_usd <= QUOTE["high_usd"] - closing + 1e-9
    assert all(reservation.month is None for reservation in meter.reservations)
    assert _committed(store) == pytest.approx(share)  # the month holds the share, no more


def test_a_short_hold_grows_from_what_the_month_has_left_and_never_past_it(store: UsageStore) -> None:
    budget = 2 * QUOTE["high_usd"]
    budgets = Budgets(store, MODEL, team_budget=lambda team: budget)
    shares = [budgets.hold(TEAM, job_id, QUOTE) for job_id in ("job-1", "job-2")]
    assert shares[0] == pytest.approx(QUOTE["high_usd"])
    assert shares[1] is not None and QUOTE["low_usd"] <= shares[1] < QUOTE["high_usd"]  # a pooled margin
    budgets.open_job(TEAM, "job-2", {"discovery_depth": "rapid"})
    admitted = _concurrent_extractions(budgets, "job-2", Meter())
    ledger = store.job(TEAM, "job-2")
    unit, closing = MODEL.unit_cost("extract"), MODEL.closing_cost("extract")
    assert ledger is not None and ledger.held_usd is not None
    assert ledger.held_usd > shares[1] and admitted * unit + closing > shares[1]  # grown by what it lacked
    assert ledger.committed_usd == pytest.approx(admitted * unit)
    assert ledger.committed_usd + closing <= ledger.held_usd + 1e-9
    assert _committed(store) <= budget + 1e-9  # the two holds together never pass the month


def _record(store: UsageStore, job_id: str, step: str, seconds: float) -> None:
    meter = Meter()
    meter.count_call("dynamodb", "UpdateItem")
    UsageRecorder(store, DEFAULT_PRICES).record_step(StepRun(TEAM, job_id, step, seconds, 1024, meter))


def test_each_recorded_step_trues_the_hold_down_to_what_the_job_may_still_need(store: UsageStore) -> None:
    budgets = Budgets(store, MODEL, team_budget=lambda team: BUDGET)
    share = budgets.hold(TEAM, "job-1", QUOTE)
    assert share is not None
    budgets.open_job(TEAM, "job-1", {"discovery_depth": "rapid"})
    _record(store, "job-1", "plan", 0.1)
    released = budgets.true_up(TEAM, "job-1")
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.held_usd is not None
    planned = QUOTE["basis"]["extractions"]
    remaining = MODEL.remaining_cost(ledger.counters, planned, high=False)
    # alone, the job keeps its whole remaining margin (95 %): its portfolio is itself
    margin = HIGH_QUANTILE_Z * remaining_spread(MODEL, ledger.counters, planned)
    expected_release = max(0.0, share - ledger.cost_usd - remaining - margin)
    assert released == pytest.approx(expected_release)
    assert ledger.hold_margin_sq == pytest.approx(margin**2)
    assert ledger.held_usd == pytest.approx(share - released)
    assert _committed(store) == pytest.approx(share - released)  # the month got it back at once
    for step in ("search", "screen", *["extract"] * 10, "synthesize"):
        _record(store, "job-1", step, MODEL.profiles[step].seconds_mean)
        budgets.true_up(TEAM, "job-1")
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.held_usd is not None
    finalize = MODEL.step_cost("finalize", high=True)  # all that is left: no more than it is kept
    assert ledger.held_usd <= ledger.cost_usd + finalize + 1e-9
    assert _committed(store) == pytest.approx(max(ledger.held_usd, ledger.cost_usd))  # spent past the hold


@pytest.mark.parametrize("jobs", [3, 5])
def test_n_jobs_sent_at_once_on_a_budget_for_n_at_the_middle(
    api: tuple[TestClient, JobService], store: UsageStore, monkeypatch: pytest.MonkeyPatch, jobs: int
) -> None:
    """Issue 31: a budget sized for N jobs at the quote's middle admits at least N - 1 of them (for as
    many as the pooled margin allows: see docs/usage.md)."""
    client, service = api
    budget = jobs * (QUOTE["low_usd"] + QUOTE["high_usd"]) / 2
    assert service.costs is not None
    monkeypatch.setattr(service.costs, "team_budget", lambda team: budget)
    codes = [response.status_code for response in _at_once(jobs, lambda: _execute(client))]
    assert codes.count(202) >= jobs - 1, codes
    assert _committed(store) <= budget + 1e-9


# --- a job's max_cost_usd with a Map's iterations asking at once --------------------------------------


class SimulatedJob:
    """A rapid job's steps, in the workflow's order, each recorded as the metering hook records it: the
    units ask the budget first (a refused one still runs, briefly, to say so), the screening hands the
    extraction Map only the sources the budget can start, and every step takes `slowness` times its
    profile's high duration (a loaded machine)."""

    def __init__(self, store: UsageStore, budgets: Budgets, job_id: str, slowness: float) -> None:
        self.store, self.budgets, self.job_id, self.slowness = store, budgets, job_id, slowness
        self.recorder = UsageRecorder(store, DEFAULT_PRICES)
        self._finished: dict[str, int] = {}
        self.admitted: dict[str, int] = {}
        self._lock = threading.Lock()

    def step(self, step: str, *, unit: Unit | None = None, total: int = 1) -> None:
        meter = Meter()
        admitted = True
        if unit is not None:
            with self._lock:
                pending = total - self._finished.get(step, 0) - 1
            with metering(meter):
                refusal = self.budgets.admit(TEAM, self.job_id, unit, pending=max(0, pending))
                admitted = refusal is None
        profile = STEP_PROFILES[step] if admitted else SKIPPED_PROFILE
        for operation, count in (
            ("PutObject", profile.s3_tier1_requests),
            ("GetObject", profile.s3_tier2_requests),
        ):
            for _ in range(round(count)):
                meter.count_call("s3", operation)
        for operation, count in (
            ("UpdateItem", profile.dynamodb_write_requests),
            ("GetItem", profile.dynamodb_read_requests),
        ):
            for _ in range(round(count)):
                meter.count_call("dynamodb", operation)
        seconds = profile.seconds_high * self.slowness
        run = StepRun(
            TEAM, self.job_id, step, seconds, step_memory_mb(step), meter, closes_job=step == "finalize"
        )
        self.recorder.record_step(run)
        with self._lock:
            self._finished[step] = self._finished.get(step, 0) + 1
            self.admitted[step] = self.admitted.get(step, 0) + int(admitted)

    def map(self, step: str, unit: Unit, items: int, concurrency: int = 4) -> None:
        starting = min(concurrency, items)
        barrier = threading.Barrier(max(1, starting))

        def iteration(index: int) -> None:
            if index < starting:
                barrier.wait()  # the Map's first iterations start together
            self.step(step, unit=unit, total=items)

        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            list(pool.map(iteration, range(items)))

    def run(self) -> None:
        self.step("plan")
        self.map("search", "search", 5)
        selected = 10 if self.admitted.get("search") else 0  # nothing searched: nothing found
        with metering(Meter()):  # the screening asks before its own cost is recorded
            affordable = self.budgets.affordable_extractions(TEAM, self.job_id, selected)
        self.step("screen")
        self.map("extract", "extract", affordable)
        self.step("synthesize", unit="synthesize")
        self.step("finalize")


@pytest.mark.parametrize("slowness", [1.0, 2.0, 4.0])
@pytest.mark.parametrize("fraction", [0.4, 0.7])  # of the least a job costs, above it
def test_a_jobs_cap_is_passed_by_at_most_one_step(
    store: UsageStore, slowness: float, fraction: float
) -> None:
    cap = round(MODEL.least_job_cost() * (1 + fraction), 6)
    budgets = Budgets(store, MODEL, team_budget=lambda team: None)
    budgets.open_job(TEAM, "job-1", {"discovery_depth": "rapid", "max_cost_usd": cap})
    SimulatedJob(store, budgets, "job-1", slowness).run()
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None
    assert ledger.cost_usd > cap * 0.5  # it did work up to its cap...
    assert ledger.cost_usd <= cap + ledger.max_step_usd, (
        ledger.cost_usd,
        cap,
        ledger.max_step_usd,
    )  # ...and no more
    assert ledger.committed_usd == pytest.approx(ledger.cost_usd)  # every reservation settled


def test_a_cap_below_what_the_job_costs_doing_nothing_is_refused_at_submission(
    api: tuple[TestClient, JobService], store: UsageStore
) -> None:
    client, _ = api
    least = MODEL.least_job_cost()
    response = client.post(
        "/api/agent/execute",
        json={
            "research_goal": GOAL,
            "scope_parameters": {"discovery_depth": "rapid", "max_cost_usd": least / 2},
        },
        headers={"x-team-id": TEAM},
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"] == "INVALID_INPUT" and body["field"] == "scope_parameters.max_cost_usd"
    assert "even if its budget refuses every search" in body["message"]
    assert _committed(store) == 0.0  # nothing held for it


def test_the_true_up_keeps_the_extractions_the_screening_started(store: UsageStore) -> None:
    budgets = Budgets(store, MODEL, team_budget=lambda team: BUDGET)
    assert budgets.hold(TEAM, "job-1", QUOTE) is not None
    budgets.open_job(TEAM, "job-1", {"discovery_depth": "rapid"})
    for step in ("plan", "search"):
        _record(store, "job-1", step, MODEL.profiles[step].seconds_mean)
    with metering(Meter()):
        started = budgets.affordable_extractions(TEAM, "job-1", 9)
    _record(store, "job-1", "screen", MODEL.profiles["screen"].seconds_mean)
    budgets.true_up(TEAM, "job-1")
    ledger = store.job(TEAM, "job-1")
    assert ledger is not None and ledger.held_usd is not None
    assert started == ledger.selected_extractions == 9
    extract = MODEL.step_cost("extract", high=False)
    assert ledger.held_usd >= ledger.cost_usd + 9 * extract  # every started extraction still covered
