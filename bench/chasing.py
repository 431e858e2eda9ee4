"""Benchmark: citation chasing on the held-out goals, off against on, at the project's real provider intervals.

    .venv/bin/python -m bench.chasing [--goals N] [--no-politeness] [--no-latency]

For every answerable held-out goal of bench.quality (goals nobody tuned the chasing on), on bench.corpus_web
(the real corpus papers and ~1000 real distractors, the search APIs with their real query semantics), the
goal's last expected paper is taken out of every search, so that it is reachable only through a citation:
  1. a job with `citation_chasing: "off"` runs (its wall time is the figure without chasing);
  2. the three best sources that job selected then reference the hidden paper in the three providers'
     citation graphs (tests/support/citation_graph.py, in their real formats), as the issue's case has
     it: the answering paper is cited by papers a keyword search does return; beside these edges every
     web paper references 12 random distractors and is cited by 8 (seeded), noise screening must reject;
  3. the same job runs with `citation_chasing: "both"`.
A first job, not counted, warms the process up. Printed per goal and overall: recall of the expected papers among the selected sources off and on, the
graph requests each job sent per provider (its `execution_summary.citation_chasing`), and wall time with and without
chasing (target: at most 2x without). Depth rapid (2 seeds), window 10 years, as bench.quality.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.corpus_web import (
    CorpusWeb,
    Figure,
    WebPaper,
    add_condition_options,
    describe_conditions,
    figure_printer,
    literature,
)
from bench.corpus_web.search import Engines
from bench.corpus_web.web import _sample
from bench.quality import DEPTH, GOALS, JOB_TIMEOUT_SECONDS, WINDOW_YEARS, Goal, Matcher
from tests.support.citation_graph import CitationGraphWeb
from tests.support.scholarly_web import ScholarlyWeb

NOISE_REFERENCES, NOISE_CITATIONS, CITERS = 12, 8, 3


@dataclass
class Run:
    status: str = ""
    seconds: float = 0.0
    found: list[str] = field(default_factory=list)  # expected corpus ids among the selected sources
    selected_dois: list[str] = field(default_factory=list)  # in the results' order
    graph_requests: Counter[str] = field(default_factory=Counter)
    chased_selected: int = 0


def run_job(client: Any, goal: Goal, chasing: str, matcher: Matcher, web: ScholarlyWeb) -> Run:
    from functions.orchestrate.models import JobStatus

    web.reset_requests()
    started = time.perf_counter()
    scope = {
        "discovery_depth": DEPTH,
        "temporal_boundary": {"publication_window_years": WINDOW_YEARS},
        "citation_chasing": chasing,
    }
    answer = client.post("/api/agent/execute", json={"research_goal": goal.text, "scope_parameters": scope})
    if answer.status_code != 202:
        return Run(status=f"REJECTED {answer.status_code}")
    job_id = answer.json()["job_id"]
    while time.perf_counter() - started < JOB_TIMEOUT_SECONDS:
        if JobStatus(client.get(f"/api/agent/status/{job_id}").json()["status"]).terminal:
            break
        time.sleep(0.1)
    run = Run(seconds=time.perf_counter() - started)
    results = client.get(f"/api/agent/results/{job_id}").json()
    run.status = str(results.get("status"))
    for source in results.get("sources") or []:
        paper = matcher.corpus_paper(source)
        if paper is not None and paper.corpus_id in goal.expected:
            run.found.append(str(paper.corpus_id))
        if source.get("doi"):
            run.selected_dois.append(str(source["doi"]))
        if (source.get("discovered_via") or {}).get("method") not in (None, "search"):
            run.chased_selected += 1
    summary = (results.get("execution_summary") or {}).get("citation_chasing") or {}
    run.graph_requests.update(summary.get("graph_requests") or {})
    return run


def _noise(graph: CitationGraphWeb, rng: random.Random) -> None:
    """Every paper references NOISE_REFERENCES random others and is referenced by NOISE_CITATIONS."""
    count = len(graph.papers)
    for index in range(count):
        graph.cites.setdefault(index, []).extend(rng.sample(range(count), NOISE_REFERENCES))
        for citing in rng.sample(range(count), NOISE_CITATIONS):
            graph.cites.setdefault(citing, []).append(index)


def _hidden(goal: Goal, papers: list[WebPaper]) -> WebPaper:
    return next(p for p in papers if p.corpus_id == sorted(goal.expected)[-1])


def bench_goal(
    run: Callable[[Goal, str, Matcher], Run],
    goal: Goal,
    site: CorpusWeb,
    papers: list[WebPaper],
    graph: CitationGraphWeb,
    seed: int,
) -> tuple[Run, Run]:
    hidden = _hidden(goal, papers)
    site.search = Engines([p for p in papers if p is not hidden])
    index = {p.doi.lower(): i for i, p in enumerate(papers) if p.doi}
    graph.cites.clear()
    _noise(graph, random.Random(seed))
    matcher = Matcher(papers)
    off = run(goal, "off", matcher)
    hidden_at = papers.index(hidden)
    for doi in off.selected_dois[:CITERS]:
        if doi.lower() in index:
            graph.cites.setdefault(index[doi.lower()], []).append(hidden_at)
    on = run(goal, "both", matcher)
    return off, on


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--goals", type=int, default=None, help="only the first N answerable held-out goals")
    add_condition_options(parser)
    args = parser.parse_args()
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    from fastapi.testclient import TestClient

    from functions.common.resources import STEP_FUNCTIONS
    from functions.local_runtime.aws import EmbeddedAws
    from functions.local_runtime.lambda_adapter import resolve_handler
    from functions.orchestrate.config import reset_workflow_settings_cache

    goals = [g for g in GOALS if g.split == "heldout" and g.expected][: args.goals]
    papers = literature(redate_years=WINDOW_YEARS)
    latency = not args.no_latency
    print(f"conditions: {describe_conditions(no_politeness=args.no_politeness, latency=latency)}")
    print(
        f"held-out goals: {len(goals)}; depth {DEPTH}; one expected paper per goal reachable only by citation"
    )
    figure = figure_printer(args.no_politeness)
    site = CorpusWeb(papers, latency=latency)
    web = site.start()
    graph = CitationGraphWeb([_sample(p, site._pdf_url(p)) for p in papers], {})
    graph.install(web, searches={web.OPENALEX_PATH: site._openalex, web.CROSSREF_PATH: site._crossref})
    runs: list[tuple[Goal, Run, Run]] = []
    try:
        for step in STEP_FUNCTIONS:
            resolve_handler(step.handler)
        from functions.orchestrate.app import app

        environment = site.environment(no_politeness=args.no_politeness)

        def fresh_run(goal: Goal, chasing: str, matcher: Matcher) -> Run:
            """One job on a fresh embedded AWS: no response cache or parsed paper of the other run."""
            reset_workflow_settings_cache()
            with EmbeddedAws(extra_environment=environment), TestClient(app) as client:
                return run_job(client, goal, chasing, matcher, web)

        # a job whose figures are not kept: the first would otherwise pay the process's cold start (the
        # embedder's load, first imports) and flatter the ratio
        fresh_run(goals[0], "off", Matcher(papers))
        for number, goal in enumerate(goals):
            off, on = bench_goal(fresh_run, goal, site, papers, graph, seed=number)
            runs.append((goal, off, on))
            figure(
                f"{goal.goal_id}: recall off {len(off.found)}/{len(goal.expected)} on "
                f"{len(on.found)}/{len(goal.expected)}; chased sources selected {on.chased_selected}; "
                f"graph requests {dict(sorted(on.graph_requests.items()))}; wall off {off.seconds:.1f} s, "
                f"on {on.seconds:.1f} s ({on.seconds / max(off.seconds, 0.001):.2f}x); {off.status}/{on.status}",
                flush=True,
            )
        reset_workflow_settings_cache()
    finally:
        site.stop()
    _summary(runs, figure)


def _summary(runs: list[tuple[Goal, Run, Run]], figure: Figure) -> None:
    expected = sum(len(goal.expected) for goal, _, _ in runs)
    if not runs or not expected:
        return
    found_off = sum(len(off.found) for _, off, _ in runs)
    found_on = sum(len(on.found) for _, _, on in runs)
    requests: Counter[str] = Counter()
    for _, _, on in runs:
        requests.update(on.graph_requests)
    wall_off = sum(off.seconds for _, off, _ in runs)
    wall_on = sum(on.seconds for _, _, on in runs)
    figure(
        f"recall: off {found_off}/{expected} ({found_off / expected:.0%}), on {found_on}/{expected} ({found_on / expected:.0%})"
    )
    per_job = {name: round(count / len(runs), 1) for name, count in sorted(requests.items())}
    figure(f"graph requests per job with chasing, by provider: {per_job}")
    ratios = sorted(on.seconds / max(off.seconds, 0.001) for _, off, on in runs)
    figure(
        f"wall time: off {wall_off / len(runs):.1f} s, on {wall_on / len(runs):.1f} s per job ({wall_on / wall_off:.2f}x); "
        f"per goal on/off median {ratios[len(ratios) // 2]:.2f}x, largest {ratios[-1]:.2f}x"
    )


if __name__ == "__main__":
    main()
