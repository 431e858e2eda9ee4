"""Recorded real upstream responses (../shared/corpus/api): every search/list answer parses, 4xx fail softly."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from functions.search.connectors import arxiv, crossref, openalex, semantic_scholar
from functions.search.models import ConnectorResult
from tests.support.cassettes import Interaction, load_all, load_arxiv_fixture
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = pytest.mark.corpus
Parser = Callable[[int, str | bytes], ConnectorResult]
PARSERS: dict[str, Parser] = {
    "export.arxiv.org": arxiv.parse_response,
    "api.semanticscholar.org": semantic_scholar.parse_response,
    "api.openalex.org": openalex.parse_response,
    "api.crossref.org": crossref.parse_response,
}
S2_LIST_PATHS = (
    "/paper/search",
    "/paper/batch",
    "/citations",
    "/references",
    "/recommendations/",
    "/snippet/search",
)


def _interactions(corpus_dir: Path) -> list[Interaction]:
    return [i for i in load_all(corpus_dir / "api") if urlsplit(i.uri).hostname in PARSERS]


def _titled(records: list[Any]) -> int:
    return sum(
        1
        for r in records
        if isinstance(r, dict) and str(r.get("title") or r.get("display_name") or "").strip()
    )


def _expected_works(interaction: Interaction) -> int | None:
    """Independent count of the works a list answer holds (None: not a list of works)."""
    host, path = urlsplit(interaction.uri).hostname, interaction.path
    if host == "export.arxiv.org":
        return interaction.body.count(b"<entry>")
    try:
        data = interaction.json()
    except ValueError:
        return None  # e.g. Crossref content negotiation (BibTeX, citation text): not a list of works
    if host == "api.semanticscholar.org":
        if not any(marker in path for marker in S2_LIST_PATHS):
            return None
        rows = data if isinstance(data, list) else data.get("data", data.get("recommendedPapers", []))
        unwrapped = []
        for row in rows:
            if isinstance(row, dict):
                row = row.get("citingPaper") or row.get("citedPaper") or row.get("paper") or row
            unwrapped.append(row)
        # a record with neither an id nor a URL cannot be linked to, so it cannot be a result
        linkable = [
            r
            for r in unwrapped
            if isinstance(r, dict) and (r.get("paperId") or r.get("corpusId") or r.get("url"))
        ]
        return _titled(linkable)
    if host == "api.openalex.org":
        if "results" in data:
            return _titled(data["results"])
        return _titled([data]) if str(data.get("id", "")).startswith("https://openalex.org/W") else None
    if data.get("message-type") == "work-list":
        return sum(1 for item in data["message"]["items"] if any(item.get("title") or []))
    if data.get("message-type") == "work":
        return 1
    return None


def test_every_recorded_list_answer_parses_with_the_right_count(corpus_dir: Path) -> None:
    checked: dict[str, int] = {}
    for interaction in _interactions(corpus_dir):
        if interaction.status != 200:
            continue
        expected = _expected_works(interaction)
        if expected is None:
            continue
        host = urlsplit(interaction.uri).hostname or ""
        result = PARSERS[host](interaction.status, interaction.body)
        where = f"{interaction.source} {interaction.uri[:120]}"
        assert result.error is None, where
        assert len(result.papers) == expected, where
        assert result.total >= len(result.papers), where
        for paper in result.papers:
            assert paper.title and paper.url.startswith("http"), where
            assert paper.year is None or 1900 <= paper.year <= 2100, where
            assert all(isinstance(a, str) and a for a in paper.authors), where
        checked[host] = checked.get(host, 0) + 1
    assert set(checked) == set(PARSERS), checked  # every API had list answers to check
    assert sum(checked.values()) >= 30, checked


def test_the_openalex_work_entity_parses(corpus_dir: Path) -> None:
    for path in sorted((corpus_dir / "api" / "openalex").rglob("W*.json")):
        result = openalex.parse_response(200, path.read_bytes())
        assert result.error is None and len(result.papers) == 1
        paper = result.papers[0]
        assert paper.abstract and paper.doi and paper.year and paper.authors


def test_recorded_4xx_answers_become_failed_connector_results(corpus_dir: Path) -> None:
    failures = [i for i in _interactions(corpus_dir) if 400 <= i.status < 500]
    assert len(failures) >= 20
    for interaction in failures:
        host = urlsplit(interaction.uri).hostname or ""
        result = PARSERS[host](interaction.status, interaction.body)
        assert not result.ok and result.papers == []
        assert result.error and result.error.startswith(f"HTTP {interaction.status} from ")


def test_arxiv_error_feed_message_is_kept(corpus_dir: Path) -> None:
    path = next((corpus_dir / "api" / "arxiv").rglob("id_abc_*.json"))
    result = arxiv.parse_response(200, load_arxiv_fixture(path).body)  # same body, had it come with a 200
    assert result.error == "arXiv API error: incorrect id format for abc"


@pytest.fixture
def replaying_web(corpus_dir: Path, web: ScholarlyWeb) -> Iterator[ScholarlyWeb]:
    """The local web answering each search path with a recorded real response."""
    api = corpus_dir / "api"
    arxiv_answer = load_arxiv_fixture(next((api / "arxiv").rglob("q_testing_s0_m10_*.json")))
    by_source = {i.source: i for i in load_all(api) if i.status == 200}
    s2_answer = by_source["test_get_papers_not_found_warning.yaml"]
    openalex_answer = by_source["pro_fetch_search_biodiversity_AND_finance.yml"]
    crossref_answer = by_source["test_cursor.yaml"]
    web.set_response(web.ARXIV_PATH, arxiv_answer.body, content_type="application/atom+xml")
    for path, answer in (
        (web.SEMANTIC_SCHOLAR_PATH, s2_answer),
        (web.OPENALEX_PATH, openalex_answer),
        (web.CROSSREF_PATH, crossref_answer),
    ):
        web.set_response(path, answer.body, content_type="application/json")
    yield web


def test_tools_search_serves_recorded_papers(
    client: TestClient, replaying_web: ScholarlyWeb, corpus_dir: Path
) -> None:
    response = client.post(
        "/api/tools/search", json={"query": "testing deep learning models", "max_results": 100}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["failed_sources"] == {} and body["search_metrics"]["sources_searched"] == 5
    results = body["results"]
    assert len(results) == min(100, body["total_found"]) and body["total_found"] > 100
    titles = {r["title"] for r in results}
    assert "Testing Deep Learning Models: A First Comparative Study of Multiple Testing Techniques" in titles
    for result in results:
        assert isinstance(result["url"], str) and result["url"].startswith("http")
        assert isinstance(result["title"], str) and result["title"]
        assert isinstance(result["snippet"], str) and 0 < len(result["snippet"]) <= 500
        assert isinstance(result["relevance_score"], float) and 0 <= result["relevance_score"] <= 1
        assert isinstance(result["year"], int) and 1900 <= result["year"] <= 2100
        assert result["citations"] is None or isinstance(result["citations"], int)
        assert isinstance(result["authors"], list) and all(isinstance(a, str) for a in result["authors"])
        assert result["venue"] is None or isinstance(result["venue"], str)
        assert result["doi"] is None or result["doi"].startswith("10.")
    scores = [r["relevance_score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    json.dumps(body)
