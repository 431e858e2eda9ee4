"""Benchmark: research jobs under the real web's limits, alone and many at once, from three teams.

    .venv/bin/python -m bench.concurrency [--jobs 1,10,50] [--no-politeness] [--no-latency]
                                          [--timeout 900] [--json PATH]

The local runtime (`python -m functions.local_runtime`, what `make run` serves) runs as a subprocess on
loopback with `AUTH=required`; three teams are onboarded through `/admin/teams` and share the jobs
70 / 20 / 10 % (team A most of them). Every upstream is `bench.corpus_web` in this process: the four
search APIs over the 20 real corpus papers and ~1000 real distractors, the real PDFs, with simulated
latency (0.3-1.5 s per API call, 1-4 s per PDF; `--no-latency` answers at once) and the project's real
default provider intervals (`--no-politeness` zeroes them). The header says which.

The goals are `bench.quality`'s answerable ones (fixed before any tuning), cycled: team t's k-th job
asks goal (offset_t + k), so each team's first job always asks the same goal. First each team runs that
first job alone (its solo time, on a fresh runtime, one job at a time); then, for each count in
`--jobs`, a fresh runtime (no cache carried over) gets that many `rapid` jobs submitted at once.

Per run: status counts and the causes of every non-COMPLETED status (`bench.partial_causes`), p50/p95
job time (submit to terminal, polled every second), upstream requests per job per provider and the
smallest gap between two requests to one provider and the most requests open at once (all as the web
saw them), search cache and coalescing hits when the results carry `search_stats` (n/a otherwise), and
each team's median job time against its solo time. A run stops by itself after `--timeout` seconds and
lists the jobs that were not terminal by then.

`--repeat N` makes each solo run and each concurrent run N times: a team's solo time is then the median
of its N solo jobs, and after the N runs of a count a pooled line gives each team's median over all its
jobs of those runs against it (one job time and one solo time vary by ±15 % from run to run with the
random latency, so a single run's ratio is a noisy figure for the small team's one job).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import logging
import math
import os
import secrets
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from bench.corpus_web import (
    CorpusMissing,
    CorpusWeb,
    Figure,
    add_condition_options,
    describe_conditions,
    figure_printer,
    literature,
    project_intervals,
)
from bench.load import free_port, stop_runtime, wait_ready
from bench.partial_causes import job_causes
from bench.quality import DEPTH, GOALS, WINDOW_YEARS, Goal

ROOT = Path(__file__).resolve().parent.parent
TERMINAL = {"COMPLETED", "PARTIAL", "FAILED", "REFUSED", "CANCELLED", "TIMED_OUT"}
TEAMS = (("A", 0.7), ("B", 0.2), ("C", 0.1))  # name, share of the jobs
PROVIDERS = ("arxiv", "semantic_scholar", "openalex", "crossref", "unpaywall", "arxiv_pdf", "pdf", "other")
POLL_SECONDS = 1.0


@dataclass
class Team:
    name: str
    team_id: str
    headers: dict[str, str]


@dataclass
class Job:
    team: str
    goal_id: str
    job_id: str = ""
    submitted: float = 0.0
    seconds: float | None = None  # submit to terminal; None while not terminal
    status: str = "NOT_SUBMITTED"
    phase: str = ""  # the last phase seen while the job was running
    causes: list[str] = field(default_factory=list)
    cache_hits: int | None = None
    coalesced: int | None = None
    error: str | None = None


@dataclass
class ProviderFigures:
    requests: int
    smallest_gap: float | None
    gaps_under_interval: int | None  # None: no interval to compare with
    interval: float | None
    max_open: int


@dataclass
class Run:
    label: str
    concurrent: int
    jobs: list[Job]
    wall_seconds: float
    providers: dict[str, ProviderFigures]
    timed_out: bool


# --- the runtime ------------------------------------------------------------------------------------------


def _start_runtime(env: Mapping[str, str], port: int, log: IO[bytes]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "functions.local_runtime", "--port", str(port)],
        cwd=ROOT,
        env={**env, "PORT": str(port)},
        stdout=log,
        stderr=subprocess.STDOUT,
    )


@contextlib.asynccontextmanager
async def local_runtime(env: Mapping[str, str], log: IO[bytes]) -> AsyncIterator[str]:
    """A fresh `python -m functions.local_runtime` (state in memory) on a free port; yields its base URL."""
    port = free_port()
    server = _start_runtime(env, port, log)
    base = f"http://127.0.0.1:{port}"
    try:
        await wait_ready(base, server, timeout=180)
        yield base
    finally:
        await asyncio.to_thread(stop_runtime, server)


async def _onboard(client: httpx.AsyncClient, admin_token: str) -> dict[str, Team]:
    teams = {}
    for name, _ in TEAMS:
        answer = await client.post(
            "/admin/teams",
            json={"name": f"Team {name}", "tier": "standard"},
            headers={"Authorization": f"Bearer {admin_token}"},
        )
        if answer.status_code != 201:
            raise SystemExit(f"/admin/teams answered {answer.status_code}: {answer.text[:300]}")
        body = answer.json()
        teams[name] = Team(name, str(body["team_id"]), {"Authorization": f"Bearer {body['token']}"})
    return teams


# --- the jobs ---------------------------------------------------------------------------------------------


def team_counts(total: int) -> dict[str, int]:
    """70 / 20 / 10 %, the first team taking the rounding."""
    counts = {name: round(total * share) for name, share in TEAMS[1:]}
    return {TEAMS[0][0]: total - sum(counts.values()), **counts}


def interleaved(plan_by_team: Mapping[str, list[Goal]]) -> list[tuple[str, Goal]]:
    """The teams' jobs in proportional turns (A B A A C A ...), so no team's burst all comes last."""
    turns = [
        ((k + 0.5) / len(goals), name, goal)
        for name, goals in plan_by_team.items()
        for k, goal in enumerate(goals)
    ]
    return [(name, goal) for _, name, goal in sorted(turns, key=lambda turn: (turn[0], turn[1]))]


def team_goals(goals: list[Goal], team_index: int, count: int) -> list[Goal]:
    """Team t's jobs ask the goals from its own offset on, so its first job is always the same goal."""
    offset = team_index * len(goals) // len(TEAMS)
    return [goals[(offset + k) % len(goals)] for k in range(count)]


