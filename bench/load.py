"""Load benchmark: the local runtime (`python -m functions.local_runtime`, as `make run` starts it) on
loopback under 50 concurrent clients for 60 s, plus 10 research jobs started at once.

    .venv/bin/python -m bench.load [--duration 60] [--clients 50] [--jobs 10]

A local scholarly web (the four search APIs and generated PDFs, tests.support.scholarly_web) runs in
this process on loopback; the server runs as a subprocess on a free port, pointed at it. Each client is
a bounded asyncio loop over one httpx connection pool that picks a route at random (search, extraction,
knowledge-base semantic search) and sends the next request when the last one answered. The client-side
rate limit is raised for the run (it would answer 429 to one client sending thousands a minute).

Printed: throughput, p50/p95/p99 per route, answers by status, the jobs' final states, and the server
process's RSS sampled every second, with whether it is flat after warm-up (the last third's peak within
10 % of the middle third's). Targets: 0 5xx, every job terminal, memory flat after warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from tests.e2e.scholarly_topic import GOAL, NO_POLITENESS, environment, figure, serve, topic_papers
from tests.support.scholarly_web import ScholarlyWeb

ROOT = Path(__file__).resolve().parent.parent
TERMINAL = {"COMPLETED", "PARTIAL", "FAILED", "CANCELLED", "TIMED_OUT"}
SEARCH_QUERIES = [
    "sparse attention transformers",
    "mixture of experts routing",
    "efficient training schedules",
    "low-bit quantization transformer",
    "long context modelling",
]
KB_QUERIES = [
    "what is a transformer",
    "attention mechanism definition",
    "gradient descent algorithm",
    "backpropagation formula",
    "regularization methods",
]


@dataclass
class Stats:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: Counter[tuple[str, str]] = field(default_factory=Counter)
    job_seconds: list[float] = field(default_factory=list)  # start to terminal, per job


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_runtime(server: subprocess.Popen[bytes]) -> None:
    """Stops the local runtime as Ctrl-C would; kills it if it has not stopped within 20 s."""
    server.send_signal(signal.SIGINT)
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def _rss_mb(pid: int) -> float:
    """Resident set size of `pid` (Linux /proc), in MB; 0 when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))]


async def wait_ready(base: str, server: subprocess.Popen[bytes], timeout: float = 120) -> None:
    """Until the local runtime `server` answers /v1/health at `base` (SystemExit if it exits or never does)."""
    deadline = time.monotonic() + timeout
    async with httpx.AsyncClient(base_url=base, timeout=5) as client:
        while time.monotonic() < deadline:
            if server.poll() is not None:
                raise SystemExit(f"the server exited with {server.returncode}")
            with contextlib.suppress(httpx.HTTPError):
                if (await client.get("/v1/health")).status_code == 200:
                    return
            await asyncio.sleep(0.3)
    raise SystemExit("the server did not become ready")


def _requests(pdf_urls: list[str], rng: random.Random) -> tuple[str, str, str, dict[str, Any]]:
    """(route label, method, path, JSON body) of one request, chosen at random."""
    route = rng.choice(["search", "extract", "kb"])
    if route == "search":
        return route, "POST", "/api/tools/search", {"query": rng.choice(SEARCH_QUERIES), "max_results": 10}
    if route == "extract":
        return route, "POST", "/api/tools/extract", {"source_url": rng.choice(pdf_urls)}
    return route, "POST", "/search/semantic", {"query": rng.choice(KB_QUERIES), "k": 5}


async def _client(
    index: int, base: str, pdf_urls: list[str], stop_at: float, stats: Stats, timeout: float
) -> None:
    rng = random.Random(index)
    async with httpx.AsyncClient(base_url=base, timeout=timeout) as client:
        while time.monotonic() < stop_at:
            route, method, path, body = _requests(pdf_urls, rng)
            started = time.perf_counter()
            try:
                response = await client.request(method, path, json=body)
                status = str(response.status_code)
            except httpx.TimeoutException:
                status = "timeout"
            except httpx.HTTPError as exc:
                status = type(exc).__name__
            stats.latencies[route].append(time.perf_counter() - started)
            stats.statuses[(route, status)] += 1


async def _jobs(
    base: str, count: int, stats: Stats, deadline: float, reasons: Counter[str]
) -> dict[str, str]:
    """Start `count` research jobs at once; poll them until terminal or `deadline`; id -> final status
    (and the failure reasons of those that failed, counted in `reasons`)."""
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        body = {"research_goal": GOAL, "scope_parameters": {"discovery_depth": "rapid"}}
        began = time.monotonic()
        started = await asyncio.gather(*(client.post("/api/agent/execute", json=body) for _ in range(count)))
        ids: list[str] = []
        for response in started:
            stats.statuses[("execute", str(response.status_code))] += 1
            if response.status_code == 202:
                ids.append(str(response.json()["job_id"]))
        final: dict[str, str] = dict.fromkeys(ids, "UNKNOWN")
        while time.monotonic() < deadline and any(status not in TERMINAL for status in final.values()):
            for job_id in [j for j, status in final.items() if status not in TERMINAL]:
                response = await client.get(f"/api/agent/status/{job_id}")
                stats.statuses[("status", str(response.status_code))] += 1
                if response.status_code == 200:
                    body = response.json()
                    final[job_id] = str(body["status"])
                    if final[job_id] in TERMINAL:
                        stats.job_seconds.append(time.monotonic() - began)
                    if final[job_id] == "FAILED":
                        reasons[str(body.get("failure_reason"))[:160]] += 1
            await asyncio.sleep(1.0)
        return final


async def _sample_memory(pid: int, samples: list[tuple[float, float]], stop: asyncio.Event) -> None:
    started = time.monotonic()
    while not stop.is_set():
        samples.append((time.monotonic() - started, _rss_mb(pid)))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), timeout=1.0)


