"""The search API over real HTTP against a local scholarly web, with cache and limits on moto DynamoDB."""

from __future__ import annotations

import asyncio
import time

import boto3
import pytest
from fastapi.testclient import TestClient

from functions.common.settings import get_settings
from functions.local_runtime.aws import EmbeddedAws
from functions.search.models import PaperQuery
from functions.search.service import SearchService
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = pytest.mark.integration
UPSTREAMS = (
    ScholarlyWeb.ARXIV_PATH,
    ScholarlyWeb.SEMANTIC_SCHOLAR_PATH,
    ScholarlyWeb.OPENALEX_PATH,
    ScholarlyWeb.CROSSREF_PATH,
)


def _search(client: TestClient, query: str = "transformer architectures", **extra: object) -> dict:  # type: ignore[type-arg]
    response = client.post("/api/tools/search", json={"query": query, **extra})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_tools_search_returns_the_served_papers_well_typed(client: TestClient, web: ScholarlyWeb) -> None:
    body = _search(client, max_results=10, filters={"year_range": {"start": 2020, "end": 2025}})
    assert [web.count(path) for path in UPSTREAMS] == [1, 1, 1, 1]
    titles = {r["title"] for r in body["results"]}
    assert "Sparse Attention Transformers for Long Documents" in titles and len(body["results"]) == 4
    for result in body["results"]:
        assert isinstance(result["url"], str) and result["url"].startswith(
            ("https://arxiv.org/abs/", "https://doi.org/")
        )
        assert isinstance(result["title"], str) and result["title"]
        assert isinstance(result["snippet"], str) and 100 <= len(result["snippet"]) <= 500
        assert isinstance(result["relevance_score"], float) and 0 <= result["relevance_score"] <= 1
        assert isinstance(result["year"], int) and 2020 <= result["year"] <= 2025
        assert isinstance(result["citations"], int)
        assert all(isinstance(a, str) and ", " in a for a in result["authors"])
        assert result["venue"] is None or isinstance(result["venue"], str)
        assert isinstance(result["doi"], str) and result["doi"].startswith("10.")
    assert body["search_metrics"]["sources_searched"] == 5 and body["failed_sources"] == {}
    arxiv_request = web.requests_to(web.ARXIV_PATH)[0]
    assert arxiv_request.param("search_query") == (
        "all:transformer AND all:architectures AND submittedDate:[202001010000 TO 202512312359]"
    )
    assert web.requests_to(web.SEMANTIC_SCHOLAR_PATH)[0].param("year") == "2020-2025"


def test_a_repeated_query_is_answered_from_the_dynamodb_cache(client: TestClient, web: ScholarlyWeb) -> None:
    first = _search(client)
    calls = web.count()
    second = _search(client, query="  Transformer   ARCHITECTURES ")
    assert web.count() == calls  # no upstream call at all
    assert second["search_metrics"]["from_cache"] is True and first["search_metrics"]["from_cache"] is False
    assert [r["url"] for r in first["results"]] == [r["url"] for r in second["results"]]
    table = boto3.resource("dynamodb", region_name="us-east-1").Table(get_settings().cache_table)
    keys = [str(item["cache_key"]) for item in table.scan()["Items"]]
    assert len(keys) == 4 and all(k.startswith("search:v1:") for k in keys)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [("503", "HTTP 503 from crossref"), ("down", "crossref unreachable"), ("500", "HTTP 500 from crossref")],
)
def test_one_failing_upstream_leaves_a_200_with_the_others(
    client: TestClient, web: ScholarlyWeb, mode: str, reason: str
) -> None:
    web.fail(web.CROSSREF_PATH, mode)
    body = _search(client)
    assert body["results"] and set(body["failed_sources"]) == {"crossref"}
    assert body["failed_sources"]["crossref"].startswith(reason)
    if mode != "down":
        assert web.count(web.CROSSREF_PATH) == 2  # retried once (SEARCH_UPSTREAM_RETRIES=1)


def test_upstream_429_is_retried_after_retry_after_then_recovers(
    client: TestClient, web: ScholarlyWeb
) -> None:
    web.fail(web.OPENALEX_PATH, "429", retry_after=0.2, times=1)
    body = _search(client)
    assert body["failed_sources"] == {}
    assert web.count(web.OPENALEX_PATH) == 2
    gap = web.requests_to(web.OPENALEX_PATH)[1].at - web.requests_to(web.OPENALEX_PATH)[0].at
    assert gap >= 0.05  # it waited (SEARCH_MAX_BACKOFF_SECONDS) before asking again


def test_persistent_429_opens_the_breaker_for_retry_after(client: TestClient, web: ScholarlyWeb) -> None:
    web.fail(web.SEMANTIC_SCHOLAR_PATH, "429", retry_after=120)
    body = _search(client)
    assert body["failed_sources"]["semantic_scholar"].startswith("HTTP 429 from semantic_scholar")
    calls = web.count(web.SEMANTIC_SCHOLAR_PATH)
    body = _search(client, query="mixture of experts")
    assert web.count(web.SEMANTIC_SCHOLAR_PATH) == calls  # circuit open: no call
    assert "circuit for semantic_scholar is open" in body["failed_sources"]["semantic_scholar"]
    health = client.get("/api/v1/health").json()
    assert health["status"] == "degraded" and health["circuit_breakers"]["semantic_scholar"] == "open"


