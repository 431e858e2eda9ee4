"""Connector parsers and request building on recorded-style fixtures built in code."""

from __future__ import annotations

import json

from functions.search.connectors import arxiv, crossref, openalex, semantic_scholar
from functions.search.connectors.base import ConnectorContext
from functions.search.models import PaperQuery
from tests.support import scholarly_fixtures as fx

PAPERS = fx.TRANSFORMER_PAPERS


def test_arxiv_feed_is_parsed() -> None:
    result = arxiv.parse_response(200, fx.arxiv_feed(PAPERS, total=1234))
    assert result.ok and result.total == 1234
    assert [p.arxiv_id for p in result.papers] == ["2301.00001", "2205.00003"]
    first = result.papers[0]
    assert first.url == "https://arxiv.org/abs/2301.00001"
    assert first.doi == "10.1234/sparse.2023.001"
    assert first.authors == ["Garcia, M.", "Chen, W.", "Smith, J."]
    assert first.year == 2023 and first.pdf_url == "https://arxiv.org/pdf/2301.00001v2"
    assert first.venue == "Journal of Machine Learning Research" and first.source_type == "academic"
    assert result.papers[1].venue == "arXiv" and result.papers[1].source_type == "technical"
    assert [p.upstream_rank for p in result.papers] == [1, 2]


def test_arxiv_errors_become_failed_results() -> None:
    error_feed = fx.arxiv_feed([]).replace(
        "</feed>",
        "<entry><id>https://arxiv.org/api/errors#bad</id><title>Error</title>"
        "<summary>incorrect id format for abc</summary></entry></feed>",
    )
    assert arxiv.parse_response(200, error_feed).error == "arXiv API error: incorrect id format for abc"
    assert "HTTP 400" in (arxiv.parse_response(400, error_feed).error or "")
    assert arxiv.parse_response(200, "<html>maintenance</html>").error
    assert arxiv.parse_response(200, fx.arxiv_feed([])).papers == []


def test_arxiv_query_uses_fielded_boolean_syntax() -> None:
    query = PaperQuery(query="Self-attention in transformer architectures", year_start=2022, year_end=2024)
    assert arxiv.build_search_query(query) == (
        'all:"self attention" AND all:transformer AND all:architectures '
        "AND submittedDate:[202201010000 TO 202412312359]"
    )
    request = arxiv.ArxivConnector(ConnectorContext()).build_request(query, 7)
    assert request.params["max_results"] == 7 and request.params["sortBy"] == "relevance"


def test_semantic_scholar_search_is_parsed() -> None:
    result = semantic_scholar.parse_response(200, json.dumps(fx.semantic_scholar_search(PAPERS)))
    assert result.ok and result.total == 4 and len(result.papers) == 4
    sparse = result.papers[0]
    assert sparse.doi == "10.1234/sparse.2023.001"  # normalised to lower case
    assert sparse.arxiv_id == "2301.00001" and sparse.url == "https://arxiv.org/abs/2301.00001"
    assert sparse.citations == 120 and sparse.pdf_url == "https://arxiv.org/pdf/2301.00001"


def test_semantic_scholar_envelopes_and_errors() -> None:
    batch = [None, {"paperId": "abc", "title": "A Paper", "year": 2020}]
    assert len(semantic_scholar.parse_response(200, json.dumps(batch)).papers) == 1
    citations = {"data": [{"citingPaper": {"paperId": "x1", "title": "Citing Work"}}]}
    paper = semantic_scholar.parse_response(200, json.dumps(citations)).papers[0]
    assert paper.url == "https://www.semanticscholar.org/paper/x1"
    failed = semantic_scholar.parse_response(404, '{"error":"Paper with id 0 not found"}')
    assert failed.error == "HTTP 404 from semantic_scholar: Paper with id 0 not found"
    assert semantic_scholar.parse_response(200, "not json").error


def test_semantic_scholar_request_has_fields_year_and_key(monkeypatch: object) -> None:
    from pydantic import SecretStr

    from functions.common.settings import Settings

    context = ConnectorContext(settings=Settings(semantic_scholar_api_key=SecretStr("k-123")))
    request = semantic_scholar.SemanticScholarConnector(context).build_request(
        PaperQuery(query="graph neural networks", year_start=2020), 30
    )
    assert request.url.endswith("/paper/search")
    assert "abstract" in request.params["fields"] and "externalIds" in request.params["fields"]
    assert request.params["year"] == "2020-" and request.headers["x-api-key"] == "k-123"


def test_openalex_works_are_parsed_with_rebuilt_abstract() -> None:
    result = openalex.parse_response(200, json.dumps(fx.openalex_works(PAPERS)))
    assert result.ok and len(result.papers) == 4
    sparse = result.papers[0]
    assert sparse.abstract == PAPERS[0].abstract
    assert sparse.arxiv_id == "2301.00001"  # found among the locations
    assert sparse.venue == "Journal of Machine Learning Research"
    assert result.papers[2].source_type == "technical"
    assert openalex.rebuild_abstract({"world": [1], "hello": [0]}) == "hello world"


def test_openalex_request_and_errors() -> None:
    from functions.common.settings import Settings

    context = ConnectorContext(settings=Settings(contact_email="team@example.org"))
    request = openalex.OpenAlexConnector(context).build_request(
        PaperQuery(query="soil microbiome", year_start=2019, year_end=2021), 10
    )
    assert request.params["search"] == "soil microbiome" and request.params["mailto"] == "team@example.org"
    assert request.params["filter"] == "from_publication_date:2019-01-01,to_publication_date:2021-12-31"
    failed = openalex.parse_response(
        401, '{"error":"Invalid or missing API key","message":"API key not found"}'
    )
    assert failed.error == "HTTP 401 from openalex: API key not found"


def test_crossref_works_are_parsed_without_jats() -> None:
    result = crossref.parse_response(200, json.dumps(fx.crossref_works(PAPERS)))
    assert result.ok and len(result.papers) == 3
    first = result.papers[0]
    assert first.abstract == PAPERS[0].abstract
    assert first.url == "https://doi.org/10.1234/sparse.2023.001"
    assert first.authors == ["Garcia, M.", "Chen, W.", "Smith, J."]
    assert first.year == 2023 and first.citations == 120


def test_crossref_request_and_non_work_answers() -> None:
    from functions.common.settings import Settings

    context = ConnectorContext(settings=Settings(contact_email="team@example.org"))
    request = crossref.CrossrefConnector(context).build_request(PaperQuery(query="widgets", year_end=2020), 5)
    assert request.params["query.bibliographic"] == "widgets" and request.params["rows"] == 5
    assert request.params["filter"] == "until-pub-date:2020-12-31" and request.params["mailto"]
    members = json.dumps({"status": "ok", "message-type": "member-list", "message": {"items": []}})
    assert "no works" in (crossref.parse_response(200, members).error or "")
    assert crossref.parse_response(404, "Resource not found.").error == (
        "HTTP 404 from crossref: Resource not found."
    )


def test_unforeseen_shapes_are_error_results_not_exceptions() -> None:
    weird = json.dumps(
        {"meta": {"count": 1}, "results": [{"id": "W1", "title": "T", "ids": ["not", "a", "dict"]}]}
    )
    assert (openalex.parse_response(200, weird).error or "").startswith("unparseable openalex answer")
    odd_crossref = json.dumps(
        {"message-type": "work-list", "message": {"items": [{"title": "x", "issued": 5}]}}
    )
    result = crossref.parse_response(200, odd_crossref)
    assert result.error and result.error.startswith("unparseable crossref answer")
    assert semantic_scholar.parse_response(200, json.dumps({"data": 5})).error
