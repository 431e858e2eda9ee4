"""Crossref: `/works?query.bibliographic=`, JATS stripped from abstracts, `mailto` for the polite pool; the
citation graph's backward half: a work's deposited `reference` list, whose entries with a `DOI` are looked
up in one `filter=doi:…` request (Crossref has no list of citing works for the public)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from functions.common.models import LookupKind, WorkMetadata
from functions.common.settings import Settings
from functions.search.connectors import base
from functions.search.models import ConnectorResult, FoundPaper, PaperQuery, SourceType
from functions.search.normalise import build_paper
from functions.search.text import clean_text, format_author, strip_jats_abstract

NAME = "crossref"
# only fields the /works `select` parameter has long accepted (an unknown one is a 400)
SELECT = "DOI,title,abstract,author,issued,published-print,published-online,container-title,is-referenced-by-count,type,URL"
_TECHNICAL_TYPES = {"posted-content", "report", "report-component", "dataset", "standard", "monograph"}


def _first(value: Any) -> str | None:
    if isinstance(value, list):
        return next((str(v) for v in value if v), None)
    return str(value) if value else None


def _year(item: dict[str, Any]) -> int | None:
    for key in ("published", "issued", "published-print", "published-online", "created"):
        parts = (item.get(key) or {}).get("date-parts") or []
        if parts and parts[0] and isinstance(parts[0][0], int):
            return int(parts[0][0])
    return None


def _author(author: Any) -> str | None:
    if not isinstance(author, dict):
        return None
    if author.get("family"):
        return format_author(family=author.get("family"), given=author.get("given"))
    return format_author(author.get("name"))


def _source_type(kind: Any) -> SourceType:
    return "technical" if kind in _TECHNICAL_TYPES else "academic"


def _paper(item: Any, rank: int) -> FoundPaper | None:
    if not isinstance(item, dict):
        return None
    citations = item.get("is-referenced-by-count")
    return build_paper(
        connector=NAME,
        rank=rank,
        title=_first(item.get("title")),
        abstract=strip_jats_abstract(item.get("abstract")),
        year=_year(item),
        authors=[_author(a) for a in item.get("author") or []],
        venue=_first(item.get("container-title")),
        doi=item.get("DOI"),
        citations=citations if isinstance(citations, int) else None,
        landing_url=item.get("URL"),
        source_type=_source_type(item.get("type")),
    )


@base.never_raises(NAME)
def parse_response(status_code: int, body: str | bytes) -> ConnectorResult:
    if status_code >= 400:
        return base.status_error(NAME, status_code, body)
    data = base.load_json(body, "Crossref")
    message = data.get("message") if isinstance(data, dict) else None
    kind = data.get("message-type") if isinstance(data, dict) else None
    if kind == "work-list" and isinstance(message, dict):
        items = message.get("items") or []
        total = message.get("total-results")
    elif kind == "work" and isinstance(message, dict):
        items, total = [message], 1
    else:
        return ConnectorResult(
            connector=NAME, error=f"Crossref answer holds no works (message-type {kind!r})"
        )
    return base.ranked_result(NAME, items, _paper, total)


TITLE_LOOKUP_ROWS = 3


def _full_name(author: Any) -> str | None:
    if not isinstance(author, dict):
        return None
    name = " ".join(str(author[k]) for k in ("given", "family") if author.get(k)) or author.get("name")
    return clean_text(str(name)) if name else None


RETRACTING_UPDATES = frozenset({"retraction", "withdrawal", "removal"})


def _retracted(item: dict[str, Any]) -> bool | None:
    """Whether a retraction notice names the work (`updated-by`, where Crossref also carries the
    Retraction Watch records); None when the record does not list its updates."""
    updates = item.get("updated-by")
    if not isinstance(updates, list):
        return None
    return any(isinstance(u, dict) and str(u.get("type", "")).lower() in RETRACTING_UPDATES for u in updates)


def _work(item: Any) -> WorkMetadata | None:
    if not isinstance(item, dict) or not _first(item.get("title")):
        return None
    return WorkMetadata(
        source=NAME,
        title=clean_text(_first(item.get("title"))),
        authors=tuple(n for n in (_full_name(a) for a in item.get("author") or []) if n),
        year=_year(item),
        venue=clean_text(_first(item.get("container-title"))) or None,
        abstract=strip_jats_abstract(item.get("abstract")) or None,
        doi=str(item["DOI"]).lower() if item.get("DOI") else None,
        url=str(item["URL"]) if item.get("URL") else None,
        is_retracted=_retracted(item),
    )


@base.lookup_guard(NAME)
def parse_lookup(status_code: int, body: str | bytes) -> base.LookupResult:
    """`/works/{doi}` (message-type "work") or a bibliographic query ("work-list")."""
    data = base.load_json(body, "Crossref")
    message = data.get("message") if isinstance(data, dict) else None
    kind = data.get("message-type") if isinstance(data, dict) else None
    if kind == "work":
        items = [message]
    elif kind == "work-list" and isinstance(message, dict):
        items = message.get("items") or []
    else:
        return base.LookupResult(
            connector=NAME, error=f"Crossref answer holds no works (message-type {kind!r})"
        )
    return base.LookupResult(connector=NAME, works=[w for w in map(_work, items) if w is not None])


NOTICE_BATCH = 50  # DOIs per `filter=updates:a,updates:b,…` request (repeated filters are ORed)


def build_retraction_notices_request(settings: Settings, dois: list[str]) -> base.UpstreamRequest:
    """The notices (retractions, corrections, …) that update any of `dois`, up to NOTICE_BATCH of them."""
    batch = dois[:NOTICE_BATCH]
    params: dict[str, Any] = {
        **_polite(settings),
        "filter": ",".join(f"updates:{doi}" for doi in batch),
        "rows": min(1000, 4 * max(1, len(batch))),
    }
    return base.UpstreamRequest(f"{settings.crossref_api_url.rstrip('/')}/works", params)


@base.lookup_guard(NAME)
def parse_retraction_notices(status_code: int, body: str | bytes) -> base.LookupResult:
    """Each retraction notice's `update-to` as a record of the work it retracts, marked retracted, its
    `url` the notice's DOI resolver link."""
    data = base.load_json(body, "Crossref")
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(message, dict) or data.get("message-type") != "work-list":
        return base.LookupResult(connector=NAME, error="Crossref answer is not a list of works")
    retracted: list[WorkMetadata] = []
    for notice in message.get("items") or []:
        updates = notice.get("update-to") if isinstance(notice, dict) else None
        for update in updates if isinstance(updates, list) else []:
            if isinstance(update, dict) and str(update.get("type", "")).lower() in RETRACTING_UPDATES:
                url = f"https://doi.org/{str(notice['DOI']).lower()}" if notice.get("DOI") else None
                retracted.append(
                    WorkMetadata(
                        source=NAME,
                        doi=str(update.get("DOI", "")).lower() or None,
                        url=url,
                        is_retracted=True,
                    )
                )
    return base.LookupResult(connector=NAME, works=retracted)