def _search_stats(results: Mapping[str, Any]) -> Mapping[str, Any] | None:
    summary = results.get("execution_summary")
    for holder in (results, summary if isinstance(summary, Mapping) else {}):
        stats = holder.get("search_stats")
        if isinstance(stats, Mapping):
            return stats
    return None


def _count(value: object) -> int | None:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


async def _submit(client: httpx.AsyncClient, team: Team, goal: Goal, job: Job) -> None:
    job.submitted = time.monotonic()
    try:
        answer = await client.post(
            "/api/agent/execute",
            json={
                "research_goal": goal.text,
                "scope_parameters": {
                    "discovery_depth": DEPTH,
                    "temporal_boundary": {"publication_window_years": WINDOW_YEARS},
                },
            },
            headers=team.headers,
        )
    except httpx.HTTPError as exc:
        job.status, job.error = "NOT_SUBMITTED", f"{type(exc).__name__} {exc}".strip()
        job.causes = [f"POST /api/agent/execute: {type(exc).__name__} (client time-out 120 s)"]
        return
    if answer.status_code != 202:
        job.status, job.error = "REJECTED", f"/execute answered {answer.status_code}: {answer.text[:200]}"
        job.causes = [f"POST /api/agent/execute answered {answer.status_code}"]
        return
    job.job_id, job.status = str(answer.json()["job_id"]), "SUBMITTED"


