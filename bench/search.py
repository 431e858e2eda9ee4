"""Search fan-out benchmark: wall time against a local scholarly web with injected latency.

Prints, for four connectors with different upstream latencies:
- the wall time of one search (all four concurrently) against the slowest connector and the sum,
- the wall time of the same search repeated (answered from the response cache),
on the embedded AWS (moto DynamoDB cache and rate-limit tables) and with the in-memory twins.

    .venv/bin/python bench/search.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # keep the figures readable

from functions.common.settings import reset_settings_cache
from functions.local_runtime.aws import EmbeddedAws
from functions.search.models import PaperQuery
from functions.search.service import SearchService
from tests.support import scholarly_fixtures as fx
from tests.support.scholarly_web import ScholarlyWeb

LATENCY = {  # seconds each upstream takes to answer
    ScholarlyWeb.ARXIV_PATH: 0.80,
    ScholarlyWeb.SEMANTIC_SCHOLAR_PATH: 0.50,
    ScholarlyWeb.OPENALEX_PATH: 0.30,
    ScholarlyWeb.CROSSREF_PATH: 0.20,
}


async def _timed(service: SearchService, query: PaperQuery) -> tuple[float, bool, int]:
    started = time.perf_counter()
    outcome = await service.search(query)
    return time.perf_counter() - started, outcome.from_cache, len(outcome.failed_connectors)


async def _measure(service: SearchService, rounds: int) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"first": [], "repeat": []}
    await service.search(PaperQuery(query="warm up the clients"))  # connection set-up is not fan-out
    for index in range(rounds):
        query = PaperQuery(query=f"transformer architectures round {index}")
        first, cached, failed = await _timed(service, query)
        repeat, repeat_cached, _ = await _timed(service, query)
        assert not cached and repeat_cached and failed == 0, "benchmark set-up is wrong"
        figures["first"].append(first)
        figures["repeat"].append(repeat)
    return figures


# Beside each figure: the providers' spacing was 1 ms, not the real web's rate limits.
SPACING = "[provider intervals 1 ms]"


def _figure(*values: object) -> None:
    print(*values, SPACING)


def _report(label: str, figures: dict[str, list[float]]) -> None:
    slowest, total = max(LATENCY.values()), sum(LATENCY.values())
    first = statistics.median(figures["first"])
    repeat = statistics.median(figures["repeat"])
    _figure(f"\n[{label}] median of {len(figures['first'])} rounds")
    _figure(f"  fan-out, 4 connectors     : {first * 1000:8.1f} ms")
    _figure(
        f"  slowest single upstream   : {slowest * 1000:8.1f} ms   (sum of all four: {total * 1000:.0f} ms)"
    )
    _figure(f"  fan-out / slowest         : {first / slowest:8.2f} x   (fan-out / sum: {first / total:.2f})")
    _figure(f"  cached repeat             : {repeat * 1000:8.1f} ms")
    _figure(f"  first / cached repeat     : {first / repeat:8.1f} x faster")
    _figure(f"  all first calls (ms)      : {', '.join(f'{v * 1000:.0f}' for v in figures['first'])}")
    _figure(f"  all repeats (ms)          : {', '.join(f'{v * 1000:.1f}' for v in figures['repeat'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with ScholarlyWeb() as web:
        fx.install(web)
        for path, seconds in LATENCY.items():
            web.set_latency(path, seconds)
        os.environ.update(web.env())
        # Provider spacing is measured by the tests; here it must not serialise the rounds.
        for name in ("ARXIV", "SEMANTIC_SCHOLAR", "OPENALEX", "CROSSREF"):
            os.environ[f"SEARCH_{name}_MIN_INTERVAL_SECONDS"] = "0.001"
        # The four upstream APIs: the in-process team library has no latency to fan out over.
        os.environ["SEARCH_CONNECTORS"] = "arxiv,semantic_scholar,openalex,crossref"
        reset_settings_cache()
        print("upstream latencies (ms):", {p.split("/")[1]: int(s * 1000) for p, s in LATENCY.items()})
        print(f"machine: {os.cpu_count()} CPUs, shared with other work (figures are noisy)")
        print("conditions: provider intervals 1 ms (not the real web's rate limits): the fan-out is measured")

        os.environ["SEARCH_STATE_BACKEND"] = "memory"
        _report(
            "in-memory cache and limiter", asyncio.run(_measure(SearchService.from_settings(), args.rounds))
        )

        os.environ["SEARCH_STATE_BACKEND"] = "dynamodb"
        with EmbeddedAws(step_functions=(), state_machines=()):
            service = SearchService.from_settings()
            _report(
                "DynamoDB cache and limiter (moto, in-process)", asyncio.run(_measure(service, args.rounds))
            )
        _figure(f"\nupstream requests served: {web.count()}")


if __name__ == "__main__":
    main()
