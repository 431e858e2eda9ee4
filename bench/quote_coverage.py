"""Does the quote bracket the bill? `cost_estimate` against the recorded cost of real jobs, per depth.

    .venv/bin/python -m bench.quote_coverage [--split heldout dev] [--depths rapid focused ...]
                                             [--goals-per-depth 4] [--record steps.json]
                                             [--no-politeness] [--no-latency]
    .venv/bin/python -m bench.quote_coverage --calibrate steps.json

Every goal of the quality bench's split (bench/quality.py: the dev half calibrates, the held-out half
is reported) runs a real job at each depth, one after the other, on the embedded runtime with metering
on, against `bench.corpus_web` (the 20 real corpus papers and their PDFs, ~1000 distractors), with the
project's real provider intervals and a simulated network unless told otherwise. For each job it prints
the quote (`cost_estimate.low_usd` - `high_usd`) and what the job's ledger recorded once its last step
was metered; per depth, the share of jobs whose cost lies inside [low, high] (the quote promises 80 %),
the share below high (95 %), and how far outside the misses fall (cost / low below, cost / high above).

Goals are taken in an order that alternates their kinds (multi-concept, single, unanswerable), so a
small `--goals-per-depth` still mixes them. `--record` writes every job's plan, its cost and each of its
metered steps (step, seconds, cost) as JSON: the measurements `functions/metering/estimate.py`'s profile
is derived from (on the dev half only, see docs/usage.md).
"""

from __future__ import annotations

import os

# As `make run`: one BLAS thread, so that a step's CPU (what it is billed) includes its forward passes'.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import logging
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

from bench.corpus_web import CorpusMissing, CorpusWeb, add_condition_options, describe_conditions, literature
from bench.corpus_web.web import figure_printer
from bench.quality import GOALS, WINDOW_YEARS, Goal

DEPTHS = ("rapid", "focused", "comprehensive", "exhaustive")
JOB_TIMEOUT_SECONDS = 600.0
SETTLE_TIMEOUT_SECONDS = 30.0


@dataclass
class JobCost:
    depth: str
    goal_id: str
    split: str = ""
    job_id: str = ""
    status: str = "NOT_RUN"
    low_usd: float = 0.0
    high_usd: float = 0.0
    cost_usd: float = 0.0
    seconds: float = 0.0
    basis: dict[str, Any] = field(default_factory=dict)
    steps: list[dict[str, Any]] = field(default_factory=list)
    chased_selected: int | None = None  # sources the Chase step added to the extraction (None: no chase)

    @property
    def where(self) -> str:
        if self.cost_usd < self.low_usd:
            return "below"
        return "above" if self.cost_usd > self.high_usd else "inside"


class StepLog:
    """Every metered step of the run, by job: the recorder's `record_step`, wrapped."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_job: dict[str, list[dict[str, Any]]] = {}

    def install(self) -> None:
        from functions.metering.recorder import StepRun, UsageRecorder
        from functions.metering.usage import Cost

        original = UsageRecorder.record_step
        log = self

        def record_step(recorder: UsageRecorder, run: StepRun) -> Cost:
            cost = original(recorder, run)
            with log.lock:
                log.by_job.setdefault(run.job_id, []).append(
                    {"step": run.step, "seconds": round(run.duration_seconds, 4), "usd": cost.total_usd}
                )
            return cost

        setattr(UsageRecorder, "record_step", record_step)  # noqa: B010 (mypy: a method is read-only)


def interleaved(goals: list[Goal]) -> list[Goal]:
    """The goals alternating their kinds, each kind in the bench's order."""
    kinds: dict[str, list[Goal]] = {}
    for goal in goals:
        kinds.setdefault(goal.kind, []).append(goal)
    rounds = zip_longest(*kinds.values())
    return [goal for round_ in rounds for goal in round_ if goal is not None]


def _recorded_cost(client: Any, job_id: str) -> float | None:
    """The job's recorded cost once its last step (Finalize or MarkFailed) is metered, else None."""
    usage = client.get(f"/api/usage/jobs/{job_id}")
    if usage.status_code != 200:
        return None
    body = usage.json()
    return float(body["cost_usd"]) if body.get("final") else None


def _chased_selected(results: Any) -> int | None:
    """How many sources citation chasing added (the results' `citation_chasing.selected`), if it ran."""
    if isinstance(results, dict):
        chasing = results.get("citation_chasing")
        if isinstance(chasing, dict) and isinstance(chasing.get("selected"), list):
            return len(chasing["selected"])
        values: Any = results.values()
    elif isinstance(results, list):
        values = results
    else:
        return None
    found = (_chased_selected(value) for value in values)
    return next((count for count in found if count is not None), None)


