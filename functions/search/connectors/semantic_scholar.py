"""Semantic Scholar Graph API: `/paper/search` with explicit `fields`, optional `x-api-key`; the citation
graph's `/paper/{id}/references` and `/paper/{id}/citations` (paged by `offset`/`next`), its seeds resolved
by one `POST /paper/batch`."""

from __future__ import annotations

import time
from typing import Any

from functions.common.models import LookupKind, WorkMetadata
from functions.common.settings import Settings
from functions.search.connectors import base
from functions.search.models import ConnectorResult, FoundPaper, PaperQuery, SourceType
from functions.search.normalise import build_paper
from functions.search.text import clean_text, format_author

NAME = "semantic_scholar"
LABEL = "Semantic Scholar"
FIELDS = (
    "paperId,corpusId,title,abstract,year,authors,venue,journal,externalIds,citationCount,"
    "openAccessPdf,isOpenAccess,url,publicationTypes"
)
_TECHNICAL_TYPES = {"Dataset", "Book", "Editorial", "News", "LettersAndComments"}


def year_filter(start: int | None, end: int | None) -> str | None:
    if not start and not end:
        return None
    return f"{start or ''}-{end or ''}"


def _records(data: Any) -> list[Any]:
    """Every list envelope the Graph and Recommendations APIs use, flattened to paper records."""
    rows: Any
    if isinstance(data, list):
        rows = data
    elif isinstance(data, dict):
        rows = data.get("data")
        if rows is None:
            rows = data.get("recommendedPapers")
        if rows is None:
            rows = [data] if "paperId" in data or "title" in data else []
    else:
        raise base.UnusableAnswer(f"unparseable {LABEL} answer: not a JSON object or list")
    records = []
    for row in rows or []:
        if isinstance(row, dict):
            for envelope in ("citingPaper", "citedPaper", "paper"):
                if isinstance(row.get(envelope), dict):
                    row = row[envelope]
                    break
        records.append(row)
    return records


def _source_type(types: Any, venue: str | None, arxiv_id: str | None) -> SourceType:
    if not isinstance(types, list) or not types:
        # untyped arXiv-only records are preprints
        return "technical" if arxiv_id and (venue or "").strip().lower() in ("", "arxiv") else "academic"
    if "News" in types:
        return "news"
    if all(t in _TECHNICAL_TYPES for t in types):
        return "technical"
    return "academic"


def _paper(record: Any, rank: int) -> FoundPaper | None:
    if not isinstance(record, dict):
        return None  # batch answers carry null for unknown ids
    ids = record.get("externalIds") or {}
    pdf = (record.get("openAccessPdf") or {}).get("url") or None
    journal = record.get("journal") or {}
    authors = []
    for author in record.get("authors") or []:
        authors.append(format_author(author.get("name") if isinstance(author, dict) else str(author)))
    landing = record.get("url")
    if not landing and record.get("paperId"):
        landing = f"https://www.semanticscholar.org/paper/{record['paperId']}"
    elif not landing and record.get("corpusId"):
        landing = f"https://api.semanticscholar.org/CorpusID:{record['corpusId']}"
    venue = record.get("venue") or (journal.get("name") if isinstance(journal, dict) else None)
    return build_paper(
        connector=NAME,
        rank=rank,
        title=record.get("title"),
        abstract=record.get("abstract"),
        year=record.get("year") if isinstance(record.get("year"), int) else None,
        authors=authors,
        venue=venue,
        doi=ids.get("DOI"),
        arxiv_id=ids.get("ArXiv"),
        citations=record.get("citationCount") if isinstance(record.get("citationCount"), int) else None,
        pdf_url=pdf,
        landing_url=landing,
        open_access=record.get("isOpenAccess") if isinstance(record.get("isOpenAccess"), bool) else None,
        source_type=_source_type(record.get("publicationTypes"), venue, ids.get("ArXiv")),
    )


