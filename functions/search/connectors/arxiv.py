"""arXiv: the Atom export API with fielded boolean query syntax (`all:term AND ...`, `submittedDate`)."""

from __future__ import annotations

import re
from typing import Any

from functions.common.models import LookupKind, WorkMetadata
from functions.common.settings import Settings
from functions.common.text import fold, terms
from functions.search.connectors.base import (
    FormatConnector,
    LookupResult,
    UpstreamFormat,
    UpstreamRequest,
    lookup_guard,
    never_raises,
    ranked_result,
    status_error,
)
from functions.search.models import ConnectorResult, FoundPaper, PaperQuery
from functions.search.normalise import build_paper
from functions.search.text import arxiv_id_from, clean_text, format_author

NAME = "arxiv"
MAX_TERMS = 6
_UNSAFE = re.compile(r"[^0-9a-z\- ]")


def _term(phrase: str) -> str | None:
    """One `all:` clause: a word, or a quoted phrase for several words (hyphens become spaces)."""
    words = [_UNSAFE.sub("", word) for word in fold(phrase).replace("-", " ").split()]
    words = [word for word in words if word]
    if not words:
        return None
    return f'all:"{" ".join(words)}"' if len(words) > 1 else f"all:{words[0]}"


def _concept_clauses(concepts: list[list[str]]) -> list[str]:
    """Each concept group as `(all:"phrase" OR all:synonym)`; the groups are AND-ed by the caller."""
    clauses = []
    for group in concepts[:MAX_TERMS]:
        alternatives = list(dict.fromkeys(term for term in map(_term, group) if term))
        if len(alternatives) == 1:
            clauses.append(alternatives[0])
        elif alternatives:
            clauses.append("(" + " OR ".join(alternatives) + ")")
    return clauses


def build_search_query(query: PaperQuery) -> str:
    """'Transformer architectures in 2023' + years -> 'all:transformer AND all:architectures AND submittedDate:[...]';
    with concept groups: '(all:"graph neural networks" OR all:gnn) AND all:"drug discovery" AND ...'."""
    clauses = _concept_clauses(query.concepts) if query.concepts else []
    if not clauses:
        words = terms(query.query) or fold(query.query).split()
        for word in list(dict.fromkeys(words))[:MAX_TERMS]:
            safe = _UNSAFE.sub("", word)
            if not safe:
                continue
            clauses.append(f'all:"{safe.replace("-", " ")}"' if "-" in safe else f"all:{safe}")
    if query.year_start or query.year_end:
        start = query.year_start or 1991
        end = query.year_end or 2999
        clauses.append(f"submittedDate:[{start}01010000 TO {end}12312359]")
    return " AND ".join(clauses) or "all:*"


def _entry_paper(entry: Any, rank: int) -> FoundPaper | None:
    arxiv_id = arxiv_id_from(str(entry.get("id", "")))
    pdf = next(
        (link.get("href") for link in entry.get("links", []) if link.get("type") == "application/pdf"),
        None,
    )
    published = entry.get("published_parsed") or entry.get("updated_parsed")
    journal_ref = entry.get("arxiv_journal_ref")
    return build_paper(
        connector=NAME,
        rank=rank,
        title=entry.get("title"),
        abstract=entry.get("summary"),
        year=published.tm_year if published else None,
        authors=[format_author(author.get("name")) for author in entry.get("authors", [])],
        venue=journal_ref or "arXiv",
        doi=entry.get("arxiv_doi"),
        arxiv_id=arxiv_id,
        pdf_url=pdf,
        open_access=True,
        source_type="academic" if journal_ref else "technical",
    )


@never_raises(NAME)
def parse_response(status_code: int, body: str | bytes) -> ConnectorResult:
    if status_code >= 400:
        return status_error(NAME, status_code, body)
    import feedparser  # parsing a feed, not importing the handler, pays for it

    feed = feedparser.parse(body)
    entries = list(feed.entries)
    errors = [e for e in entries if "/api/errors" in str(e.get("id", ""))]
    if errors:
        return ConnectorResult(connector=NAME, error=f"arXiv API error: {errors[0].get('summary', '')}")
    total_text = feed.feed.get("opensearch_totalresults")
    if total_text is None and not entries:
        return ConnectorResult(connector=NAME, error="arXiv answered something that is not an Atom feed")
    total = int(total_text) if total_text and str(total_text).isdigit() else None
    return ranked_result(NAME, entries, _entry_paper, total)


def _work(entry: Any) -> WorkMetadata | None:
    title = clean_text(entry.get("title"))
    if not title:
        return None
    published = entry.get("published_parsed") or entry.get("updated_parsed")
    return WorkMetadata(
        source=NAME,
        title=title,
        authors=tuple(clean_text(a.get("name")) for a in entry.get("authors", []) if a.get("name")),
        year=published.tm_year if published else None,
        venue=clean_text(entry.get("arxiv_journal_ref")) or "arXiv",
        abstract=clean_text(entry.get("summary")) or None,
        doi=str(entry["arxiv_doi"]).lower() if entry.get("arxiv_doi") else None,
        arxiv_id=arxiv_id_from(str(entry.get("id", ""))),
    )


@lookup_guard(NAME)
def parse_lookup(status_code: int, body: str | bytes) -> LookupResult:
    """`?id_list=<id>`: an Atom feed with the entry (or an error entry for an unknown id)."""
    import feedparser  # parsing a feed, not importing the handler, pays for it

    feed = feedparser.parse(body)
    entries = [e for e in feed.entries if "/api/errors" not in str(e.get("id", ""))]
    if not entries and feed.feed.get("opensearch_totalresults") is None:
        return LookupResult(connector=NAME, error="arXiv answered something that is not an Atom feed")
    return LookupResult(connector=NAME, works=[w for w in map(_work, entries) if w is not None])


def build_lookup_request(settings: Settings, kind: LookupKind, value: str) -> UpstreamRequest | None:
    if kind != "arxiv":
        return None
    return UpstreamRequest(settings.arxiv_api_url, {"id_list": value, "max_results": 1})


class ArxivConnector(FormatConnector):
    name = NAME
    upstream = UpstreamFormat(parse_response, build_lookup_request, parse_lookup)
    prefix = "ax"

    def build_request(self, query: PaperQuery, limit: int) -> UpstreamRequest:
        params = {
            "search_query": build_search_query(query),
            "start": 0,
            "max_results": limit,
            "sortBy": "relevance",
            "sortOrder": "descending",
        }
        return UpstreamRequest(self.context.settings.arxiv_api_url, params)