def run_job(client: Any, goal: Goal, depth: str, steps: StepLog) -> JobCost:
    from functions.orchestrate.models import JobStatus

    job = JobCost(depth, goal.goal_id)
    started = time.perf_counter()
    scope = {"discovery_depth": depth, "temporal_boundary": {"publication_window_years": WINDOW_YEARS}}
    answer = client.post("/api/agent/execute", json={"research_goal": goal.text, "scope_parameters": scope})
    if answer.status_code != 202:
        job.status = f"HTTP {answer.status_code}"
        return job
    body = answer.json()
    job.job_id, estimate = body["job_id"], body["cost_estimate"]
    job.low_usd, job.high_usd, job.basis = estimate["low_usd"], estimate["high_usd"], estimate["basis"]
    deadline = time.monotonic() + JOB_TIMEOUT_SECONDS
    while not JobStatus(status := client.get(f"/api/agent/status/{job.job_id}").json()["status"]).terminal:
        if time.monotonic() > deadline:
            job.status = f"{status} (timed out)"
            return job
        time.sleep(0.2)
    job.status = status
    settle_by = time.monotonic() + SETTLE_TIMEOUT_SECONDS
    while (cost := _recorded_cost(client, job.job_id)) is None and time.monotonic() < settle_by:
        time.sleep(0.2)
    job.cost_usd = cost or 0.0
    job.seconds = time.perf_counter() - started
    job.chased_selected = _chased_selected(client.get(f"/api/agent/results/{job.job_id}").json())
    with steps.lock:
        job.steps = list(steps.by_job.get(job.job_id, []))
    return job


def _line(job: JobCost) -> str:
    return (
        f"  {job.depth:<13} {job.goal_id:<20} {job.status:<10} quote {job.low_usd:.6f}-{job.high_usd:.6f}"
        f"  cost {job.cost_usd:.6f}  {job.where:<6} {job.seconds:5.1f} s  job {job.job_id}"
    )


def summary(jobs: list[JobCost], depth: str) -> str:
    ran = [job for job in jobs if job.depth == depth and job.cost_usd > 0]
    if not ran:
        return f"  {depth:<13} no job recorded a cost"
    inside = sum(1 for job in ran if job.where == "inside")
    below_high = sum(1 for job in ran if job.cost_usd <= job.high_usd)
    under = [job.cost_usd / job.low_usd for job in ran if job.where == "below"]
    over = [job.cost_usd / job.high_usd for job in ran if job.where == "above"]
    misses = ", ".join(
        [f"{ratio:.2f}x low" for ratio in sorted(under)] + [f"{ratio:.2f}x high" for ratio in sorted(over)]
    )
    middle = sum(job.cost_usd / ((job.low_usd + job.high_usd) / 2) for job in ran) / len(ran)
    return (
        f"  {depth:<13} jobs {len(ran):>2}  inside [low, high] {inside}/{len(ran)} = {100 * inside / len(ran):3.0f}%"
        f"  below high {below_high}/{len(ran)} = {100 * below_high / len(ran):3.0f}%"
        f"  cost / middle {middle:.2f}  misses: {misses or '-'}"
    )


def run(args: argparse.Namespace) -> list[JobCost]:
    from fastapi.testclient import TestClient

    from functions.local_runtime.aws import EmbeddedAws
    from functions.orchestrate.config import reset_workflow_settings_cache

    figure = figure_printer(args.no_politeness)
    print(f"conditions: {describe_conditions(no_politeness=args.no_politeness, latency=not args.no_latency)}")
    print(f"depths {args.depths}; {args.goals_per_depth} goals per depth and split; cores {os.cpu_count()}")
    site = CorpusWeb(literature(redate_years=WINDOW_YEARS), latency=not args.no_latency)
    site.start()
    steps = StepLog()
    jobs: list[JobCost] = []
    try:
        from functions.orchestrate.app import app

        reset_workflow_settings_cache()
        environment = site.environment(no_politeness=args.no_politeness, USAGE_METERING="true")
        with EmbeddedAws(extra_environment=environment), TestClient(app) as client:
            steps.install()
            warm_up = run_job(client, GOALS[0], "rapid", steps)  # loads the embedder, parser...: not counted
            print(f"warm-up job (not counted): {warm_up.status}, {warm_up.seconds:.0f} s", flush=True)
            for split in args.split:
                goals = interleaved([goal for goal in GOALS if goal.split == split])[: args.goals_per_depth]
                print(f"split {split}: goals {[goal.goal_id for goal in goals]}", flush=True)
                for depth in args.depths:
                    for goal in goals:
                        jobs.append(run_job(client, goal, depth, steps))
                        jobs[-1].split = split
                        figure(_line(jobs[-1]), flush=True)
        reset_workflow_settings_cache()
    finally:
        site.stop()
    return jobs


