"""Small recorded-style upstream responses, built in code (the corpus may be absent).

Each builder renders the same `SamplePaper`s the way that API does (arXiv Atom, Semantic Scholar Graph
JSON, OpenAlex works with an inverted-index abstract, Crossref works with a JATS abstract), so tests
exercise the real parsers. `install(web, papers)` serves them on a ScholarlyWeb.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape

from tests.support.scholarly_web import ScholarlyWeb


@dataclass(frozen=True)
class SamplePaper:
    title: str
    abstract: str
    year: int
    authors: tuple[str, ...] = ("Ada Lovelace", "Alan M. Turing")
    doi: str | None = None
    arxiv_id: str | None = None
    venue: str | None = None
    citations: int = 0
    kind: str = "journal-article"
    pdf_url: str | None = None  # open-access PDF, e.g. a ScholarlyWeb URL serving a generated PDF
    extra: dict[str, Any] = field(default_factory=dict)


TRANSFORMER_PAPERS: tuple[SamplePaper, ...] = (
    SamplePaper(
        title="Sparse Attention Transformers for Long Documents",
        abstract=(
            "We study sparse attention patterns for transformer architectures on long documents. "
            "Our block-sparse attention reduces the quadratic cost of self-attention to near-linear "
            "while keeping accuracy on summarisation and question answering benchmarks within one point "
            "of dense attention transformers."
        ),
        year=2023,
        authors=("Maria Garcia", "Wei Chen", "John Smith"),
        doi="10.1234/sparse.2023.001",
        arxiv_id="2301.00001",
        venue="Journal of Machine Learning Research",
        citations=120,
    ),
    SamplePaper(
        title="Mixture of Experts Transformer Architectures at Scale",
        abstract=(
            "Mixture of experts layers let transformer architectures grow their parameter count without "
            "growing compute per token. We train routed transformer models with up to one trillion "
            "parameters and analyse load balancing, expert specialisation and training stability."
        ),
        year=2024,
        authors=("Li Wang", "Jean-Pierre Dupont"),
        doi="10.1234/moe.2024.002",
        venue="NeurIPS 2024",
        citations=45,
    ),
    SamplePaper(
        title="Efficient Training Methods for Transformer Language Models",
        abstract=(
            "We survey efficient training methods for transformer language models, including mixed "
            "precision, activation checkpointing, and curriculum schedules, and measure their effect on "
            "wall-clock time and final perplexity across three model sizes."
        ),
        year=2022,
        authors=("Priya Natarajan",),
        arxiv_id="2205.00003",
        citations=12,
        kind="posted-content",
    ),
    SamplePaper(
        title="Soil Microbiome Diversity in Alpine Meadows",
        abstract=(
            "We sequence soil samples from alpine meadows and find that microbial diversity declines with "
            "altitude, with strong effects of soil pH and moisture on community composition across the "
            "twelve sampled sites."
        ),
        year=2021,
        authors=("Hans Müller", "Eva Novak"),
        doi="10.5678/soil.2021.004",
        venue="Ecology Letters",
        citations=30,
    ),
)


def _name_parts(name: str) -> tuple[str, str]:
    parts = name.split()
    return " ".join(parts[:-1]), parts[-1]


def arxiv_feed(papers: list[SamplePaper] | tuple[SamplePaper, ...], total: int | None = None) -> str:
    entries = []
    for paper in papers:
        if not paper.arxiv_id:
            continue
        authors = "".join(f"<author><name>{escape(a)}</name></author>" for a in paper.authors)
        doi = f"<arxiv:doi>{paper.doi}</arxiv:doi>" if paper.doi else ""
        journal = f"<arxiv:journal_ref>{escape(paper.venue)}</arxiv:journal_ref>" if paper.venue else ""
        entries.append(
            f"""<entry>
    <id>http://arxiv.org/abs/{paper.arxiv_id}v2</id>
    <title>{escape(paper.title)}</title>
    <updated>{paper.year}-03-01T00:00:00Z</updated>
    <link href="https://arxiv.org/abs/{paper.arxiv_id}v2" rel="alternate" type="text/html"/>
    <link href="https://arxiv.org/pdf/{paper.arxiv_id}v2" rel="related" type="application/pdf" title="pdf"/>
    <summary>{escape(paper.abstract)}</summary>
    <published>{paper.year}-02-01T00:00:00Z</published>
    {doi}{journal}{authors}
  </entry>"""
        )
    count = len(entries) if total is None else total
    return f"""<?xml version='1.0' encoding='UTF-8'?>
