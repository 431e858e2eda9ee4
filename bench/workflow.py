"""Benchmark: a `comprehensive` research job (30 sources) on the embedded runtime against a simulated
scholarly web with realistic latency, versus the seed's sequential plan (one call at a time).

    .venv/bin/python -m bench.workflow [--concurrency 10] [--sources 30]

The simulated web answers the four search APIs after 0.3-1.5 s and serves each generated PDF after
1-4 s (latencies are drawn once per request path from a fixed seed, so both runs wait the same).
Both runs use the same domain code and fresh embedded AWS state (no warm caches):
  - workflow: the state machine (Search Map, Extract Map with MaxConcurrency), driven through the API;
  - sequential: the seed's orchestrator loop — every planned query, then every extraction, one at a time.
Provider rate-limit spacing (e.g. arXiv's 3 s) is switched off in both runs: it is a politeness policy
of the real upstreams, not a property of the workflow, and would dominate both figures equally.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient

from functions.common.resources import STEP_FUNCTIONS
from functions.common.tenancy import DEFAULT_TEAM
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.lambda_adapter import resolve_handler
from functions.orchestrate.config import reset_workflow_settings_cache
from functions.orchestrate.models import JobStatus
from functions.research.planning.request import ExecuteRequest
from tests.e2e.scholarly_topic import (
    GOAL,
    NO_POLITENESS,
    TopicPaper,
    environment,
    figure,
    serve,
    topic_papers,
)
from tests.support.scholarly_web import RecordedRequest, Reply, ScholarlyWeb

PHASES = ["PLANNING", "SEARCHING", "VALIDATING", "EXTRACTING", "SYNTHESIZING"]


def _with_latency(
    handler: Callable[[RecordedRequest], Reply], low: float, high: float, seed: int
) -> Callable[[RecordedRequest], Reply]:
    def delayed(request: RecordedRequest) -> Reply:
        key = request.path + "?" + "&".join(f"{k}={v}" for k, v in sorted(request.query.items()))
        time.sleep(random.Random(f"{seed}:{key}").uniform(low, high))
        return handler(request)

    return delayed


def _constant(reply: Reply) -> Callable[[RecordedRequest], Reply]:
    def answer(request: RecordedRequest) -> Reply:
        return reply

    return answer


def simulated_web(papers: list[TopicPaper], seed: int) -> ScholarlyWeb:
    web = ScholarlyWeb().start()
    serve(web, papers)
    routes: dict[str, Any] = web._routes  # wrap the canned replies and PDF handlers with latency
    for path in (web.ARXIV_PATH, web.SEMANTIC_SCHOLAR_PATH, web.OPENALEX_PATH, web.CROSSREF_PATH):
        web.set_handler(path, _with_latency(_constant(routes[path]), 0.3, 1.5, seed))
    for prefix, handler in list(web._prefix_handlers.items()):
        web.set_handler(prefix, _with_latency(handler, 1.0, 4.0, seed), prefix=True)
    return web


def run_workflow(web: ScholarlyWeb, concurrency: int) -> dict[str, Any]:
    from functions.orchestrate.app import app

    # On AWS the step Lambdas are functions of their own; here they share this process, and the Plan
    # step's first import would otherwise compete with the API answer that `answered` measures.
    for step in STEP_FUNCTIONS:
        resolve_handler(step.handler)
    reset_workflow_settings_cache()
    env = environment(web, RESEARCH_EXTRACT_MAX_CONCURRENCY=str(concurrency))
    with EmbeddedAws(extra_environment=env), TestClient(app) as client:
        started = time.perf_counter()
        answer = client.post(
            "/api/agent/execute",
            json={"research_goal": GOAL, "scope_parameters": {"discovery_depth": "comprehensive"}},
        )
        answered = time.perf_counter() - started
        job_id = answer.json()["job_id"]
        first_seen: dict[str, float] = {}
        while True:
            status = client.get(f"/api/agent/status/{job_id}").json()
            first_seen.setdefault(status["status"], time.perf_counter() - started)
            if JobStatus(status["status"]).terminal:
                break
            time.sleep(0.02)
        wall = time.perf_counter() - started
        results = client.get(f"/api/agent/results/{job_id}").json()
    reset_workflow_settings_cache()
    marks = [(phase, first_seen[phase]) for phase in PHASES if phase in first_seen] + [("END", wall)]
    phases = {marks[i][0]: marks[i + 1][1] - marks[i][1] for i in range(len(marks) - 1)}
    return {
        "wall": wall,
        "answered": answered,
        "phases": phases,
        "status": results["status"],
        "extracted": results["execution_summary"]["extractions_successful"],
        "selected": results["execution_summary"]["sources_selected"],
        "claims": sum(1 for c in results["claims"] if c["kept"]),
        "decisions": [d["decision_type"] for d in results["autonomous_decisions"]],
    }


def run_sequential(web: ScholarlyWeb) -> dict[str, Any]:
    """The seed's orchestrator: the same steps, driven one after another, every extraction in turn."""
    from functions.orchestrate.contracts import (
        ExtractInput,
        FinalizeInput,
        PlanInput,
        ScreenInput,
        SearchInput,
        SearchState,
        SynthesizeInput,
    )
    from functions.orchestrate.steps import extract, finalize, plan, screen, search, synthesize
    from functions.orchestrate.wiring import job_service

    reset_workflow_settings_cache()
    with EmbeddedAws(extra_environment=environment(web)):
        service = job_service()
        request = ExecuteRequest.model_validate(
            {"research_goal": GOAL, "scope_parameters": {"discovery_depth": "comprehensive"}}
        )
        phases: dict[str, float] = {}
        started = time.perf_counter()
        job_id = "sequential-baseline"
        ids = {"job_id": job_id, "team_id": DEFAULT_TEAM}
        service.jobs.create(service.records.new_record(DEFAULT_TEAM, job_id, request, "bench").stored())
        mark = time.perf_counter()
        planned = plan.build()(PlanInput.model_validate({"input": ids}))
        phases["PLANNING"] = time.perf_counter() - mark
        mark = time.perf_counter()
        searched = _search_all(search.build(), SearchInput(**ids, search=planned.search))
        phases["SEARCHING"] = time.perf_counter() - mark
        mark = time.perf_counter()
        screened = screen.build()(ScreenInput(**ids, search_results=searched.results))
        if screened.action == "REFINE":
            refine = SearchState(pending=screened.refined_queries, results=searched.results, phase="refine")
            searched = _search_all(search.build(), SearchInput(**ids, search=refine))
            screened = screen.build()(ScreenInput(**ids, search_results=searched.results))
        phases["VALIDATING"] = time.perf_counter() - mark
        mark = time.perf_counter()
        extractions = [
            extract.build()(ExtractInput(**ids, source=source, focus_areas=planned.focus_areas))
            for source in screened.selected
        ]
        phases["EXTRACTING"] = time.perf_counter() - mark
        mark = time.perf_counter()
        synthesis = synthesize.build()(SynthesizeInput(**ids, extractions=extractions))
        final = finalize.build()(
            FinalizeInput.model_validate(
                {
                    **ids,
                    "search_results": searched.results,
                    "extractions": [item.model_dump(mode="json") for item in extractions],
                    "synthesis": synthesis.model_dump(mode="json"),
                }
            )
        )
        phases["SYNTHESIZING"] = time.perf_counter() - mark
        wall = time.perf_counter() - started
    reset_workflow_settings_cache()
    return {
        "wall": wall,
        "phases": phases,
        "status": final.status,
        "extracted": sum(1 for e in extractions if e.success),
        "selected": len(screened.selected),
    }


