"""Budgets under concurrency: does a team's monthly budget, and a job's `max_cost_usd`, hold when many
jobs start at once?

On the embedded runtime with metering on, against the loopback scholarly web of the e2e tests
(tests/e2e/scholarly_topic.py), it:

- submits N = 1, 5 and 20 rapid jobs at the same moment (one thread each) for a new team whose monthly
  budget is sized for N jobs at the quote's middle ((low + high) / 2; `--budget-usd` fixes it instead),
  waits until every accepted job has finished and its hold is settled, and prints how many were
  accepted (202) and refused (402), how they ended, the charged cost of the team's month and the
  overspend ratio (charged / budget) and the excess over the budget in steps (the largest step of its
  jobs): issue 31 asks for at least N - 1 accepted, every accepted job COMPLETED, at most one step over;
- submits 3 rapid jobs at once for a team without a monthly budget, each with `max_cost_usd` at a
  fraction of the quote's mean (`basis.mean_usd`), and prints the largest overrun of a job's cap in steps
  ((cost - max_cost_usd) / the job's largest step; <= 1 is the promise of docs/usage.md).

    .venv/bin/python -m bench.budget_concurrency [--budget-usd 0.01] [--concurrency 1 5 20] [--no-politeness]

With the project's real provider intervals unless `--no-politeness` (the jobs of a team then queue for
their turns at the providers: 20 at once take several minutes); about ten minutes on two shared cores.
"""

from __future__ import annotations

import os

# As `make run`: one BLAS thread, so that a step's CPU (what it is billed) includes its forward passes'.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi.testclient import TestClient

from bench.corpus_web import add_condition_options, describe_conditions, figure_printer
from bench.corpus_web.web import POLITENESS_SETTINGS
from bench.partial_causes import job_causes
from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.app import app
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from tests.e2e.scholarly_topic import GOAL, environment, serve, topic_papers
from tests.support.scholarly_web import ScholarlyWeb

JOB_TIMEOUT_SECONDS = 900.0


def _execute(client: TestClient, team_id: str, scope: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = client.post(
        "/api/agent/execute",
        json={"research_goal": GOAL, "scope_parameters": scope},
        headers={"x-team-id": team_id},
    )
    return response.status_code, response.json()


def _at_once(
    count: int, submit: Callable[[], tuple[int, dict[str, Any]]]
) -> list[tuple[int, dict[str, Any]]]:
    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(lambda _: submit(), range(count)))


def _settled(client: TestClient, team_id: str, job_id: str) -> dict[str, Any] | None:
    """The job's usage once it is terminal and its last step is recorded (hold settled), else None."""
    headers = {"x-team-id": team_id}
    status = client.get(f"/api/agent/status/{job_id}", headers=headers).json()
    if not JobStatus(status["status"]).terminal:
        return None
    usage = client.get(f"/api/usage/jobs/{job_id}", headers=headers)
    if usage.status_code != 200:
        return None
    body: dict[str, Any] = usage.json()
    if not body.get("final"):
        return None
    time.sleep(0.3)  # the month's totals are given the hold back just after the job's ledger settles
    causes: list[str] = []
    if status["status"] == "PARTIAL":
        results = client.get(f"/api/agent/results/{job_id}", headers=headers).json()
        causes = job_causes(status, results)
    return {
        **body,
        "status": status["status"],
        "failure_reason": status.get("failure_reason"),
        "causes": causes,
    }