def _sd(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def calibrate(recorded: list[dict[str, Any]]) -> None:
    """Print the step profiles and the job shape of functions/metering/estimate.py from recorded dev jobs.

    A job's load factor is its Lambda GB-seconds against what its steps take on average (each step at its
    kind's mean seconds); LOAD_SD is that factor's spread over the jobs, and each kind's seconds spread is
    taken after dividing every step by its job's factor, so that the two are not counted twice."""
    from functions.metering.usage import step_memory_mb

    jobs = [job for job in recorded if job["steps"] and job["cost_usd"] > 0]
    if any(job.get("split") != "dev" for job in jobs):
        raise SystemExit("calibrate on dev goals only: the held-out half stays held out")
    seconds: dict[str, list[float]] = {}
    for job in jobs:
        for step in job["steps"]:
            seconds.setdefault(step["step"], []).append(step["seconds"])
    means = {kind: statistics.fmean(values) for kind, values in seconds.items()}
    factors: list[float] = []
    normalised: dict[str, list[float]] = {}
    for job in jobs:
        weighted = [(step_memory_mb(s["step"]), s) for s in job["steps"] if s["step"] in means]
        expected = sum(memory * means[s["step"]] for memory, s in weighted)
        factor = sum(memory * s["seconds"] for memory, s in weighted) / expected
        factors.append(factor)
        for _, s in weighted:
            normalised.setdefault(s["step"], []).append(s["seconds"] / factor)
    print(f"calibration from {len(jobs)} dev jobs")
    for kind, values in sorted(seconds.items()):
        print(
            f'    "{kind}": seconds mean {means[kind]:.3f}, sd {_sd(normalised[kind]):.3f}  ({len(values)} steps)'
        )
    print(f"LOAD_SD = {_sd(factors):.3f}  (job factors {min(factors):.2f}-{max(factors):.2f})")
    # A job's Search iterations together take time in proportion to its planned queries.
    phase = [
        (sum(s["seconds"] for s in job["steps"] if s["step"] == "search"), job["basis"]["queries"])
        for job in jobs
    ]
    per_query = sum(seconds for seconds, _ in phase) / sum(queries for _, queries in phase)
    ratios = [seconds / (per_query * queries) for seconds, queries in phase]
    print(f"SEARCH_SECONDS_PER_QUERY = {per_query:.4f}, SEARCH_PHASE_SD = {_sd(ratios):.3f}")
    for kind in ("search", "screen"):
        counts = [sum(1 for s in job["steps"] if s["step"] == kind) for job in jobs]
        print(
            f'    "{kind}": count mean {statistics.fmean(counts):.3f}, sd {_sd(counts):.3f}, most {max(counts)}'
        )
    # How many sources a goal's screening selects: the share of jobs that extracted none, and the
    # others' count from the jobs whose target did not cap it (above the most any dev job extracted).
    extracted = [(sum(1 for s in job["steps"] if s["step"] == "extract"), job) for job in jobs]
    most = max(count for count, _ in extracted)
    free = [count for count, job in extracted if job["basis"]["target_sources"] > most and count]
    zero_share = sum(1 for count, _ in extracted if not count) / len(extracted)
    if free:
        print(
            f'    "extract": zero_share {zero_share:.3f}; else count mean {statistics.fmean(free):.3f}, '
            f"sd {_sd(free):.3f} ({len(free)} uncapped jobs)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--split", nargs="+", choices=["dev", "heldout"], default=["heldout"])
    parser.add_argument("--depths", nargs="+", choices=DEPTHS, default=list(DEPTHS))
    parser.add_argument("--goals-per-depth", type=int, default=4)
    parser.add_argument("--record", type=Path, help="write each job's plan, cost and metered steps as JSON")
    parser.add_argument(
        "--calibrate", type=Path, help="print the estimate's profile from a --record of dev jobs"
    )
    add_condition_options(parser)
    args = parser.parse_args()
    if args.calibrate:
        calibrate(json.loads(args.calibrate.read_text()))
        return
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    started = time.perf_counter()
    try:
        jobs = run(args)
    except CorpusMissing as exc:
        sys.exit(f"bench.quote_coverage: {exc}")
    figure = figure_printer(args.no_politeness)
    for split in args.split:
        figure(
            f"\nquote coverage on the {split} goals (the quote promises >= 80% inside, >= 95% below high):"
        )
        for depth in args.depths:
            figure(summary([job for job in jobs if job.split == split], depth))
    if args.record:
        args.record.write_text(json.dumps([vars(job) for job in jobs], indent=1))
    figure(f"total wall {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
