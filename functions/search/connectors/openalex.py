"""OpenAlex: `/works?search=`, abstract rebuilt from `abstract_inverted_index`, `best_oa_location`; the
citation graph: a work's `referenced_works` (looked up in batches, `filter=openalex:W1|W2|…`) and the
works citing it (`filter=cites:W…`). Lookups by id and filters are free: no daily search allowance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from functions.common.models import ARXIV_DOI_PREFIX, LookupKind, WorkMetadata, normalise_doi
from functions.common.settings import Settings
from functions.search.connectors import base
from functions.search.models import ConnectorResult, FoundPaper, PaperQuery, SourceType
from functions.search.normalise import build_paper
from functions.search.text import arxiv_id_from, clean_text, format_author

NAME = "openalex"
_TECHNICAL_TYPES = {"preprint", "report", "dataset", "standard", "software", "other"}
_NEWS_TYPES = {"editorial", "letter"}


def rebuild_abstract(inverted: Any) -> str | None:
    """{'word': [positions]} -> the text, words in position order."""
    if not isinstance(inverted, dict) or not inverted:
        return None
    positions: dict[int, str] = {}
    for word, places in inverted.items():
        for place in places or []:
            if isinstance(place, int):
                positions[place] = word
    return " ".join(positions[i] for i in sorted(positions)) or None


def _source_type(kind: Any) -> SourceType:
    if kind in _TECHNICAL_TYPES:
        return "technical"
    if kind in _NEWS_TYPES:
        return "news"
    return "academic"


def _arxiv_id(work: dict[str, Any]) -> str | None:
    for location in work.get("locations") or []:
        if not isinstance(location, dict):
            continue
        for key in ("landing_page_url", "pdf_url"):
            url = location.get(key) or ""
            if "arxiv.org" in url:
                found = arxiv_id_from(url)
                if found:
                    return found
    return None


def _paper(work: Any, rank: int) -> FoundPaper | None:
    if not isinstance(work, dict):
        return None
    best = work.get("best_oa_location") or {}
    primary = work.get("primary_location") or {}
    source = primary.get("source") or {}
    open_access = work.get("open_access") or {}
    authors = [
        format_author((authorship.get("author") or {}).get("display_name"))
        for authorship in work.get("authorships") or []
        if isinstance(authorship, dict)
    ]
    doi = work.get("doi") or (work.get("ids") or {}).get("doi")
    return build_paper(
        connector=NAME,
        rank=rank,
        title=work.get("title") or work.get("display_name"),
        abstract=rebuild_abstract(work.get("abstract_inverted_index")),
        year=work.get("publication_year") if isinstance(work.get("publication_year"), int) else None,
        authors=authors,
        venue=source.get("display_name") if isinstance(source, dict) else None,
        doi=doi,
        arxiv_id=_arxiv_id(work),
        citations=work.get("cited_by_count") if isinstance(work.get("cited_by_count"), int) else None,
        pdf_url=best.get("pdf_url") or None,
        landing_url=best.get("landing_page_url") or primary.get("landing_page_url") or work.get("id"),
        open_access=open_access.get("is_oa") if isinstance(open_access.get("is_oa"), bool) else None,
        source_type=_source_type(work.get("type")),
        is_retracted=work.get("is_retracted") if isinstance(work.get("is_retracted"), bool) else None,
    )


@base.never_raises(NAME)
def parse_response(status_code: int, body: str | bytes) -> ConnectorResult:
    if status_code >= 400:
        return base.status_error(NAME, status_code, body)
    data = base.load_json(body, "OpenAlex")
    if not isinstance(data, dict):
        return ConnectorResult(connector=NAME, error="unparseable OpenAlex answer: not a JSON object")
    if "results" in data:
        works = data.get("results") or []
        count = (data.get("meta") or {}).get("count")
    elif str(data.get("id", "")).startswith("https://openalex.org/W"):
        works, count = [data], 1  # a single work
    else:
        return ConnectorResult(connector=NAME, error="OpenAlex answer holds no works")
    return base.ranked_result(NAME, works, _paper, count)


def _work(work: Any) -> WorkMetadata | None:
    if not isinstance(work, dict) or not (work.get("title") or work.get("display_name")):
        return None
    source = (work.get("primary_location") or {}).get("source") or {}
    doi = normalise_doi(work.get("doi") or (work.get("ids") or {}).get("doi"))
    arxiv_id = _arxiv_id(work)
    if doi and doi.startswith(ARXIV_DOI_PREFIX):
        arxiv_id, doi = arxiv_id or doi[len(ARXIV_DOI_PREFIX) :], None
    names = [
        (a.get("author") or {}).get("display_name")
        for a in work.get("authorships") or []
        if isinstance(a, dict)
    ]
    year = work.get("publication_year")
    landing = (work.get("primary_location") or {}).get("landing_page_url") or work.get("id")
    return WorkMetadata(
        source=NAME,
        title=clean_text(work.get("title") or work.get("display_name")),
        authors=tuple(clean_text(n) for n in names if n),
        year=year if isinstance(year, int) else None,
        venue=clean_text(source.get("display_name")) or None if isinstance(source, dict) else None,
        abstract=rebuild_abstract(work.get("abstract_inverted_index")),
        doi=doi,
        arxiv_id=arxiv_id,
        url=str(landing) if landing else None,
        is_retracted=work.get("is_retracted") if isinstance(work.get("is_retracted"), bool) else None,
    )


@base.lookup_guard(NAME)
def parse_lookup(status_code: int, body: str | bytes) -> base.LookupResult:
    """A single work (`/works/doi:...`) or a list of them."""
    data = base.load_json(body, "OpenAlex")
    if not isinstance(data, dict):
        return base.LookupResult(connector=NAME, error="unparseable OpenAlex answer: not a JSON object")
    works = data.get("results") if "results" in data else [data]
    return base.LookupResult(connector=NAME, works=[w for w in map(_work, works or []) if w is not None])


def _identity(settings: Settings) -> dict[str, Any]:
    """The polite pool's `mailto` and the service's key, where configured."""
    params: dict[str, Any] = {"mailto": settings.contact_email} if settings.contact_email else {}
    if settings.openalex_api_key is not None:
        params["api_key"] = settings.openalex_api_key.get_secret_value()
    return params


def build_lookup_request(settings: Settings, kind: LookupKind, value: str) -> base.UpstreamRequest | None:
    params = _identity(settings)
    api_url = settings.openalex_api_url.rstrip("/")
    if kind == "doi":
        return base.UpstreamRequest(f"{api_url}/works/doi:{value}", params)
    if kind == "arxiv":  # arXiv's DataCite DOI
        return base.UpstreamRequest(f"{api_url}/works/doi:{ARXIV_DOI_PREFIX}{value}", params)
    if kind == "title":  # a `search=` call: it spends the daily search allowance
        return base.UpstreamRequest(
            f"{api_url}/works", {**params, "search": value, "per_page": TITLE_LOOKUP_ROWS}
        )
    return None


TITLE_LOOKUP_ROWS = 3


RETRACTION_BATCH = 50  # DOIs per retraction lookup (OpenAlex's OR filter takes up to 100 values)


def build_retraction_request(settings: Settings, dois: Sequence[str]) -> base.UpstreamRequest:
    """One request for OpenAlex's `is_retracted` flag of up to RETRACTION_BATCH works, by DOI."""
    batch = list(dois)[:RETRACTION_BATCH]
    params: dict[str, Any] = {
        "filter": "doi:" + "|".join(batch),
        "select": "id,doi,is_retracted",
        "per_page": max(1, len(batch)),
        **_identity(settings),
    }
    return base.UpstreamRequest(f"{settings.openalex_api_url.rstrip('/')}/works", params)


