"""One way to turn any connector's record into a FoundPaper (identifiers, URL choice, authors)."""

from __future__ import annotations

from collections.abc import Iterable

from functions.common.models import ARXIV_DOI_PREFIX, normalise_doi
from functions.search.models import FoundPaper, SourceType
from functions.search.text import arxiv_id_from, clean_text


def arxiv_abs_url(arxiv_id: str) -> str:
    return f"https://arxiv.org/abs/{arxiv_id}"


def choose_url(arxiv_id: str | None, doi: str | None, pdf_url: str | None, landing: str | None) -> str | None:
    """The fetchable URL the APIs return: arXiv abs page, else DOI resolver, else open PDF, else landing."""
    if arxiv_id:
        return arxiv_abs_url(arxiv_id)
    if doi:
        return f"https://doi.org/{doi}"
    return pdf_url or landing


def build_paper(
    *,
    connector: str,
    rank: int,
    title: str | None,
    abstract: str | None = None,
    year: int | None = None,
    authors: Iterable[str | None] = (),
    venue: str | None = None,
    doi: str | None = None,
    arxiv_id: str | None = None,
    citations: int | None = None,
    pdf_url: str | None = None,
    landing_url: str | None = None,
    open_access: bool | None = None,
    source_type: SourceType = "academic",
    is_retracted: bool | None = None,
) -> FoundPaper | None:
    """None when the record cannot be a result (no title or nothing to link to)."""
    clean_title = clean_text(title)
    normalised_doi = normalise_doi(doi)
    if normalised_doi and normalised_doi.startswith(ARXIV_DOI_PREFIX):
        arxiv_id = arxiv_id or arxiv_id_from(normalised_doi)
        normalised_doi = None  # the arXiv DataCite DOI adds nothing over the arXiv id
    url = choose_url(arxiv_id, normalised_doi, pdf_url, landing_url)
    if not clean_title or not url:
        return None
    return FoundPaper(
        title=clean_title,
        url=url,
        abstract=clean_text(abstract) or None,
        year=year if year and 1000 < year < 3000 else None,
        authors=[a for a in authors if a],
        venue=clean_text(venue) or None,
        doi=normalised_doi,
        arxiv_id=arxiv_id,
        citations=citations if citations is None or citations >= 0 else None,
        pdf_url=pdf_url,
        open_access=open_access,
        is_retracted=is_retracted,
        source=connector,
        found_by=[connector],
        upstream_rank=rank,
        connector_ranks={connector: rank},
        source_type=source_type,
    )
