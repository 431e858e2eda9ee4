"""Extraction with the registries on loopback: a DOI printed in the PDF leads to Crossref (title,
authors, venue) and OpenAlex (abstract) answers in their real formats; a failing or hanging registry
falls back to the layout within the metadata budget."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from functions.common.documents import InMemoryDocumentRepository
from functions.common.models import ExtractedPaper
from functions.common.outbound.http import HttpClient
from functions.common.settings import get_settings, reset_settings_cache
from functions.common.storage import InMemoryBlobStore
from functions.extract import metadata_connectors
from functions.extract.metadata_connectors import ConnectorMetadata
from functions.extract.service import ExtractionService
from functions.search.config import SearchSettings
from tests.support.pdfgen import (
    SAMPLE_ABSTRACT,
    TextRun,
    build_pdf,
    sample_paper_pages,
)
from tests.support.scholarly_fixtures import SamplePaper, crossref_works, openalex_works
from tests.support.scholarly_web import ScholarlyWeb

DOI = "10.5555/routing.2021.7"
LAYOUT_TITLE = "Sparse Attention Routing for Efficient Long Document Transformers"
REGISTRY_TITLE = "Sparse attention routing for efficient long-document transformers"
OA_ABSTRACT = (
    "Registry abstract: sparse routing of attention blocks cuts the cost of long documents by 38 percent."
)
RECORD = SamplePaper(
    title=REGISTRY_TITLE,
    abstract=OA_ABSTRACT,
    year=2021,
    authors=("Maria Keller", "Tomas Lindqvist"),
    doi=DOI,
    venue="Journal of Sparse Models",
)


def pdf_with_doi() -> bytes:
    pages = sample_paper_pages(title=LAYOUT_TITLE)
    pages[0].append(TextRun(72, 40, 8, f"https://doi.org/{DOI}"))
    return build_pdf(pages)


def crossref_work() -> dict[str, object]:
    item = crossref_works([RECORD])["message"]["items"][0]
    item.pop("abstract")  # Crossref often has none: OpenAlex fills it
    return {"status": "ok", "message-type": "work", "message-version": "1.0.0", "message": item}


def run_extraction(web: ScholarlyWeb, source_url: str | None = None) -> ExtractedPaper:
    web.set_response("/papers/routing.pdf", pdf_with_doi(), content_type="application/pdf")

    async def go() -> ExtractedPaper:
        settings = get_settings()
        client = HttpClient(settings, max_backoff_seconds=0.1)
        registries = ConnectorMetadata.from_settings(
            settings, client, search_settings=SearchSettings(state_backend="memory", upstream_retries=0)
        )
        service = ExtractionService(
            http=client,
            blobs=InMemoryBlobStore(),
            documents=InMemoryDocumentRepository(),
            settings=settings,
            metadata=registries,
        )
        try:
            return await service.extract(source_url or web.url("/papers/routing.pdf"))
        finally:
            await client.aclose()

    return asyncio.run(go())


@pytest.fixture
def budget(monkeypatch: pytest.MonkeyPatch, web: ScholarlyWeb) -> float:
    monkeypatch.setenv("EXTRACT_METADATA_BUDGET_SECONDS", "1.5")
    # Breakers live for the whole process (as in a Lambda container): start these tests with closed ones,
    # whatever registries earlier tests in this process saw fail.
    monkeypatch.setattr(metadata_connectors, "_breakers", None)
    reset_settings_cache()
    return 1.5


def test_registry_fields_win_and_say_where_they_came_from(web: ScholarlyWeb, budget: float) -> None:
    web.set_response(f"/crossref/works/{DOI}", crossref_work())
    web.set_response(f"/openalex/works/doi:{DOI}", openalex_works([RECORD])["results"][0])
    paper = run_extraction(web)
    assert paper.success
    assert paper.title == REGISTRY_TITLE
    assert paper.authors == ["Maria Keller", "Tomas Lindqvist"]
    assert paper.abstract == OA_ABSTRACT
    assert paper.year == 2021 and paper.venue == "Journal of Sparse Models"
    assert paper.identifiers == {"doi": DOI}
    assert paper.metadata_sources == {
        "title": "crossref",
        "authors": "crossref",
        "year": "crossref",
        "venue": "crossref",
        "abstract": "openalex",
    }


@pytest.mark.parametrize("failure", ["500", "hang"])
def test_a_failing_registry_falls_back_to_the_layout_within_the_budget(
    web: ScholarlyWeb, budget: float, failure: str
) -> None:
    holds = []
    for prefix in ("/crossref", "/openalex", "/s2"):
        if failure == "hang":  # no registry answers before the extraction is over
            holds.append(web.hold(prefix))
        else:
            web.fail(prefix, "500")
    paper = run_extraction(web)
    assert paper.success and paper.title == LAYOUT_TITLE
    assert paper.abstract == SAMPLE_ABSTRACT
    assert paper.metadata_sources["title"] == "layout"
    assert paper.identifiers == {"doi": DOI}
    assert not any(hold.outlasted for hold in holds)  # it returned while the registries still hung


def test_a_doi_source_asks_each_registry_for_its_record_once(web: ScholarlyWeb, budget: float) -> None:
    """The open-access lookup of a DOI reads the same Crossref and OpenAlex records that the metadata
    lookup needs: they are fetched once and serve both."""
    record = dataclasses.replace(RECORD, pdf_url=web.url("/papers/routing.pdf"))
    web.set_response(f"/crossref/works/{DOI}", crossref_work())
    web.set_response(f"/openalex/works/doi:{DOI}", openalex_works([record])["results"][0])
    paper = run_extraction(web, f"https://doi.org/{DOI}")
    assert paper.success and paper.title == REGISTRY_TITLE and paper.abstract == OA_ABSTRACT
    assert web.count(f"/crossref/works/{DOI}") == 1 and web.count(f"/openalex/works/doi:{DOI}") == 1