def test_breaker_opens_after_repeated_failures(client: TestClient, web: ScholarlyWeb) -> None:
    web.fail(web.ARXIV_PATH, "down")
    for index in range(3):
        _search(client, query=f"query number {index}")
    calls = web.count(web.ARXIV_PATH)
    body = _search(client, query="query number four")
    assert web.count(web.ARXIV_PATH) == calls
    assert "circuit for arxiv is open" in body["failed_sources"]["arxiv"]


def test_every_upstream_down_is_the_seed_500(client: TestClient, web: ScholarlyWeb) -> None:
    for path in UPSTREAMS:
        web.fail(path, "down")
    response = client.post("/api/tools/search", json={"query": "transformers"})
    assert response.status_code == 500
    body = response.json()
    assert body["error"] == "Search service unavailable"
    assert all(name in body["message"] for name in ("arxiv", "semantic_scholar", "openalex", "crossref"))


def test_slow_upstream_hits_its_timeout_without_delaying_the_answer(
    client: TestClient, web: ScholarlyWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    from functions.common.settings import reset_settings_cache

    monkeypatch.setenv("SEARCH_CONNECTOR_TIMEOUT_SECONDS", "0.6")
    reset_settings_cache()  # the search service is rebuilt with the new timeout
    _search(client, query="warm up the container")  # first boto3 calls are slow on a cold start
    hold = web.hold(web.OPENALEX_PATH)  # no answer from openalex until the web stops
    body = _search(client)
    assert body["failed_sources"] == {"openalex": "openalex timed out after 0.6 s"} and body["results"]
    assert not hold.outlasted  # answered while openalex still had not: its time-out did not wait for it


def test_arxiv_spacing_is_shared_by_concurrent_requests_and_instances(
    aws: EmbeddedAws, web: ScholarlyWeb, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCH_ARXIV_MIN_INTERVAL_SECONDS", "0.3")
    # two "Lambda instances": separate services, one rate-limit table
    first, second = SearchService.from_settings(), SearchService.from_settings()

    phase_start: list[float] = []

    async def fan_out() -> None:
        for index, service in enumerate([first, second]):  # warm connections: cold set-up adds jitter
            await service.search(PaperQuery(query=f"warm up {index}", connectors=["arxiv"]))
        phase_start.append(time.monotonic())
        await asyncio.gather(
            *(
                service.search(PaperQuery(query=f"spacing probe {i}", connectors=["arxiv"]))
                for i, service in enumerate([first, second, first])
            )
        )

    asyncio.run(fan_out())
    stamps = sorted(r.at for r in web.requests_to(web.ARXIV_PATH))
    assert len(stamps) == 5
    # Each request leaves no earlier than its booked slot, and slots are one interval apart, so the
    # k-th of the three concurrent requests reaches arXiv at least k intervals after they started
    # (without the shared bucket all three arrive within milliseconds). A tight upper bound would only
    # measure the machine's load; this one tells the configured interval from the 3 s default, under
    # which the third would arrive 6 s after the start.
    offsets = [stamp - phase_start[0] for stamp in stamps[2:]]
    assert all(offset >= 0.3 * k - 0.02 for k, offset in enumerate(offsets)), offsets
    assert offsets[-1] < 6.0, offsets


def test_v1_search_and_health(client: TestClient, web: ScholarlyWeb) -> None:
    response = client.post(
        "/api/v1/search",
        json={"query": "transformer architectures", "top_k": 3, "connectors": ["arxiv", "crossref"]},
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["connectors_used"] == ["arxiv", "crossref"]
    assert web.count(web.OPENALEX_PATH) == 0 and web.count(web.SEMANTIC_SCHOLAR_PATH) == 0
    assert body["total_results"] == len(body["sources"])
    assert all(s["id"].split("_")[0] in {"ax", "cr"} for s in body["sources"])
    assert web.requests_to(web.CROSSREF_PATH)[0].param("rows") == "3"
    health = client.get("/api/v1/health").json()
    assert health == {
        "status": "healthy",
        "connectors": ["arxiv", "semantic_scholar", "openalex", "crossref", "library"],
        "llm_configured": False,
        "circuit_breakers": health["circuit_breakers"],
    }


def test_client_rate_limit_on_dynamodb(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    from functions.common.settings import reset_settings_cache

    monkeypatch.setenv("CLIENT_RATE_LIMIT_PER_MINUTE", "2")
    reset_settings_cache()
    statuses = [
        client.post("/api/tools/search", json={"query": "q"}, headers={"x-api-key": "k"}).status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 429]


def test_papers_without_doi_or_arxiv_id_link_to_their_open_pdf(client: TestClient, web: ScholarlyWeb) -> None:
    from tests.support import scholarly_fixtures as fx

    pdf_url = web.url("/papers/local-study.pdf")
    local = fx.SamplePaper(
        title="A Local Study of Transformer Architectures",
        abstract="We describe transformer architectures studied on a local scholarly web. " * 3,
        year=2024,
        pdf_url=pdf_url,
    )
    fx.install(web, [local])
    body = _search(client)
    assert [r["url"] for r in body["results"]] == [pdf_url]  # from S2 and OpenAlex, merged by title
    assert body["results"][0]["doi"] is None