async def _follow(client: httpx.AsyncClient, team: Team, job: Job, deadline: float) -> None:
    """Poll until terminal (then read the results) or until `deadline`."""
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            answer = await client.get(f"/api/agent/status/{job.job_id}", headers=team.headers)
            if answer.status_code == 200:
                status = answer.json()
                job.status = str(status["status"])
                phase = status.get("current_phase") or {}
                if job.status not in TERMINAL:
                    job.phase = f"{phase.get('phase_name')} {phase.get('progress_percentage')}%"
                else:
                    job.seconds = time.monotonic() - job.submitted
                    await _read_results(client, team, job, status)
                    return
        await asyncio.sleep(POLL_SECONDS)


async def _read_results(client: httpx.AsyncClient, team: Team, job: Job, status: dict[str, Any]) -> None:
    results: dict[str, Any] = {}
    try:
        answer = await client.get(f"/api/agent/results/{job.job_id}", headers=team.headers)
        if answer.status_code == 200:
            results = answer.json()
        else:
            job.error = f"results answered {answer.status_code}"
    except httpx.HTTPError as exc:
        job.error = f"results: {type(exc).__name__}"
    if job.status != "COMPLETED":
        job.causes = job_causes(status, results)
    if job.status == "FAILED":
        seen = f"last seen running in {job.phase.split()[0]}" if job.phase else "before its first status poll"
        job.causes.insert(0, f"FAILED {seen}")
    stats = _search_stats(results)
    if stats is not None:
        job.cache_hits, job.coalesced = _count(stats.get("cache_hits")), _count(stats.get("coalesced"))


async def run_jobs(
    base: str, teams: dict[str, Team], plan: list[tuple[str, Goal]], timeout: float
) -> tuple[list[Job], float, bool]:
    """Submit every (team, goal) at once and follow them; (jobs, wall seconds, stopped at the timeout)."""
    limits = httpx.Limits(max_connections=max(20, len(plan) * 2))
    async with httpx.AsyncClient(base_url=base, timeout=120, limits=limits) as client:
        jobs = [Job(team, goal.goal_id) for team, goal in plan]
        started = time.monotonic()
        await asyncio.gather(
            *(_submit(client, teams[team], goal, job) for (team, goal), job in zip(plan, jobs, strict=True))
        )
        deadline = started + timeout
        await asyncio.gather(*(_follow(client, teams[job.team], job, deadline) for job in jobs if job.job_id))
        wall = time.monotonic() - started
    return jobs, wall, any(job.job_id and job.status not in TERMINAL for job in jobs)


# --- what the web saw -------------------------------------------------------------------------------------


def provider_figures(site: CorpusWeb, intervals: Mapping[str, float]) -> dict[str, ProviderFigures]:
    web = site.web
    figures = {}
    for provider in [p for p in PROVIDERS if web.arrivals(p)]:
        gaps = web.gaps(provider)
        interval = intervals.get(provider)
        figures[provider] = ProviderFigures(
            requests=len(web.arrivals(provider)),
            smallest_gap=min(gaps) if gaps else None,
            gaps_under_interval=sum(1 for g in gaps if g < interval) if interval else None,
            interval=interval,
            max_open=web.max_open(provider),
        )
    return figures


# --- reporting --------------------------------------------------------------------------------------------


