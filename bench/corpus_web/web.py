"""`CorpusWeb`: the four search APIs and the PDF hosts over the literature, on a loopback ScholarlyWeb."""

from __future__ import annotations

import argparse
import hashlib
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from bench.corpus_web.paper import WebPaper
from bench.corpus_web.search import ArxivQueryError, Engines
from tests.e2e.scholarly_topic import INTERVALS_OFF
from tests.support.scholarly_fixtures import (
    SamplePaper,
    arxiv_feed,
    crossref_works,
    openalex_works,
    semantic_scholar_search,
)
from tests.support.scholarly_web import RecordedRequest, Reply, ScholarlyWeb

ARXIV_PDF_PREFIX = "/arxiv-pdf"
DOI_PREFIX = "/doi"
# A realistic network, drawn uniformly per request: the search and lookup APIs, and the PDF hosts.
API_LATENCY_SECONDS = (0.3, 1.5)
PDF_LATENCY_SECONDS = (1.0, 4.0)
# The project's provider spacing settings (functions/search/config.py), zeroed by `no_politeness`.
POLITENESS_SETTINGS = (
    "SEARCH_ARXIV_MIN_INTERVAL_SECONDS",
    "SEARCH_SEMANTIC_SCHOLAR_MIN_INTERVAL_SECONDS",
    "SEARCH_OPENALEX_MIN_INTERVAL_SECONDS",
    "SEARCH_CROSSREF_MIN_INTERVAL_SECONDS",
    "SEARCH_ARXIV_PDF_MIN_INTERVAL_SECONDS",
    "SEARCH_UNPAYWALL_MIN_INTERVAL_SECONDS",
)

SPACED_PROVIDERS = ("arxiv", "semantic_scholar", "openalex", "crossref", "arxiv_pdf")


def project_intervals() -> dict[str, float]:
    """The project's provider intervals as its settings read them here (its defaults, unless the
    environment overrides them); providers whose setting is gone are left out."""
    from functions.search.config import SearchSettings

    settings = SearchSettings()
    intervals = {name: getattr(settings, f"{name}_min_interval_seconds", None) for name in SPACED_PROVIDERS}
    return {name: float(value) for name, value in intervals.items() if isinstance(value, (int, float))}


def add_condition_options(parser: argparse.ArgumentParser) -> None:
    """`--no-politeness` and `--no-latency`: what `describe_conditions` then says the figures were measured
    under."""
    parser.add_argument(
        "--no-politeness",
        action="store_true",
        help="switch the project's provider intervals off (SEARCH_*_MIN_INTERVAL_SECONDS=0)",
    )
    parser.add_argument(
        "--no-latency", action="store_true", help="the web answers at once (no simulated network latency)"
    )


Figure = Callable[..., None]


def figure_printer(no_politeness: bool) -> Figure:
    """`print` for a bench's figure lines: with the provider intervals off, each line says so beside it."""
    if not no_politeness:
        return print

    def figure(*values: object, **options: Any) -> None:
        print(*values, INTERVALS_OFF, **options)

    return figure


def describe_conditions(*, no_politeness: bool, latency: bool) -> str:
    """What every figure of a bench run was measured under: provider spacing and network latency."""
    if no_politeness:
        spacing = "provider intervals OFF (--no-politeness: every SEARCH_*_MIN_INTERVAL_SECONDS = 0)"
    else:
        listed = ", ".join(f"{name} {seconds:g} s" for name, seconds in project_intervals().items())
        spacing = f"the project's real provider intervals ({listed or 'its defaults'})"
    if latency:
        network = (
            f"simulated latency {API_LATENCY_SECONDS[0]:g}-{API_LATENCY_SECONDS[1]:g} s per API call, "
            f"{PDF_LATENCY_SECONDS[0]:g}-{PDF_LATENCY_SECONDS[1]:g} s per PDF"
        )
    else:
        network = "no simulated latency (--no-latency)"
    return f"{spacing}; {network}"