def _search_all(step: Callable[[Any], Any], request: Any) -> Any:
    """Search iterations until the job's searches are done (the state machine's SearchMore loop)."""
    state = step(request)
    while not state.done:
        state = step(request.model_copy(update={"search": state}))
    return state


def main() -> None:
    print(f"conditions: {NO_POLITENESS}")
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", type=int, default=16, help="Extract Map MaxConcurrency")
    parser.add_argument("--sources", type=int, default=36, help="on-topic papers on the simulated web")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    papers = topic_papers(args.sources, off_topic=4)
    figure(
        f"simulated web: {len(papers)} papers; search latency 0.3-1.5 s, PDF latency 1-4 s; cores: {os.cpu_count()}"
    )
    web = simulated_web(papers, args.seed)
    try:
        parallel = run_workflow(web, args.concurrency)
        sequential = run_sequential(web)
    finally:
        web.stop()
    figure(
        f"\nworkflow (Map concurrency {args.concurrency}): status {parallel['status']}, "
        f"{parallel['extracted']}/{parallel['selected']} extracted, {parallel['claims']} verified claims, "
        f"decisions {parallel['decisions'] or 'none'}; "
        f"execute answered in {parallel['answered'] * 1000:.0f} ms"
    )
    figure(
        f"sequential baseline:  status {sequential['status']}, {sequential['extracted']}/{sequential['selected']} extracted"
    )
    figure(f"\n{'phase':<14}{'workflow s':>12}{'sequential s':>14}")
    for phase in PHASES:
        figure(
            f"{phase:<14}{parallel['phases'].get(phase, 0.0):>12.2f}{sequential['phases'].get(phase, 0.0):>14.2f}"
        )
    figure(f"{'WALL':<14}{parallel['wall']:>12.2f}{sequential['wall']:>14.2f}")
    speedup = sequential["wall"] / parallel["wall"]
    figure(
        f"\nspeed-up: {speedup:.1f}x (target >= 5x); workflow wall {parallel['wall']:.1f} s (target < 30 s)"
    )


if __name__ == "__main__":
    main()
