"""The citation graphs' requests as each provider expects them, and their answers read from the recorded
responses in ../shared/corpus/api (skipped when it is absent) and from built shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from functions.common.settings import Settings
from functions.search.connectors import crossref, openalex, semantic_scholar
from functions.search.connectors.base import GraphQuery, newest_most_cited
from tests.support.cassettes import load_all, load_cassette

S2 = "semanticscholar/danielnsilva-semanticscholar"


def _query(direction: str = "references", **ids: str) -> GraphQuery:
    return GraphQuery(ids.get("doi"), ids.get("arxiv_id"), direction, 10, "t", "j", 0.0)  # type: ignore[arg-type]


def test_semantic_scholar_graph_requests_name_the_seed_and_ask_for_every_field() -> None:
    settings = Settings(semantic_scholar_api_url="http://s2.test/graph/v1")
    request = semantic_scholar.build_graph_request(settings, _query("citations", doi="10.1/x"), 100)
    assert request is not None and request.url == "http://s2.test/graph/v1/paper/DOI:10.1/x/citations"
    assert request.params == {"fields": semantic_scholar.FIELDS, "offset": 100, "limit": 100}
    assert request.json_body is None
    arxiv = semantic_scholar.build_graph_request(settings, _query(arxiv_id="2101.00001"), 0)
    assert arxiv is not None and arxiv.url.endswith("/paper/ARXIV:2101.00001/references")
    assert semantic_scholar.build_graph_request(settings, _query(), 0) is None
    batch = semantic_scholar.build_batch_request(settings, [_query(doi="10.1/x"), _query(arxiv_id="2101.1")])
    assert batch.url == "http://s2.test/graph/v1/paper/batch" and batch.params == {
        "fields": "paperId,referenceCount,citationCount"
    }
    assert batch.json_body == {"ids": ["DOI:10.1/x", "ARXIV:2101.1"]}


def test_semantic_scholar_batch_answers_keep_the_order_and_null_for_unknown_ids() -> None:
    page = semantic_scholar.parse_batch(200, json.dumps([{"paperId": "a1"}, None, {"paperId": "c3"}]))
    assert page.ok and page.ids == ["a1", "", "c3"]
    assert not semantic_scholar.parse_batch(200, json.dumps({"data": []})).ok
    refused = semantic_scholar.parse_batch(429, '{"message": "Too Many Requests"}')
    assert refused.error == "HTTP 429 from semantic_scholar: Too Many Requests"


def test_recorded_citations_page_is_read_with_its_next_offset(corpus_dir: Path) -> None:
    recorded = load_cassette(corpus_dir / "api" / S2 / "test_get_paper_citations.yaml")[0]
    page = semantic_scholar.parse_graph_page(recorded.status, recorded.body)
    assert page.ok and page.next_offset == 100
    data = recorded.json()["data"]
    assert len(page.papers) == sum(1 for row in data if row["citingPaper"].get("title"))
    assert page.papers[0].title == data[0]["citingPaper"]["title"]
    assert page.papers[0].url == f"https://www.semanticscholar.org/paper/{data[0]['citingPaper']['paperId']}"


def test_recorded_reference_is_read_with_its_identifiers(corpus_dir: Path) -> None:
    reference = json.loads((corpus_dir / "api" / S2 / "Reference.json").read_text())
    page = semantic_scholar.parse_graph_page(200, json.dumps({"offset": 0, "data": [reference]}))
    assert page.ok and page.next_offset is None
    cited = reference["citedPaper"]
    [paper] = page.papers
    assert paper.title == cited["title"] and paper.arxiv_id == cited["externalIds"]["ArXiv"]
    assert paper.source == "semantic_scholar"


def test_openalex_graph_requests_use_filters_and_the_seed_by_doi() -> None:
    settings = Settings(openalex_api_url="http://oa.test", contact_email="me@example.org")
    seed = openalex.build_seed_request(settings, _query(arxiv_id="2101.00001"))
    assert seed is not None and seed.url == "http://oa.test/works/doi:10.48550/arxiv.2101.00001"
    assert seed.params == {"mailto": "me@example.org", "select": "id,referenced_works"}
    cites = openalex.build_works_request(settings, "cites:W1", 500, "publication_year:desc")
    assert cites.params == {
        "mailto": "me@example.org",
        "filter": "cites:W1",
        "per_page": 200,
        "sort": "publication_year:desc",
    }


def test_recorded_openalex_work_gives_its_id_and_referenced_works(corpus_dir: Path) -> None:
    work = json.loads(
        (corpus_dir / "api" / "openalex" / "openalex-python-entities" / "W2741809807.json").read_text()
    )
    page = openalex.parse_seed(200, json.dumps(work))
    assert page.ok and page.ids[0] == "W2741809807"
    assert page.ids[1:] == [url.rsplit("/", 1)[1] for url in work["referenced_works"]]
    assert not openalex.parse_seed(200, json.dumps({"results": []})).ok


def test_recorded_crossref_reference_list_gives_the_deposited_dois(corpus_dir: Path) -> None:
    recorded = next(
        x
        for x in load_all(corpus_dir / "api" / "crossref" / "habanero-cassettes")
        if x.uri.endswith("/works/10.1371/journal.pone.0033693")
    )
    page = crossref.parse_reference_list(recorded.status, recorded.body)
    references = recorded.json()["message"]["reference"]
    with_doi = list(dict.fromkeys(r["DOI"].lower() for r in references if r.get("DOI")))
    assert page.ok and page.ids == with_doi and len(with_doi) < len(references)
    request = crossref.build_doi_batch_request(Settings(crossref_api_url="http://cr.test"), with_doi[:2])
    assert request.params["filter"] == f"doi:{with_doi[0]},doi:{with_doi[1]}" and request.params["rows"] == 2


def test_newest_and_most_cited_come_first() -> None:
    page = semantic_scholar.parse_graph_page(
        200,
        json.dumps(
            {
                "data": [
                    {"citingPaper": {"paperId": "old", "title": "Old", "year": 2019, "citationCount": 500}},
                    {
                        "citingPaper": {
                            "paperId": "new-few",
                            "title": "New few",
                            "year": 2024,
                            "citationCount": 1,
                        }
                    },
                    {
                        "citingPaper": {
                            "paperId": "new-many",
                            "title": "New many",
                            "year": 2024,
                            "citationCount": 9,
                        }
                    },
                    {"citingPaper": {"paperId": "undated", "title": "Undated"}},
                ]
            }
        ),
    )
    assert [p.title for p in newest_most_cited(page.papers)] == ["New many", "New few", "Old", "Undated"]


@pytest.mark.parametrize("body", ["not json", json.dumps({"total": 3})])
def test_unusable_graph_answers_are_errors_not_exceptions(body: str) -> None:
    assert semantic_scholar.parse_graph_page(200, body).error