# --- request parameters in each API's syntax ------------------------------------------------------------


def _year_range_s2(value: str | None) -> tuple[int | None, int | None]:
    if not value:
        return None, None
    if "-" not in value:
        return int(value), int(value)
    start, _, end = value.partition("-")
    return (int(start[:4]) if start else None), (int(end[:4]) if end else None)


def _openalex_filters(value: str | None) -> tuple[int | None, int | None]:
    start: int | None = None
    end: int | None = None
    for part in (value or "").split(","):
        name, _, arg = part.partition(":")
        if name == "from_publication_date":
            start = int(arg[:4])
        elif name == "to_publication_date":
            end = int(arg[:4])
        elif name == "publication_year":
            if arg.startswith(">"):
                start = int(arg[1:]) + 1
            elif arg.startswith("<"):
                end = int(arg[1:]) - 1
            elif "-" in arg:
                a, _, b = arg.partition("-")
                start, end = int(a), int(b)
            elif arg:
                start = end = int(arg)
    return start, end


def _crossref_filters(value: str | None) -> tuple[int | None, int | None]:
    start: int | None = None
    end: int | None = None
    for part in (value or "").split(","):
        name, _, arg = part.partition(":")
        if name in ("from-pub-date", "from-published-date", "from-issued-date"):
            start = int(arg[:4])
        elif name in ("until-pub-date", "until-published-date", "until-issued-date"):
            end = int(arg[:4])
    return start, end


def _int(value: str | None, default: int, low: int, high: int) -> int:
    try:
        number = int(value) if value not in (None, "") else default
    except ValueError:
        number = default
    return max(low, min(high, number))


# --- the web -------------------------------------------------------------------------------------------


def _sample(paper: WebPaper, pdf_url: str | None = None) -> SamplePaper:
    return SamplePaper(
        title=paper.title,
        abstract=paper.abstract or "",
        year=paper.year or 0,
        authors=paper.authors or ("Anonymous",),
        doi=paper.doi,
        arxiv_id=paper.arxiv_id,
        venue=paper.venue,
        citations=paper.citations,
        kind=paper.kind,
        pdf_url=pdf_url,
    )