def _polite(settings: Settings) -> dict[str, Any]:
    return {"mailto": settings.contact_email} if settings.contact_email else {}


def build_lookup_request(settings: Settings, kind: LookupKind, value: str) -> base.UpstreamRequest | None:
    api_url = settings.crossref_api_url.rstrip("/")
    params = _polite(settings)
    if kind == "doi":
        return base.UpstreamRequest(f"{api_url}/works/{quote(value, safe='/:;()._-')}", params)
    if kind == "title":
        params.update({"query.bibliographic": value, "rows": TITLE_LOOKUP_ROWS, "select": SELECT})
        return base.UpstreamRequest(f"{api_url}/works", params)
    return None


DOI_BATCH = 50  # DOIs per `filter=doi:a,doi:b,…` lookup


def build_reference_list_request(settings: Settings, query: base.GraphQuery) -> base.UpstreamRequest | None:
    if not query.doi:
        return None
    url = f"{settings.crossref_api_url.rstrip('/')}/works/{quote(query.doi, safe='/:;()._-')}"
    return base.UpstreamRequest(url, _polite(settings))  # a single work takes no `select`


@base.graph_guard(NAME)
def parse_reference_list(status_code: int, body: str | bytes) -> base.GraphPage:
    """`message.reference`: the DOIs of the entries that carry one, in the list's order."""
    data = base.load_json(body, "Crossref")
    message = data.get("message") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("message-type") != "work" or not isinstance(message, dict):
        raise base.UnusableAnswer("Crossref answer is not a work")
    dois = [
        str(entry["DOI"]).lower()
        for entry in message.get("reference") or []
        if isinstance(entry, dict) and entry.get("DOI")
    ]
    return base.GraphPage(ids=list(dict.fromkeys(dois)))


def build_doi_batch_request(settings: Settings, dois: list[str]) -> base.UpstreamRequest:
    params: dict[str, Any] = {
        **_polite(settings),
        "filter": ",".join(f"doi:{doi}" for doi in dois),
        "rows": max(1, len(dois)),
        "select": SELECT,
    }
    return base.UpstreamRequest(f"{settings.crossref_api_url.rstrip('/')}/works", params)


class CrossrefConnector(base.FormatConnector):
    name = NAME
    upstream = base.UpstreamFormat(parse_response, build_lookup_request, parse_lookup)
    prefix = "cr"

    def build_request(self, query: PaperQuery, limit: int) -> base.UpstreamRequest:
        settings = self.context.settings
        params: dict[str, Any] = {
            "query.bibliographic": query.query,
            "rows": min(limit, 1000),
            "select": SELECT,
            **base.year_range_params(
                query.year_start, query.year_end, since="from-pub-date", until="until-pub-date"
            ),
        }
        if settings.contact_email:
            params["mailto"] = settings.contact_email
        return base.UpstreamRequest(f"{settings.crossref_api_url.rstrip('/')}/works", params)

    graph_directions = ("references",)

    async def citation_graph(self, query: base.GraphQuery) -> base.GraphResult:
        settings = self.context.settings
        request = build_reference_list_request(settings, query)
        if request is None or query.direction != "references":
            return base.GraphResult(NAME, error="Crossref gives only the references of a work with a DOI")
        listed = await self.graph_exchange(query, request, parse_reference_list)
        result = base.GraphResult(NAME, requests=1, error=listed.error)
        dois = listed.ids[: query.limit] if listed.ok else []
        batches = (
            build_doi_batch_request(settings, dois[at : at + DOI_BATCH])
            for at in range(0, len(dois), DOI_BATCH)
        )
        await base.graph_batches(self, query, batches, self.parse_works, result)
        return result