def _wait(client: TestClient, team_id: str, job_ids: list[str]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + JOB_TIMEOUT_SECONDS
    done: dict[str, dict[str, Any]] = {}
    while len(done) < len(job_ids) and time.monotonic() < deadline:
        for job_id in job_ids:
            if job_id not in done and (usage := _settled(client, team_id, job_id)) is not None:
                done[job_id] = usage
        time.sleep(0.5)
    if len(done) < len(job_ids):
        raise SystemExit(
            f"jobs did not finish within {JOB_TIMEOUT_SECONDS:.0f} s: {set(job_ids) - set(done)}"
        )
    return [done[job_id] for job_id in job_ids]


def monthly_budget_run(client: TestClient, concurrency: int, budget: float) -> dict[str, Any]:
    from functions.teams.wiring import team_service

    team, _, _ = team_service().create_team(f"Bench team x{concurrency}", "basic")
    team_service().set_monthly_budget(team.team_id, budget)
    answers = _at_once(concurrency, lambda: _execute(client, team.team_id, {"discovery_depth": "rapid"}))
    accepted = [body["job_id"] for code, body in answers if code == 202]
    refused = [body for code, body in answers if code == 402]
    others = [code for code, _ in answers if code not in (202, 402)]
    jobs = _wait(client, team.team_id, accepted)
    month = client.get("/api/usage", headers={"x-team-id": team.team_id}).json()
    charged = float(month["aws_cost_usd"]["total_usd"])
    largest_step = max((float(job["max_step_cost_usd"]) for job in jobs), default=0.0)
    excess_steps = max(0.0, charged - budget) / largest_step if largest_step else 0.0
    return {
        "concurrency": concurrency,
        "accepted": len(accepted),
        "refused_402": len(refused),
        "other_status": others,
        "statuses": dict(Counter(job["status"] for job in jobs)),
        "failures": dict(
            Counter(str(job["failure_reason"])[:120] for job in jobs if job["status"] == "FAILED")
        ),
        "partial_causes": dict(Counter(cause[:100] for job in jobs for cause in job["causes"])),
        "budget_usd": round(budget, 6),
        "charged_usd": round(charged, 6),
        "overspend_ratio": round(charged / budget, 3),
        "excess_in_steps": round(excess_steps, 2),
        "committed_after_usd": month["budget"]["committed_usd"],
    }


def job_cap_run(client: TestClient, fraction: float, jobs: int = 3) -> dict[str, Any]:
    from functions.teams.wiring import team_service

    team, _, _ = team_service().create_team(f"Bench capped team {fraction}", "basic")
    _, quote = _execute(client, team.team_id, {"discovery_depth": "rapid"})
    _wait(client, team.team_id, [quote["job_id"]])
    cap = round(quote["cost_estimate"]["basis"]["mean_usd"] * fraction, 6)
    scope = {"discovery_depth": "rapid", "max_cost_usd": cap}
    answers = _at_once(jobs, lambda: _execute(client, team.team_id, scope))
    accepted = [body["job_id"] for code, body in answers if code == 202]
    usages = _wait(client, team.team_id, accepted)
    overruns = [
        max(0.0, float(u["cost_usd"]) - cap) / float(u["max_step_cost_usd"])
        for u in usages
        if float(u["max_step_cost_usd"]) > 0
    ]
    return {
        "max_cost_usd": cap,
        "quote_mean_usd": quote["cost_estimate"]["basis"]["mean_usd"],
        "jobs": len(accepted),
        "refused": len(answers) - len(accepted),
        "costs_usd": sorted(round(float(u["cost_usd"]), 6) for u in usages),
        "statuses": sorted(u["status"] for u in usages),
        "max_overrun_in_steps": round(max(overruns, default=0.0), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--budget-usd", type=float, help="the team's monthly budget (default: N jobs at the quote's middle)"
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 5, 20])
    parser.add_argument(
        "--cap-fractions",
        type=float,
        nargs="+",
        default=[0.7, 0.4],
        help="max_cost_usd as a share of the quote's mean",
    )
    add_condition_options(parser)
    args = parser.parse_args()
    figure = figure_printer(args.no_politeness)
    print(f"conditions: {describe_conditions(no_politeness=args.no_politeness, latency=False)}")
    started = time.monotonic()
    with ScholarlyWeb() as web:
        serve(web, topic_papers(12, off_topic=2))
        reset_workflow_settings_cache()
        env = environment(
            web,
            USAGE_METERING="true",
            RESEARCH_EXTRACT_MAX_CONCURRENCY="4",
            RESEARCH_EXTRACT_BUDGET_SECONDS="5",
        )
        if not args.no_politeness:  # the project's own provider intervals
            env = {name: value for name, value in env.items() if name not in POLITENESS_SETTINGS}
        with EmbeddedAws(extra_environment=env), TestClient(app) as client:
            from functions.teams.wiring import team_service

            probe, _, _ = team_service().create_team("Bench quote probe", "basic")
            _, quote = _execute(client, probe.team_id, {"discovery_depth": "rapid"})
            _wait(client, probe.team_id, [quote["job_id"]])
            low, high = quote["cost_estimate"]["low_usd"], quote["cost_estimate"]["high_usd"]
            figure(f"rapid job quote {low:.6f}-{high:.6f} USD, middle {(low + high) / 2:.6f}")
            for concurrency in args.concurrency:
                budget = args.budget_usd or concurrency * (low + high) / 2
                figure("monthly budget", monthly_budget_run(client, concurrency, budget), flush=True)
            for fraction in args.cap_fractions:
                figure("job cap", job_cap_run(client, fraction), flush=True)
    reset_workflow_settings_cache()
    figure(f"ran in {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
