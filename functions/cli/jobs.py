"""The research-job commands: start a job through the HTTP API and follow it to the end.

research-agent research "What are recent advances in transformer architectures?" --depth rapid
research-agent research "..." --url https://abc.execute-api.eu-west-1.amazonaws.com/prod --api-key KEY
research-agent research "..." --checkpoint plan --checkpoint screening   (waits for `checkpoint approve`)
research-agent status JOB_ID
research-agent results JOB_ID
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from typing import Any, TextIO

import httpx

TERMINAL = {"COMPLETED", "PARTIAL", "FAILED", "REFUSED"}
BAR_WIDTH = 30


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    research = commands.add_parser("research", parents=[common], help="start a job and follow it")
    research.add_argument("goal", help="the research goal (10-500 characters)")
    research.add_argument(
        "--depth", choices=["rapid", "focused", "comprehensive", "exhaustive"], default="focused"
    )
    research.add_argument("--years", type=int, default=3, help="publication window in years (1-10)")
    research.add_argument(
        "--impact", choices=["cutting_edge", "high_impact", "established", "baseline"], default="baseline"
    )
    research.add_argument("--no-diversity", action="store_true", help="do not enforce source diversity")
    research.add_argument(
        "--chase",
        choices=["off", "backward", "forward", "both"],
        help="follow the best sources' references and citing works (default: by depth)",
    )
    research.add_argument(
        "--checkpoint",
        action="append",
        choices=["plan", "screening", "extraction", "synthesis"],
        default=[],
        help="a phase after which the job waits for `research-agent checkpoint approve` (repeatable)",
    )
    research.add_argument(
        "--on-timeout",
        choices=["abort", "continue"],
        help="what a checkpoint whose window passes does (default: the API's, abort)",
    )
    research.add_argument("--no-wait", action="store_true", help="print the job id and exit")
    research.add_argument("--timeout", type=float, default=900.0, help="seconds to follow the job")
    research.add_argument("--interval", type=float, default=1.0, help="seconds between status polls")
    research.set_defaults(run=run_research)
    for name, run in (("status", run_status), ("results", run_results)):
        command = commands.add_parser(name, parents=[common], help=f"show the {name} of a job")
        command.add_argument("job_id")
        command.set_defaults(run=run)


def _bar(status: dict[str, Any]) -> str:
    phase = status["current_phase"]
    percent = int(phase["progress_percentage"])
    filled = BAR_WIDTH * percent // 100
    metrics = status.get("quality_metrics", {})
    counts = (
        f"sources {metrics.get('sources_accepted', 0)}/{metrics.get('sources_discovered', 0)} "
        f"extracted {metrics.get('extractions_successful', 0)} failed {metrics.get('extractions_failed', 0)}"
    )
    return f"[{'#' * filled}{'-' * (BAR_WIDTH - filled)}] {percent:3d}% {phase.get('phase_name') or status['status']:<12} {counts}"


def _error(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"{response.status_code} {body.get('error')}: {body.get('message')}"
    except ValueError:
        return f"{response.status_code} {response.text[:200]}"


def follow(
    client: httpx.Client, job_id: str, out: TextIO, *, timeout: float, interval: float
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    interactive = out.isatty()
    last = ""
    while True:
        response = client.get(f"/api/agent/status/{job_id}")
        if response.status_code != 200:
            raise RuntimeError(_error(response))
        status: dict[str, Any] = response.json()
        line = _bar(status)
        if line != last:
            out.write(("\r" + line) if interactive else (line + "\n"))
            out.flush()
            last = line
        if status["status"] in TERMINAL or status.get("awaiting_checkpoint"):
            if interactive:
                out.write("\n")
            return status
        if time.monotonic() > deadline:
            raise TimeoutError(f"job {job_id} still {status['status']} after {timeout:.0f} s")
        time.sleep(interval)


def print_results(results: dict[str, Any], base_url: str, out: TextIO) -> None:
    out.write(f"\nJob {results['job_id']}: {results['status']}\n")
    if results.get("refusal"):
        out.write(f"Refused: {results.get('refusal_reason')}\n")
    if results.get("failure_reason"):
        out.write(f"Failed: {results['failure_reason']}\n")
    synthesis = results.get("synthesis") or {}
    if synthesis.get("primary_themes"):
        out.write("Themes: " + "; ".join(synthesis["primary_themes"]) + "\n")
    summary = results.get("execution_summary") or {}
    out.write(
        f"Sources: {summary.get('total_sources_discovered', 0)} discovered, "
        f"{summary.get('extractions_successful', 0)} extracted; confidence {results.get('confidence_score', 0):.2f}\n"
    )
    artifacts = results.get("artifacts") or {}
    if artifacts:
        out.write("Artifacts:\n")
        for name, link in artifacts.items():
            out.write(f"  {name:<26} {base_url.rstrip('/')}{link['api_path']}\n")
            if str(link.get("url", "")).startswith("http"):
                out.write(f"  {'':<26} {link['url']}\n")


def _get(http: httpx.Client, path: str, out: TextIO) -> httpx.Response | None:
    """The API's answer; None (the error written to `out`) when the request got none."""
    try:
        return http.get(path)
    except httpx.HTTPError as exc:
        out.write(f"error: {exc}\n")
        return None