@base.never_raises(NAME)
def parse_response(status_code: int, body: str | bytes) -> ConnectorResult:
    if status_code >= 400:
        return base.status_error(NAME, status_code, body)
    data = base.load_json(body, LABEL)
    total = data.get("total") if isinstance(data, dict) else None
    return base.ranked_result(NAME, _records(data), _paper, total)


LOOKUP_FIELDS = "title,abstract,year,authors,venue,journal,externalIds"


def _work(record: Any) -> WorkMetadata | None:
    if not isinstance(record, dict) or not record.get("title"):
        return None
    ids = record.get("externalIds") or {}
    journal = record.get("journal") or {}
    venue = record.get("venue") or (journal.get("name") if isinstance(journal, dict) else None)
    names = [a.get("name") if isinstance(a, dict) else a for a in record.get("authors") or []]
    year = record.get("year")
    return WorkMetadata(
        source=NAME,
        title=clean_text(record["title"]),
        authors=tuple(clean_text(str(n)) for n in names if n),
        year=year if isinstance(year, int) else None,
        venue=clean_text(venue) or None,
        abstract=clean_text(record.get("abstract")) or None,
        doi=str(ids["DOI"]).lower() if ids.get("DOI") else None,
        arxiv_id=str(ids["ArXiv"]) if ids.get("ArXiv") else None,
    )


@base.lookup_guard(NAME)
def parse_lookup(status_code: int, body: str | bytes) -> base.LookupResult:
    """`/paper/DOI:{doi}` or `/paper/arXiv:{id}`: one paper record."""
    records = _records(base.load_json(body, LABEL))
    return base.LookupResult(connector=NAME, works=[w for w in map(_work, records) if w is not None])


def build_lookup_request(settings: Settings, kind: LookupKind, value: str) -> base.UpstreamRequest | None:
    prefix = {"doi": "DOI", "arxiv": "arXiv"}.get(kind)
    if prefix is None:
        return None
    headers = {}
    if settings.semantic_scholar_api_key is not None:
        headers["x-api-key"] = settings.semantic_scholar_api_key.get_secret_value()
    api_url = settings.semantic_scholar_api_url.rstrip("/")
    return base.UpstreamRequest(f"{api_url}/paper/{prefix}:{value}", {"fields": LOOKUP_FIELDS}, headers)


GRAPH_PAGE = 100  # works per references/citations page (the API allows up to 1000)
FORWARD_POOL = 200  # citing works read before the newest and most cited are kept
BATCH_FIELDS = "paperId,referenceCount,citationCount"
BATCH_LIMIT = 500  # ids per `POST /paper/batch`


def _headers(settings: Settings) -> dict[str, str]:
    key = settings.semantic_scholar_api_key
    return {"x-api-key": key.get_secret_value()} if key is not None else {}


def seed_id(query: base.GraphQuery) -> str | None:
    """The seed as the Graph API names it: its paperId once resolved, else `DOI:` or `ARXIV:`."""
    if query.provider_id:
        return query.provider_id
    if query.doi:
        return f"DOI:{query.doi}"
    return f"ARXIV:{query.arxiv_id}" if query.arxiv_id else None


def build_graph_request(
    settings: Settings, query: base.GraphQuery, offset: int
) -> base.UpstreamRequest | None:
    seed = seed_id(query)
    if seed is None:
        return None
    api_url = settings.semantic_scholar_api_url.rstrip("/")
    params = {"fields": FIELDS, "offset": offset, "limit": GRAPH_PAGE}
    return base.UpstreamRequest(f"{api_url}/paper/{seed}/{query.direction}", params, _headers(settings))