class CorpusWeb:
    """The search APIs and PDF hosts over `papers`; `start()` returns the running ScholarlyWeb.

    `latency=True` delays every answer as a real network would (`API_LATENCY_SECONDS` per API call,
    `PDF_LATENCY_SECONDS` per PDF, drawn from a generator seeded with `seed`). The web files each request
    under its provider (arxiv, semantic_scholar, openalex, crossref, and the PDF hosts `arxiv_pdf` and
    `pdf`), so a bench can read the gaps and concurrency each provider saw (`ScholarlyWeb.smallest_gap`,
    `ScholarlyWeb.max_open`)."""

    def __init__(self, papers: list[WebPaper], *, latency: bool = False, seed: int = 0) -> None:
        self.search = Engines(papers)
        self.by_doi = {p.doi.lower(): p for p in papers if p.doi}
        self.by_arxiv = {p.arxiv_id: p for p in papers if p.arxiv_id}
        self.latency = latency
        self.web = ScholarlyWeb(seed=seed)
        self.hits: dict[tuple[str, str], int] = {}  # (api, query text) -> total matches, for reports

    # -- lifecycle
    def start(self) -> ScholarlyWeb:
        web = self.web.start()
        web.set_handler(web.ARXIV_PATH, self._arxiv)
        web.set_handler(web.SEMANTIC_SCHOLAR_PATH, self._semantic_scholar)
        web.set_handler(web.OPENALEX_PATH, self._openalex)
        web.set_handler(web.OPENALEX_PATH + "/", self._openalex_work, prefix=True)
        web.set_handler(web.CROSSREF_PATH, self._crossref)
        web.set_handler(web.CROSSREF_PATH + "/", self._crossref_work, prefix=True)
        web.set_handler(ARXIV_PDF_PREFIX + "/", self._pdf, prefix=True)
        web.set_handler(DOI_PREFIX + "/", self._pdf, prefix=True)
        web.set_provider(ARXIV_PDF_PREFIX + "/", "arxiv_pdf")
        web.set_provider(DOI_PREFIX + "/", "pdf")
        if self.latency:
            for api in (web.ARXIV_PATH, web.SEMANTIC_SCHOLAR_BASE, web.OPENALEX_BASE, web.CROSSREF_BASE):
                web.set_latency(api, API_LATENCY_SECONDS)
            web.set_latency(ARXIV_PDF_PREFIX + "/", PDF_LATENCY_SECONDS)
            web.set_latency(DOI_PREFIX + "/", PDF_LATENCY_SECONDS)
        return web

    def stop(self) -> None:
        self.web.stop()

    def environment(self, *, no_politeness: bool = False, **extra: str) -> dict[str, str]:
        """Settings that point every upstream at this web, no LLM. The project's own provider spacing
        (its default intervals) stays unless `no_politeness` switches it off."""
        spacing = dict.fromkeys(POLITENESS_SETTINGS, "0") if no_politeness else {}
        return {
            **self.web.env(),
            "ARXIV_PDF_BASE_URL": self.web.url(ARXIV_PDF_PREFIX),
            "DOI_RESOLVER_URL": self.web.url(DOI_PREFIX),
            **spacing,
            "LLM_PROVIDER": "none",
            **extra,
        }

    def _pdf_url(self, paper: WebPaper) -> str | None:
        if paper.pdf_path is None:
            return None
        if paper.arxiv_id:
            return self.web.url(f"{ARXIV_PDF_PREFIX}/pdf/{paper.arxiv_id}")
        return self.web.url(f"{DOI_PREFIX}/{paper.doi}")

    # -- API handlers
    def _arxiv(self, request: RecordedRequest) -> Reply:
        query = request.param("search_query") or ""
        start = _int(request.param("start"), 0, 0, 30000)
        size = _int(request.param("max_results"), 10, 0, 2000)
        try:
            found = self.search.arxiv(query) if query else []
        except ArxivQueryError as exc:
            # arXiv answers a malformed query with 200 and an error entry
            body = (
                "<?xml version='1.0' encoding='UTF-8'?><feed xmlns=\"http://www.w3.org/2005/Atom\" "
                'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"><opensearch:totalResults>1'
                "</opensearch:totalResults><entry><id>http://arxiv.org/api/errors#incorrect_id_format</id>"
                f"<title>Error</title><summary>{exc}</summary></entry></feed>"
            )
            return Reply.of(body, content_type="application/atom+xml; charset=utf-8")
        self.hits[("arxiv", query)] = len(found)
        page = found[start : start + size]
        feed = arxiv_feed([_sample(p) for p in page], total=len(found))
        return Reply.of(feed, content_type="application/atom+xml; charset=utf-8")

    def _semantic_scholar(self, request: RecordedRequest) -> Reply:
        query = request.param("query") or ""
        if not query.strip():
            return Reply.of({"error": "Missing required parameter: 'query'"}, 400)
        start, end = _year_range_s2(request.param("year"))
        offset = _int(request.param("offset"), 0, 0, 10000)
        limit = _int(request.param("limit"), 10, 1, 100)
        found = self.search.all_words(query, start, end)
        self.hits[("s2", query)] = len(found)
        page = found[offset : offset + limit]
        body = semantic_scholar_search([_sample(p) for p in page])
        for record, paper in zip(body["data"], page, strict=True):
            record["paperId"] = hashlib.sha1(paper.key.encode()).hexdigest()
            record["url"] = f"https://www.semanticscholar.org/paper/{record['paperId']}"
            record["abstract"] = paper.abstract
        body["total"], body["offset"] = len(found), offset
        if offset + limit < len(found):
            body["next"] = offset + limit
        return Reply.of(body)

    def _openalex_works(self, papers: list[WebPaper]) -> dict[str, Any]:
        body = openalex_works([_sample(p, self._pdf_url(p)) for p in papers])
        for work, paper in zip(body["results"], papers, strict=True):
            work["id"] = f"https://openalex.org/W{int(hashlib.sha1(paper.key.encode()).hexdigest()[:10], 16)}"
            if not paper.abstract:
                work["abstract_inverted_index"] = None
        return body

    def _openalex(self, request: RecordedRequest) -> Reply:
        query = request.param("search") or ""
        start, end = _openalex_filters(request.param("filter"))
        per_page = _int(request.param("per_page") or request.param("per-page"), 25, 1, 200)
        page_number = _int(request.param("page"), 1, 1, 10000)
        found = self.search.all_words(query, start, end) if query.strip() else []
        self.hits[("openalex", query)] = len(found)
        body = self._openalex_works(found[(page_number - 1) * per_page : page_number * per_page])
        body["meta"] = {"count": len(found), "page": page_number, "per_page": per_page}
        return Reply.of(body)

    def _openalex_work(self, request: RecordedRequest) -> Reply:
        ident = unquote(request.path[len(ScholarlyWeb.OPENALEX_PATH) + 1 :])
        paper = self.by_doi.get(ident.removeprefix("doi:").removeprefix("https://doi.org/").lower())
        if paper is None:
            return Reply.of({"error": "NotFoundError", "message": f"{ident} not found"}, 404)
        return Reply.of(self._openalex_works([paper])["results"][0])

    @staticmethod
    def _crossref_works(papers: list[WebPaper]) -> dict[str, Any]:
        body = crossref_works([_sample(p) for p in papers])
        for item, paper in zip(body["message"]["items"], papers, strict=True):
            if not paper.abstract:
                item.pop("abstract", None)
        return body

    def _crossref(self, request: RecordedRequest) -> Reply:
        query = " ".join(
            v for k in ("query", "query.bibliographic", "query.title") if (v := request.param(k) or "")
        )
        start, end = _crossref_filters(request.param("filter"))
        rows = _int(request.param("rows"), 20, 0, 1000)
        offset = _int(request.param("offset"), 0, 0, 10000)
        found = self.search.crossref(query, start, end) if query.strip() else []
        self.hits[("crossref", query)] = len(found)
        body = self._crossref_works(found[offset : offset + rows])
        body["message"].update(
            {
                "total-results": len(found),
                "items-per-page": rows,
                "query": {"start-index": offset, "search-terms": query},
            }
        )
        return Reply.of(body)

    def _crossref_work(self, request: RecordedRequest) -> Reply:
        doi = unquote(request.path[len(ScholarlyWeb.CROSSREF_PATH) + 1 :]).lower()
        paper = self.by_doi.get(doi)
        if paper is None:
            return Reply.of("Resource not found.", 404)
        return Reply.of(
            {
                "status": "ok",
                "message-type": "work",
                "message-version": "1.0.0",
                "message": self._crossref_works([paper])["message"]["items"][0],
            }
        )

    def _pdf(self, request: RecordedRequest) -> Reply:
        path = request.path
        paper: WebPaper | None = None
        if path.startswith(ARXIV_PDF_PREFIX + "/pdf/"):
            ident = re.sub(r"(v\d+)?(\.pdf)?$", "", path[len(ARXIV_PDF_PREFIX + "/pdf/") :])
            paper = self.by_arxiv.get(ident)
        elif path.startswith(DOI_PREFIX + "/"):
            paper = self.by_doi.get(unquote(path[len(DOI_PREFIX) + 1 :]).lower())
        if paper is None or paper.pdf_path is None:
            return Reply.of(
                "<html><body>Access denied: subscription required</body></html>", 404, "text/html"
            )
        return Reply.of(paper.pdf_path.read_bytes(), content_type="application/pdf")