def _start_server(env: dict[str, str], port: int, log_path: str) -> tuple[subprocess.Popen[bytes], IO[bytes]]:
    """`python -m functions.local_runtime` (what `make run` serves) on `port`, its output to `log_path`."""
    log = open(log_path, "wb")  # noqa: SIM115 - open for the server's whole life
    server = subprocess.Popen(
        [sys.executable, "-m", "functions.local_runtime", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return server, log


async def run(args: argparse.Namespace) -> int:
    papers = topic_papers(12, off_topic=2)
    with ScholarlyWeb() as web:
        serve(web, papers)
        port = free_port()
        env = {
            **os.environ,
            **environment(web, RESEARCH_EXTRACT_BUDGET_SECONDS="20"),
            "CLIENT_RATE_LIMIT_PER_MINUTE": "1000000",
            "PORT": str(port),
        }
        env.pop("AWS_ENDPOINT_URL", None)
        server, log = _start_server(env, port, args.server_log)
        base = f"http://127.0.0.1:{port}"
        try:
            await wait_ready(base, server)
            idle_mb = _rss_mb(server.pid)
            pdf_urls = [web.url(paper.pdf_path) for paper in papers]
            stats = Stats()
            samples: list[tuple[float, float]] = []
            stop = asyncio.Event()
            sampler = asyncio.create_task(_sample_memory(server.pid, samples, stop))
            started = time.monotonic()
            stop_at = started + args.duration
            reasons: Counter[str] = Counter()
            jobs = asyncio.create_task(_jobs(base, args.jobs, stats, stop_at + args.job_grace, reasons))
            await asyncio.gather(
                *(
                    _client(i, base, pdf_urls, stop_at, stats, args.request_timeout)
                    for i in range(args.clients)
                )
            )
            load_seconds = time.monotonic() - started
            final = await jobs
            stop.set()
            await sampler
        finally:
            stop_runtime(server)
            log.close()
    return _report(args, stats, final, reasons, samples, idle_mb, load_seconds)


def _report(
    args: argparse.Namespace,
    stats: Stats,
    final: dict[str, str],
    reasons: Counter[str],
    samples: list[tuple[float, float]],
    idle_mb: float,
    load_seconds: float,
) -> int:
    total = sum(len(values) for values in stats.latencies.values())
    figure(
        f"load: {args.clients} clients for {load_seconds:.1f} s, {args.jobs} research jobs started at once "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs)"
    )
    figure(f"throughput: {total} requests, {total / load_seconds:.1f} req/s")
    figure(f"{'route':<10}{'requests':>9}{'req/s':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for route in sorted(stats.latencies):
        values = stats.latencies[route]
        figure(
            f"{route:<10}{len(values):>9}{len(values) / load_seconds:>8.1f}"
            f"{_percentile(values, 0.50) * 1000:>9.0f}{_percentile(values, 0.95) * 1000:>9.0f}"
            f"{_percentile(values, 0.99) * 1000:>9.0f}{max(values) * 1000:>9.0f}"
        )
    figure("answers by route and status:")
    for (route, status), count in sorted(stats.statuses.items()):
        figure(f"  {route:<10}{status:>16}: {count}")
    server_errors = sum(
        count for (_, status), count in stats.statuses.items() if not status.isdigit() or status[0] == "5"
    )
    jobs = Counter(final.values())
    terminal = sum(count for status, count in jobs.items() if status in TERMINAL)
    figure(f"research jobs: {dict(jobs)} ({terminal} of {args.jobs} terminal)")
    if stats.job_seconds:
        figure(
            f"  start to terminal: median {statistics.median(stats.job_seconds):.1f} s, "
            f"max {max(stats.job_seconds):.1f} s (polled every second)"
        )
    for reason, count in reasons.most_common():
        figure(f"  FAILED x{count}: {reason}")
    rss = [mb for _, mb in samples if mb]
    flat = True
    if rss:
        third = max(1, len(rss) // 3)
        middle, last = rss[third : 2 * third] or rss, rss[2 * third :] or rss
        flat = max(last) <= max(middle) * 1.10
        figure(
            f"server RSS: idle {idle_mb:.0f} MB, peak {max(rss):.0f} MB, median {statistics.median(rss):.0f} MB; "
            f"middle third peak {max(middle):.0f} MB, last third peak {max(last):.0f} MB: "
            f"{'flat' if flat else 'GROWING'} after warm-up"
        )
        timeline = " ".join(f"{mb:.0f}" for mb in rss[:: max(1, len(rss) // 20)])
        figure(f"RSS MB over time (every {max(1, len(rss) // 20)} s): {timeline}")
    ok = server_errors == 0 and terminal == args.jobs and len(final) == args.jobs and flat
    figure(
        f"targets: 5xx/transport errors {server_errors} (target 0), jobs terminal {terminal}/{args.jobs}, "
        f"memory {'flat' if flat else 'growing'}: {'MET' if ok else 'NOT MET'}"
    )
    return 0 if ok else 1


def main() -> None:
    print(f"conditions: {NO_POLITENESS}")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load (default 60)")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients (default 50)")
    parser.add_argument("--jobs", type=int, default=10, help="research jobs started at once (default 10)")
    parser.add_argument(
        "--job-grace", type=float, default=180.0, help="seconds after the load for jobs to end"
    )
    parser.add_argument("--request-timeout", type=float, default=60.0, help="per-request client timeout")
    parser.add_argument("--server-log", default="/tmp/bench-load-server.log", help="the server's output")
    raise SystemExit(asyncio.run(run(parser.parse_args())))


if __name__ == "__main__":
    main()