@base.graph_guard(NAME)
def parse_graph_page(status_code: int, body: str | bytes) -> base.GraphPage:
    """`{"offset", "next", "data": [{"citedPaper" | "citingPaper": {...}}]}`; `next` absent on the last page."""
    data = base.load_json(body, LABEL)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        raise base.UnusableAnswer(f"{LABEL} answer holds no citation list")
    following = data.get("next")
    papers = base.ranked_result(NAME, _records(data), _paper).papers
    return base.GraphPage(papers=papers, next_offset=following if isinstance(following, int) else None)


def build_batch_request(settings: Settings, queries: list[base.GraphQuery]) -> base.UpstreamRequest:
    ids = [seed_id(query) or "" for query in queries[:BATCH_LIMIT]]
    api_url = settings.semantic_scholar_api_url.rstrip("/")
    return base.UpstreamRequest(
        f"{api_url}/paper/batch", {"fields": BATCH_FIELDS}, _headers(settings), json_body={"ids": ids}
    )


@base.graph_guard(NAME)
def parse_batch(status_code: int, body: str | bytes) -> base.GraphPage:
    """A list in the order of the ids asked, `null` for an id the API does not know: their paperIds
    ("" for the unknown)."""
    data = base.load_json(body, LABEL)
    if not isinstance(data, list):
        raise base.UnusableAnswer(f"{LABEL} batch answer is not a list")
    return base.GraphPage(
        ids=[str(row.get("paperId") or "") if isinstance(row, dict) else "" for row in data]
    )


class SemanticScholarConnector(base.FormatConnector):
    name = NAME
    upstream = base.UpstreamFormat(parse_response, build_lookup_request, parse_lookup)
    prefix = "ss"
    takes_team_keys = True

    def build_request(self, query: PaperQuery, limit: int) -> base.UpstreamRequest:
        params: dict[str, Any] = {
            "query": query.query,
            "fields": FIELDS,
            "limit": min(limit, 100),
            "offset": 0,
        }
        years = year_filter(query.year_start, query.year_end)
        if years:
            params["year"] = years
        api_url = self.context.settings.semantic_scholar_api_url.rstrip("/")
        return base.UpstreamRequest(f"{api_url}/paper/search", params, _headers(self.context.settings))

    def with_api_key(self, request: base.UpstreamRequest, api_key: str) -> base.UpstreamRequest:
        return base.UpstreamRequest(request.url, request.params, {**request.headers, "x-api-key": api_key})

    graph_directions = ("references", "citations")

    async def graph_ids(self, queries: list[base.GraphQuery]) -> tuple[list[str | None] | None, int]:
        """One `POST /paper/batch` for up to BATCH_LIMIT seeds: a seed it does not know is not asked for."""
        if not queries or len(queries) > BATCH_LIMIT:
            return None, 0
        page = await self.graph_exchange(
            queries[0], build_batch_request(self.context.settings, queries), parse_batch
        )
        if not page.ok or len(page.ids) != len(queries):
            return None, 1  # the seeds are then asked by DOI or arXiv id
        return [found or None for found in page.ids], 1

    async def citation_graph(self, query: base.GraphQuery) -> base.GraphResult:
        """Pages of the seed's references (up to its limit) or citing works (up to FORWARD_POOL, then
        the newest and most cited), while the query's deadline lasts."""
        wanted = query.limit if query.direction == "references" else max(query.limit, FORWARD_POOL)
        result = base.GraphResult(NAME)
        offset: int | None = 0
        while offset is not None and len(result.papers) < wanted and time.time() < query.deadline:
            request = build_graph_request(self.context.settings, query, offset)
            if request is None:
                return base.GraphResult(NAME, error=f"{LABEL} cannot name a seed without a DOI or arXiv id")
            page = await self.graph_exchange(query, request, parse_graph_page)
            result.requests += 1
            if not page.ok:
                if not result.papers:  # a later page's failure keeps what the first pages gave
                    result.error = page.error
                break
            result.papers.extend(page.papers)
            offset = page.next_offset
        if query.direction == "citations":
            result.papers = base.newest_most_cited(result.papers)
        result.papers = result.papers[: query.limit]
        return result
