"""Authoritative metadata through the port (an in-memory fake), and the connectors' lookup parsers."""

from __future__ import annotations

import asyncio
import json

from functions.common.models import LookupKind, WorkMetadata
from functions.extract.identifiers import DocumentIdentifiers, RequestedIdentifiers
from functions.extract.metadata import LayoutFacts, MetadataResolver
from functions.search.connectors import arxiv, crossref, openalex, semantic_scholar
from tests.support.scholarly_fixtures import SamplePaper, arxiv_feed, crossref_works, openalex_works

TITLE = "Sparse Attention Routing for Efficient Long Document Transformers"
LAYOUT = LayoutFacts(
    title="Research Article Sparse Attention Routing",
    authors=["Maria Keller"],
    front_text=f"{TITLE}\nMaria Keller and Tomas Lindqvist\nAbstract ...",
    year=2021,
)
ABSTRACT = (
    "We propose a sparse attention routing scheme that selects a small set of key blocks for every query."
)


class FakeRegistries:
    """Answers from a table; `slow` sources sleep past any budget."""

    def __init__(
        self, answers: dict[tuple[str, str, str], list[WorkMetadata]], slow: frozenset[str] = frozenset()
    ) -> None:
        self.answers = answers
        self.slow = slow
        self.calls: list[tuple[str, str, str]] = []

    async def lookup(self, source: str, kind: LookupKind, value: str, timeout: float) -> list[WorkMetadata]:
        self.calls.append((source, kind, value))
        if source in self.slow:
            await asyncio.sleep(3600)  # never, within a test
        return self.answers.get((source, kind, value), [])


def resolve(fake: FakeRegistries, found: DocumentIdentifiers, budget: float = 2.0, **requested: str):  # type: ignore[no-untyped-def]
    return asyncio.run(
        MetadataResolver(fake, budget).resolve(found, LAYOUT, RequestedIdentifiers(**requested))
    )


def test_doi_crossref_fields_win_and_openalex_fills_the_abstract() -> None:
    doi = "10.5555/routing.1"
    fake = FakeRegistries(
        {
            ("crossref", "doi", doi): [
                WorkMetadata("crossref", TITLE, ("Maria Keller", "Tomas Lindqvist"), 2021, "JMLR", None, doi)
            ],
            ("openalex", "doi", doi): [
                WorkMetadata("openalex", TITLE.lower(), ("M. Keller",), 2020, None, ABSTRACT, doi)
            ],
        }
    )
    resolved = resolve(fake, DocumentIdentifiers(dois=[doi]))
    assert resolved.title == TITLE and resolved.authors == ["Maria Keller", "Tomas Lindqvist"]
    assert resolved.abstract == ABSTRACT and resolved.year == 2021 and resolved.venue == "JMLR"
    assert resolved.sources == {
        "title": "crossref",
        "authors": "crossref",
        "year": "crossref",
        "venue": "crossref",
        "abstract": "openalex",
    }
    assert ("semantic_scholar", "doi", doi) not in fake.calls, "nothing was missing"


def test_a_doi_found_in_the_text_must_lead_to_this_paper() -> None:
    cited = "10.5555/cited.2"
    fake = FakeRegistries(
        {("crossref", "doi", cited): [WorkMetadata("crossref", "A Completely Different Paper", doi=cited)]}
    )
    assert not resolve(fake, DocumentIdentifiers(dois=[cited])).found
    # The same answer for the DOI the caller asked for is trusted.
    assert resolve(fake, DocumentIdentifiers(), doi=cited).title == "A Completely Different Paper"


def test_arxiv_first_then_semantic_scholar_for_missing_fields() -> None:
    fake = FakeRegistries(
        {
            ("arxiv", "arxiv", "2401.12345"): [
                WorkMetadata("arxiv", TITLE, (), 2024, "arXiv", ABSTRACT, arxiv_id="2401.12345")
            ],
            ("semantic_scholar", "arxiv", "2401.12345"): [
                WorkMetadata("semantic_scholar", TITLE, ("Maria Keller",), 2024)
            ],
        }
    )
    resolved = resolve(fake, DocumentIdentifiers(arxiv_ids=["2401.12345"]))
    assert resolved.sources["title"] == "arxiv" and resolved.sources["authors"] == "semantic_scholar"
    assert resolved.arxiv_id == "2401.12345"


def test_title_search_accepts_only_a_close_match_with_agreeing_year_and_author() -> None:
    layout_title = TITLE
    good = WorkMetadata("crossref", TITLE, ("Maria Keller",), 2021, doi="10.5555/hit")
    wrong_year = WorkMetadata("crossref", TITLE, ("Maria Keller",), 2009)
    other = WorkMetadata("crossref", "Sparse Attention for Short Documents", ("Maria Keller",), 2021)
    layout = LayoutFacts(layout_title, ["Maria Keller"], TITLE, 2021)
    for hits, accepted in (([other, wrong_year], False), ([other, good], True)):
        fake = FakeRegistries({("crossref", "title", layout_title): hits})
        resolved = asyncio.run(MetadataResolver(fake, 2.0).resolve(DocumentIdentifiers(), layout))
        assert resolved.found is accepted


def test_a_hanging_registry_costs_at_most_the_budget() -> None:
    doi = "10.5555/routing.1"
    fake = FakeRegistries(
        {("openalex", "doi", doi): [WorkMetadata("openalex", TITLE, (), 2021, None, ABSTRACT, doi)]},
        slow=frozenset({"crossref"}),
    )
    # a resolver that waited for crossref would not be back within the test's time-out, and would have
    # found openalex's record
    resolved = resolve(fake, DocumentIdentifiers(dois=[doi]), budget=0.5)
    assert not resolved.found  # crossref and openalex are asked together; the batch was cut


# --- connector lookup parsers (the formats the upstreams answer in) --------------------------------------

SAMPLE = SamplePaper(
    title=TITLE,
    abstract=ABSTRACT,
    year=2021,
    authors=("Maria Keller", "Tomas Lindqvist"),
    doi="10.5555/routing.1",
    arxiv_id="2101.01234",
    venue="JMLR",
)


def test_crossref_single_work_answer() -> None:
    item = crossref_works([SAMPLE])["message"]["items"][0]
    body = json.dumps({"status": "ok", "message-type": "work", "message": item})
    result = crossref.parse_lookup(200, body)
    work = result.works[0]
    assert result.ok and work.title == TITLE and work.authors == ("Maria Keller", "Tomas Lindqvist")
    assert work.abstract == ABSTRACT and work.year == 2021 and work.doi == "10.5555/routing.1"
    assert crossref.parse_lookup(404, "Resource not found.").works == []
    assert not crossref.parse_lookup(200, "<html>").ok


def test_openalex_single_work_answer() -> None:
    work = openalex.parse_lookup(200, json.dumps(openalex_works([SAMPLE])["results"][0])).works[0]
    assert work.abstract == ABSTRACT and work.authors[0] == "Maria Keller" and work.arxiv_id == "2101.01234"


def test_arxiv_id_list_answer_and_semantic_scholar_paper_answer() -> None:
    work = arxiv.parse_lookup(200, arxiv_feed([SAMPLE])).works[0]
    assert work.arxiv_id == "2101.01234" and work.authors == ("Maria Keller", "Tomas Lindqvist")
    record = {
        "title": TITLE,
        "authors": [{"name": "Maria Keller"}],
        "year": 2021,
        "externalIds": {"DOI": "10.5555/X"},
    }
    s2 = semantic_scholar.parse_lookup(200, json.dumps(record)).works[0]
    assert s2.doi == "10.5555/x" and s2.authors == ("Maria Keller",)
