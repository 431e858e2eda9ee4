"""Politeness proven from the receiving side: many concurrent searches through the search service, on a
saturated CPU, and the loopback web's own clock says whether two requests to one provider ever came
closer than the provider's interval, and whether arXiv ever had two requests open at once.

The project's real intervals (arXiv one request per 3 s over one connection, Semantic Scholar one per
1 s) and a network with latency (0.3-1.5 s per call, drawn by the web). No tolerance below an interval:
the web's arrival times are `time.monotonic()` on this very machine, and a request that arrives early
at the web is a request that left early. The busy loops run as separate processes (not threads in
this one), so they take the CPU from the sender and the web alike without holding this process's GIL.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from functions.common.settings import get_settings, reset_settings_cache
from functions.search.config import SearchSettings
from functions.search.models import PaperQuery
from functions.search.service import SearchService
from tests.support import scholarly_fixtures as fx
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

ARXIV_INTERVAL = 3.0  # the project's default and arXiv's terms of use
SEMANTIC_SCHOLAR_INTERVAL = 1.0  # the project's default, the keyed rate
ARXIV_SEARCHES = 5  # four gaps: about 12 s at the real interval
SEMANTIC_SCHOLAR_SEARCHES = 10  # nine gaps: about 9 s
NETWORK_LATENCY = (0.3, 1.5)


@pytest.fixture
def web(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScholarlyWeb]:
    with ScholarlyWeb(seed=18) as server:
        fx.install(server)
        server.set_latency(server.ARXIV_PATH, NETWORK_LATENCY)
        server.set_latency(server.SEMANTIC_SCHOLAR_BASE, NETWORK_LATENCY)
        server.apply_env(monkeypatch)
        for key, value in {
            "SEARCH_ARXIV_MIN_INTERVAL_SECONDS": str(ARXIV_INTERVAL),
            "SEARCH_SEMANTIC_SCHOLAR_MIN_INTERVAL_SECONDS": str(SEMANTIC_SCHOLAR_INTERVAL),
            # room for every search to wait its turn: this test is about spacing, not about budgets
            "SEARCH_CONNECTOR_TIMEOUT_SECONDS": "25",
            "SEARCH_STATE_BACKEND": "memory",
        }.items():
            monkeypatch.setenv(key, value)
        reset_settings_cache()
        yield server
    reset_settings_cache()


@pytest.fixture
def saturated_cpu() -> Iterator[None]:
    """Two busy-looping processes per core for the test's duration."""
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2 * (os.cpu_count() or 1))
    ]
    try:
        yield
    finally:
        for process in busy:
            process.kill()
        for process in busy:
            process.wait(timeout=10)


async def _search_concurrently(service: SearchService) -> None:
    queries = [
        PaperQuery(query=f"sparse attention study {i}", connectors=["arxiv"], per_connector=10)
        for i in range(ARXIV_SEARCHES)
    ] + [
        PaperQuery(query=f"long document transformers {i}", connectors=["semantic_scholar"], per_connector=10)
        for i in range(SEMANTIC_SCHOLAR_SEARCHES)
    ]
    # distinct queries: each one is a real upstream request, none answered from the cache
    await asyncio.gather(*(service.search(query) for query in queries), return_exceptions=True)


def _too_close(web: ScholarlyWeb, provider: str, interval: float) -> list[str]:
    gaps = web.gaps(provider)
    if len(gaps) < 2:
        return [f"only {len(gaps) + 1 if gaps else len(web.arrivals(provider))} {provider} requests arrived"]
    if min(gaps) >= interval:
        return []
    shown = ", ".join(f"{gap:.3f}" for gap in gaps)
    short = sum(1 for gap in gaps if gap < interval)
    return [f"{provider}: {short} of {len(gaps)} gaps under {interval:g} s (gaps {shown} s)"]


def test_no_two_requests_to_a_provider_arrive_closer_than_its_interval(
    web: ScholarlyWeb, saturated_cpu: None
) -> None:
    service = SearchService.from_settings(get_settings(), search_settings=SearchSettings())
    asyncio.run(_search_concurrently(service))

    problems = _too_close(web, "arxiv", ARXIV_INTERVAL) + _too_close(
        web, "semantic_scholar", SEMANTIC_SCHOLAR_INTERVAL
    )
    if web.max_open("arxiv") != 1:
        problems.append(f"arxiv: {web.max_open('arxiv')} requests open at once")
    assert not problems, "\n".join(problems)