<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns="http://www.w3.org/2005/Atom">
  <id>https://arxiv.org/api/local</id>
  <title>arXiv Query</title>
  <updated>2025-01-01T00:00:00Z</updated>
  <opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>
  <opensearch:totalResults>{count}</opensearch:totalResults>
  <opensearch:startIndex>0</opensearch:startIndex>
  {"".join(entries)}
</feed>
"""


def semantic_scholar_search(papers: list[SamplePaper] | tuple[SamplePaper, ...]) -> dict[str, Any]:
    data = []
    for index, paper in enumerate(papers):
        external: dict[str, Any] = {"CorpusId": 1000 + index}
        if paper.doi:
            external["DOI"] = paper.doi.upper()
        if paper.arxiv_id:
            external["ArXiv"] = paper.arxiv_id
        data.append(
            {
                "paperId": f"{index:040x}",
                "url": f"https://www.semanticscholar.org/paper/{index:040x}",
                "title": paper.title,
                "abstract": paper.abstract,
                "year": paper.year,
                "venue": paper.venue or "",
                "authors": [{"authorId": str(i), "name": a} for i, a in enumerate(paper.authors)],
                "externalIds": external,
                "citationCount": paper.citations,
                "isOpenAccess": bool(paper.arxiv_id),
                "openAccessPdf": {"url": f"https://arxiv.org/pdf/{paper.arxiv_id}"}
                if paper.arxiv_id
                else None,
                "publicationTypes": ["JournalArticle"] if paper.kind == "journal-article" else None,
            }
        )
    return {"total": len(data), "offset": 0, "data": data}


def inverted_index(text: str) -> dict[str, list[int]]:
    index: dict[str, list[int]] = {}
    for position, word in enumerate(text.split()):
        index.setdefault(word, []).append(position)
    return index


def openalex_works(papers: list[SamplePaper] | tuple[SamplePaper, ...]) -> dict[str, Any]:
    results = []
    for index, paper in enumerate(papers):
        locations = []
        if paper.pdf_url:
            locations.append({"landing_page_url": paper.pdf_url, "pdf_url": paper.pdf_url})
        if paper.arxiv_id:
            locations.append(
                {
                    "landing_page_url": f"https://arxiv.org/abs/{paper.arxiv_id}",
                    "pdf_url": f"https://arxiv.org/pdf/{paper.arxiv_id}",
                }
            )
        source = {"display_name": paper.venue, "type": "journal"} if paper.venue else None
        results.append(
            {
                "id": f"https://openalex.org/W{9000 + index}",
                "doi": f"https://doi.org/{paper.doi}" if paper.doi else None,
                "title": paper.title,
                "display_name": paper.title,
                "publication_year": paper.year,
                "type": "preprint" if paper.kind == "posted-content" else "article",
                "authorships": [{"author": {"display_name": a}} for a in paper.authors],
                "primary_location": {"source": source, "landing_page_url": None},
                "best_oa_location": locations[0] if locations else None,
                "open_access": {"is_oa": bool(locations)},
                "locations": locations,
                "cited_by_count": paper.citations,
                "abstract_inverted_index": inverted_index(paper.abstract),
            }
        )
    return {"meta": {"count": len(results), "page": 1, "per_page": 25}, "results": results}


def crossref_works(papers: list[SamplePaper] | tuple[SamplePaper, ...]) -> dict[str, Any]:
    items = []
    for paper in papers:
        if not paper.doi:
            continue
        authors = []
        for name in paper.authors:
            given, family = _name_parts(name)
            authors.append({"given": given, "family": family, "sequence": "additional"})
        items.append(
            {
                "DOI": paper.doi,
                "URL": f"https://doi.org/{paper.doi}",
                "title": [paper.title],
                "abstract": f"<jats:title>Abstract</jats:title><jats:p>{escape(paper.abstract)}</jats:p>",
                "author": authors,
                "issued": {"date-parts": [[paper.year, 5, 1]]},
                "container-title": [paper.venue] if paper.venue else [],
                "is-referenced-by-count": paper.citations,
                "type": paper.kind,
            }
        )
    return {
        "status": "ok",
        "message-type": "work-list",
        "message-version": "1.0.0",
        "message": {"total-results": len(items), "items": items, "items-per-page": 20},
    }


def install(
    web: ScholarlyWeb, papers: list[SamplePaper] | tuple[SamplePaper, ...] = TRANSFORMER_PAPERS
) -> None:
    """Serve `papers` from all four search APIs (each returns the subset it would know)."""
    web.set_response(web.ARXIV_PATH, arxiv_feed(papers), content_type="application/atom+xml; charset=utf-8")
    web.set_response(web.SEMANTIC_SCHOLAR_PATH, semantic_scholar_search(papers))
    web.set_response(web.OPENALEX_PATH, openalex_works(papers))
    web.set_response(web.CROSSREF_PATH, crossref_works(papers))