def percentile(values: list[float], share: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def _seconds(value: float | None) -> str:
    return f"{value:.1f} s" if value is not None else "-"


def run_summary(run: Run, solo: Mapping[str, float]) -> dict[str, Any]:
    done = [job.seconds for job in run.jobs if job.seconds is not None]
    statuses = Counter(job.status for job in run.jobs)
    causes = Counter(
        cause for job in run.jobs if job.status != "COMPLETED" for cause in job.causes or ["no cause given"]
    )
    teams = {}
    for name, _ in TEAMS:
        times = [job.seconds for job in run.jobs if job.team == name and job.seconds is not None]
        median = statistics.median(times) if times else None
        teams[name] = {
            "jobs": sum(1 for job in run.jobs if job.team == name),
            "solo_seconds": solo.get(name),
            "median_seconds": median,
            "ratio_to_solo": median / solo[name] if median is not None and solo.get(name) else None,
        }
    stats_known = [job for job in run.jobs if job.cache_hits is not None or job.coalesced is not None]
    return {
        "label": run.label,
        "concurrent_jobs": run.concurrent,
        "statuses": dict(statuses),
        "not_terminal": [
            {"team": job.team, "goal": job.goal_id, "job_id": job.job_id, "last_seen": job.phase}
            for job in run.jobs
            if job.job_id and job.status not in TERMINAL
        ],
        "causes_of_non_completed": dict(causes.most_common()),
        "job_seconds_p50": percentile(done, 0.5) if done else None,
        "job_seconds_p95": percentile(done, 0.95) if done else None,
        "job_seconds_max": max(done) if done else None,
        "upstream_requests_per_job": {
            name: figures.requests / run.concurrent for name, figures in run.providers.items()
        },
        "search_cache_hits": sum(job.cache_hits or 0 for job in stats_known) if stats_known else None,
        "search_coalesced": sum(job.coalesced or 0 for job in stats_known) if stats_known else None,
        "teams": teams,
        "web": {name: asdict(figures) for name, figures in run.providers.items()},
        "wall_seconds": run.wall_seconds,
        "stopped_at_timeout": run.timed_out,
        "jobs": [asdict(job) for job in run.jobs],
    }


def print_run(summary: Mapping[str, Any], figure: Figure = print) -> None:
    teams = summary["teams"]
    split = ", ".join(f"{name} {teams[name]['jobs']}" for name, _ in TEAMS if teams[name]["jobs"])
    print(
        f"\n=== {summary['label']}: {summary['concurrent_jobs']} {DEPTH} job(s) at once (teams {split}) ==="
    )
    statuses = ", ".join(f"{status} {count}" for status, count in sorted(summary["statuses"].items()))
    figure(f"statuses: {statuses}; wall {summary['wall_seconds']:.0f} s")
    if summary["not_terminal"]:
        figure(f"NOT TERMINAL when the run stopped ({len(summary['not_terminal'])}):")
        for job in summary["not_terminal"]:
            figure(f"  team {job['team']} {job['goal']:<20} {job['job_id']} last seen {job['last_seen']}")
    if summary["causes_of_non_completed"]:
        figure("causes of every status short of COMPLETED (jobs naming each):")
        for cause, count in summary["causes_of_non_completed"].items():
            figure(f"  {count:>3} x {cause}")
    figure(
        f"job time, submit to terminal: p50 {_seconds(summary['job_seconds_p50'])}, "
        f"p95 {_seconds(summary['job_seconds_p95'])}, max {_seconds(summary['job_seconds_max'])}"
    )
    per_job = summary["upstream_requests_per_job"]
    figure(
        "upstream requests per job: "
        + ", ".join(f"{name} {count:.1f}" for name, count in per_job.items())
        + f" (all {sum(per_job.values()):.1f})"
    )
    hits, coalesced = summary["search_cache_hits"], summary["search_coalesced"]
    figure(
        "search cache hits / coalesced: "
        + (f"{hits} / {coalesced}" if hits is not None else "n/a (the results carry no search_stats)")
    )
    print_teams(teams, figure)
    figure(
        f"as the web saw it: {'provider':<17}{'requests':>9}{'smallest gap':>14}{'gaps < interval':>17}{'max open':>10}"
    )
    for name, web in summary["web"].items():
        under = (
            f"{web['gaps_under_interval']}/{max(0, web['requests'] - 1)} ({web['interval']:g} s)"
            if web["gaps_under_interval"] is not None
            else "-"
        )
        gap = f"{web['smallest_gap']:.2f} s" if web["smallest_gap"] is not None else "-"
        figure(f"{'':<19}{name:<17}{web['requests']:>9}{gap:>14}{under:>17}{web['max_open']:>10}")


def print_overview(summaries: Sequence[Mapping[str, Any]], figure: Figure = print) -> None:
    print(
        f"\n{'run':<16}{'jobs':>5}{'COMPLETED':>10}{'PARTIAL':>8}{'other':>6}{'p50':>8}{'p95':>8}"
        f"{'arXiv/job':>10}{'arXiv gap':>10}{'arXiv open':>11}{'worst x solo':>13}"
    )
    for summary in summaries:
        statuses = summary["statuses"]
        other = sum(count for status, count in statuses.items() if status not in ("COMPLETED", "PARTIAL"))
        arxiv = summary["web"].get("arxiv") or {}
        gap = arxiv.get("smallest_gap")
        ratios = [t["ratio_to_solo"] for t in summary["teams"].values() if t["ratio_to_solo"] is not None]
        p50, p95 = summary["job_seconds_p50"], summary["job_seconds_p95"]
        figure(
            f"{summary['label']:<16}{summary['concurrent_jobs']:>5}{statuses.get('COMPLETED', 0):>10}"
            f"{statuses.get('PARTIAL', 0):>8}{other:>6}"
            f"{(f'{p50:.0f} s' if p50 is not None else '-'):>8}{(f'{p95:.0f} s' if p95 is not None else '-'):>8}"
            f"{summary['upstream_requests_per_job'].get('arxiv', 0.0):>10.1f}"
            f"{(f'{gap:.2f} s' if gap is not None else '-'):>10}{arxiv.get('max_open', 0):>11}"
            f"{(f'{max(ratios):.2f}' if ratios else '-'):>13}"
        )


def pooled_teams(runs: Sequence[Run], solo: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """Each team's median job time over the jobs of several runs of one count, against its solo time."""
    pooled = Run("pooled", 0, [job for run in runs for job in run.jobs], 0.0, {}, False)
    teams: dict[str, dict[str, Any]] = run_summary(pooled, solo)["teams"]
    return teams


def print_teams(teams: Mapping[str, Mapping[str, Any]], figure: Figure = print) -> None:
    """Each team's median job time against its solo time."""
    if not any(team["solo_seconds"] for team in teams.values()):
        figure("team times against solo: n/a (no solo time)")
        return
    figure(f"{'team':<6}{'jobs':>5}{'solo':>10}{'median':>10}{'x solo':>8}")
    for name, _ in TEAMS:
        team = teams[name]
        if team["jobs"] and team["solo_seconds"]:
            ratio = f"{team['ratio_to_solo']:.2f}" if team["ratio_to_solo"] is not None else "-"
            figure(
                f"{name:<6}{team['jobs']:>5}{_seconds(team['solo_seconds']):>10}"
                f"{_seconds(team['median_seconds']):>10}{ratio:>8}"
            )


def numbered(label: str, index: int, repeat: int) -> str:
    """A run's label, with its number when each run is repeated."""
    return f"{label} #{index + 1}" if repeat > 1 else label


def write_json(
    path: Path,
    conditions: str,
    summaries: Sequence[Mapping[str, Any]],
    pooled: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    document = {"conditions": conditions, "runs": summaries, "pooled": pooled or {}}
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")


# --- main -------------------------------------------------------------------------------------------------


async def bench(
    args: argparse.Namespace, counts: list[int], conditions: str, log: IO[bytes]
) -> list[dict[str, Any]]:
    papers = literature(redate_years=WINDOW_YEARS)
    goals = [goal for goal in GOALS if goal.expected]
    site = CorpusWeb(papers, latency=not args.no_latency, seed=args.seed)
    site.start()
    admin_token = secrets.token_urlsafe(24)
    env = {
        **os.environ,
        **site.environment(no_politeness=args.no_politeness),
        "AUTH": "required",
        "ADMIN_TOKEN": admin_token,
        "CLIENT_RATE_LIMIT_PER_MINUTE": "1000000",
        "LOCAL_STATE_DIR": "",
        "POWERTOOLS_LOG_LEVEL": os.environ.get("POWERTOOLS_LOG_LEVEL", "WARNING"),
    }
    env.pop("AWS_ENDPOINT_URL", None)
    intervals = project_intervals()  # the real defaults: gaps are judged against them even when zeroed
    summaries: list[dict[str, Any]] = []
    pooled: dict[str, dict[str, Any]] = {}

    async def one_run(label: str, plan: list[tuple[str, Goal]], solo: Mapping[str, float]) -> Run:
        # a fresh runtime for each run: no cache, no open circuit breaker left by an earlier job
        async with local_runtime(env, log) as base:
            async with httpx.AsyncClient(base_url=base, timeout=60) as client:
                teams = await _onboard(client, admin_token)
            site.web.reset_requests()
            jobs, wall, timed_out = await run_jobs(base, teams, plan, args.timeout)
        run = Run(label, len(plan), jobs, wall, provider_figures(site, intervals), timed_out)
        summary = run_summary(run, solo)
        print_run(summary, figure_printer(args.no_politeness))
        summaries.append(summary)
        if args.json:  # after every run, so a run stopped by hand keeps the figures of those before it
            write_json(Path(args.json), conditions, summaries, pooled)
        return run

    try:
        solo_times: dict[str, list[float]] = {}
        for index, (name, _) in enumerate(() if args.no_solo else TEAMS):
            for attempt in range(args.repeat):
                label = numbered(f"solo {name}", attempt, args.repeat)
                run = await one_run(label, [(name, team_goals(goals, index, 1)[0])], {})
                if run.jobs[0].seconds is not None:
                    solo_times.setdefault(name, []).append(run.jobs[0].seconds)
        solo = {name: statistics.median(times) for name, times in solo_times.items()}
        for count in counts:
            plan = interleaved(
                {
                    name: team_goals(goals, index, number)
                    for index, (name, number) in enumerate(team_counts(count).items())
                }
            )
            runs = [
                await one_run(numbered(f"{count} at once", k, args.repeat), plan, solo)
                for k in range(args.repeat)
            ]
            if args.repeat > 1:
                label = f"{count} at once, {args.repeat} runs pooled (solo: median of {args.repeat})"
                pooled[label] = pooled_teams(runs, solo)
                print(f"\n=== {label} ===")
                print_teams(pooled[label], figure_printer(args.no_politeness))
                if args.json:
                    write_json(Path(args.json), conditions, summaries, pooled)
    finally:
        site.stop()
    return summaries


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", default="1,10,50", help="comma-separated concurrent job counts")
    add_condition_options(parser)
    parser.add_argument("--no-solo", action="store_true", help="skip the solo runs (no team ratios)")
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="seconds after which a run stops (default 900)"
    )
    parser.add_argument("--seed", type=int, default=18, help="seed of the web's latency draws")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs of each solo job and each count; >1 adds pooled medians"
    )
    parser.add_argument("--json", default=None, help="also write the figures as JSON to this path")
    parser.add_argument(
        "--server-log", default="/tmp/bench-concurrency-server.log", help="the runtime's output"
    )
    args = parser.parse_args()
    try:
        counts = [int(part) for part in args.jobs.split(",") if part.strip()]
    except ValueError:
        parser.error("--jobs takes comma-separated integers, e.g. 1,10,50")
    if not counts or min(counts) < 1:
        parser.error("--jobs takes positive counts")
    if args.repeat < 1:
        parser.error("--repeat takes a positive count")
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(line_buffering=True)  # each run's table as it ends, also into a file
    conditions = describe_conditions(no_politeness=args.no_politeness, latency=not args.no_latency)
    print(
        f"bench.concurrency: {DEPTH} jobs, window {WINDOW_YEARS} years, runs {counts} (+ solo per team), "
        f"teams {' / '.join(f'{name} {share:.0%}' for name, share in TEAMS)}, AUTH=required; "
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"conditions: {conditions}")
    started = time.monotonic()
    try:
        with Path(args.server_log).open("wb") as log:
            summaries = asyncio.run(bench(args, counts, conditions, log))
    except CorpusMissing as exc:
        sys.exit(f"bench.concurrency: {exc}")
    print_overview(summaries, figure_printer(args.no_politeness))
    print(
        f"conditions: {conditions}; total wall {time.monotonic() - started:.0f} s, "
        f"load average now {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    if args.json:
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