def parse_retractions(body: str | bytes) -> dict[str, bool]:
    """Normalised DOI -> `is_retracted` for every work of a `/works` answer that has both; raises
    base.UnusableAnswer when the answer is not an OpenAlex list of works."""
    data = base.load_json(body, "OpenAlex")
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise base.UnusableAnswer("OpenAlex answer holds no list of works")
    flags: dict[str, bool] = {}
    for work in data["results"]:
        if not isinstance(work, dict) or not isinstance(work.get("is_retracted"), bool):
            continue
        doi = normalise_doi(work.get("doi") or (work.get("ids") or {}).get("doi"))
        if doi:
            flags[doi] = flags.get(doi, False) or work["is_retracted"]
    return flags


ID_BATCH = 50  # works per `filter=openalex:W1|W2|…` lookup (the OR filter takes up to 100 values)
FORWARD_POOL = 200  # citing works read (newest first) before the most cited of each year lead


def build_seed_request(settings: Settings, query: base.GraphQuery) -> base.UpstreamRequest | None:
    """The seed work itself, by DOI (an arXiv id by its DataCite DOI): its id and `referenced_works`."""
    doi = query.doi or (f"{ARXIV_DOI_PREFIX}{query.arxiv_id}" if query.arxiv_id else None)
    if doi is None:
        return None
    params = {**_identity(settings), "select": "id,referenced_works"}
    return base.UpstreamRequest(f"{settings.openalex_api_url.rstrip('/')}/works/doi:{doi}", params)