def run_status(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    response = _get(http, f"/api/agent/status/{args.job_id}", out)
    if response is None:
        return 1
    out.write(json.dumps(response.json(), indent=2) + "\n")
    return 0 if response.status_code == 200 else 1


def run_results(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    response = _get(http, f"/api/agent/results/{args.job_id}", out)
    if response is None:
        return 1
    if response.status_code != 200:
        out.write(_error(response) + "\n")
        return 1
    print_results(response.json(), args.url, out)
    return 0


def run_research(args: argparse.Namespace, http: httpx.Client, out: TextIO, err: TextIO) -> int:
    body = {
        "research_goal": args.goal,
        "scope_parameters": {
            "temporal_boundary": {"publication_window_years": args.years},
            "quality_threshold": {"impact_level": args.impact},
            "discovery_depth": args.depth,
            "source_diversity_requirement": not args.no_diversity,
        },
    }
    if args.checkpoint:
        body["scope_parameters"]["human_checkpoints"] = args.checkpoint
    if args.on_timeout:
        body["scope_parameters"]["on_timeout"] = args.on_timeout
    if args.chase:
        body["scope_parameters"]["citation_chasing"] = args.chase
    try:
        response = http.post("/api/agent/execute", json=body, headers={"Idempotency-Key": str(uuid.uuid4())})
        if response.status_code not in (200, 202):
            out.write(f"could not start the job: {_error(response)}\n")
            return 1
        job = response.json()
        out.write(
            f"Job {job['job_id']} started: {job['execution_plan']['estimated_sources']} sources, "
            f"about {job['execution_plan']['estimated_duration_minutes']} min\n"
        )
        if args.no_wait:
            return 0
        final = follow(http, job["job_id"], out, timeout=args.timeout, interval=args.interval)
        if final["status"] not in TERMINAL:
            phase = (final.get("checkpoint") or {}).get("phase")
            out.write(
                f"Job {job['job_id']} waits at its {phase} checkpoint: "
                f"research-agent checkpoint show {job['job_id']}\n"
            )
            return 0
        response = http.get(f"/api/agent/results/{job['job_id']}")
        if response.status_code != 200:
            out.write(_error(response) + "\n")
            return 1
        print_results(response.json(), args.url, out)
        return 0 if final["status"] in ("COMPLETED", "PARTIAL") else 2
    except (httpx.HTTPError, RuntimeError, TimeoutError) as exc:
        out.write(f"error: {exc}\n")
        return 1