def short_id(value: Any) -> str | None:
    """`https://openalex.org/W123` -> `W123`."""
    text = str(value or "").rstrip("/").rsplit("/", 1)[-1]
    return text if text[:1] == "W" and text[1:].isdigit() else None


@base.graph_guard(NAME)
def parse_seed(status_code: int, body: str | bytes) -> base.GraphPage:
    """The seed work: its own id first in `ids`, then the ids of the works it references."""
    data = base.load_json(body, "OpenAlex")
    own = short_id(data.get("id")) if isinstance(data, dict) else None
    if own is None:
        raise base.UnusableAnswer("OpenAlex answer is not a work")
    referenced = [found for value in data.get("referenced_works") or [] if (found := short_id(value))]
    return base.GraphPage(ids=[own, *referenced])


def build_works_request(
    settings: Settings, work_filter: str, per_page: int, sort: str | None
) -> base.UpstreamRequest:
    params: dict[str, Any] = {
        **_identity(settings),
        "filter": work_filter,
        "per_page": max(1, min(per_page, 200)),
    }
    if sort:
        params["sort"] = sort
    return base.UpstreamRequest(f"{settings.openalex_api_url.rstrip('/')}/works", params)


class OpenAlexConnector(base.FormatConnector):
    name = NAME
    upstream = base.UpstreamFormat(parse_response, build_lookup_request, parse_lookup)
    prefix = "oa"

    takes_team_keys = True

    def spend_search_allowance(self, provider: str) -> bool:
        """`search=` calls are OpenAlex's scarce allowance (1,000 a day on a free key, a team's own key
        has its own); lookups by id are free and do not come here."""
        per_day = self.context.search_settings.openalex_searches_per_day
        return per_day == 0 or self.context.upstream_turns.spend_allowance(provider, "search", per_day)

    def with_api_key(self, request: base.UpstreamRequest, api_key: str) -> base.UpstreamRequest:
        return base.UpstreamRequest(request.url, {**request.params, "api_key": api_key}, request.headers)

    def build_request(self, query: PaperQuery, limit: int) -> base.UpstreamRequest:
        settings = self.context.settings
        years = base.year_range_params(
            query.year_start, query.year_end, since="from_publication_date", until="to_publication_date"
        )
        params: dict[str, Any] = {
            "search": query.query,
            "per_page": min(limit, 200),
            "page": 1,
            **years,
            **_identity(settings),
        }
        return base.UpstreamRequest(f"{settings.openalex_api_url.rstrip('/')}/works", params)

    graph_directions = ("references", "citations")

    async def citation_graph(self, query: base.GraphQuery) -> base.GraphResult:
        """The seed by DOI, then its referenced works looked up ID_BATCH at a time, or the works that cite
        it, newest first (the most cited first within a year)."""
        settings = self.context.settings
        seed_request = build_seed_request(settings, query)
        if seed_request is None:
            return base.GraphResult(NAME, error="OpenAlex cannot find a seed without a DOI or arXiv id")
        seed = await self.graph_exchange(query, seed_request, parse_seed)
        result = base.GraphResult(NAME, requests=1, error=seed.error)
        if not seed.ok:
            return result
        if query.direction == "citations":
            request = build_works_request(
                settings, f"cites:{seed.ids[0]}", FORWARD_POOL, "publication_year:desc"
            )
            batches = [request]
        else:
            referenced = seed.ids[1 : 1 + query.limit]
            batches = [
                build_works_request(
                    settings, "openalex:" + "|".join(referenced[at : at + ID_BATCH]), ID_BATCH, None
                )
                for at in range(0, len(referenced), ID_BATCH)
            ]
        await base.graph_batches(self, query, batches, self.parse_works, result)
        if query.direction == "citations":
            result.papers = base.newest_most_cited(result.papers)
        result.papers = result.papers[: query.limit]
        return result
