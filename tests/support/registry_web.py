"""Crossref and OpenAlex as bibliographic registries on a ScholarlyWeb: works looked up by DOI
(`/works/{doi}`, `/works/doi:{doi}`, 404 for a DOI neither knows) and found by a bibliographic search
(`query.bibliographic`, `search=`), each answer in the registry's own shape (tests/support/
scholarly_fixtures.py), with its retraction marks: Crossref's `updated-by` on the work (where Crossref
carries the Retraction Watch records), its retraction notices (`filter=updates:{doi}`, each notice's
`update-to` naming the work) and OpenAlex's `is_retracted`.

The searches rank the works by the words they share with the query and answer the best few whatever
their score, as the real registries do: a search for an invented reference still answers something.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from tests.support.scholarly_fixtures import SamplePaper, crossref_works, openalex_works
from tests.support.scholarly_web import RecordedRequest, Reply, ScholarlyWeb

SEARCH_ROWS = 3


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]{3,}", text.lower()))


@dataclass
class RegistryWeb:
    """`works` served by both registries; DOIs in `retracted` marked retracted by both, those in
    `noticed` only by a Crossref retraction notice."""

    works: Sequence[SamplePaper]
    retracted: set[str] = field(default_factory=set)
    noticed: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._by_doi = {w.doi.lower(): w for w in self.works if w.doi}
        self._words = [(_words(f"{w.title} {' '.join(w.authors)} {w.year}"), w) for w in self.works]

    def install(self, web: ScholarlyWeb) -> None:
        web.set_handler(web.CROSSREF_PATH + "/", self._crossref_work, prefix=True)
        web.set_handler(web.CROSSREF_PATH, self._crossref_search)
        web.set_handler(web.OPENALEX_PATH + "/doi:", self._openalex_work, prefix=True)
        web.set_handler(web.OPENALEX_PATH, self._openalex_search)

    def crossref_item(self, work: SamplePaper) -> dict[str, Any]:
        item: dict[str, Any] = crossref_works([work])["message"]["items"][0]
        if work.doi and work.doi.lower() in self.retracted:
            notice = f"{work.doi}.retraction"
            item["updated-by"] = [
                {"DOI": notice, "type": "retraction", "label": "Retraction", "source": "retraction-watch"}
            ]
        return item

    def openalex_work(self, work: SamplePaper) -> dict[str, Any]:
        record: dict[str, Any] = openalex_works([work])["results"][0]
        record["is_retracted"] = bool(work.doi and work.doi.lower() in self.retracted)
        return record

    def _found(self, query: str, rows: int) -> list[SamplePaper]:
        asked = _words(query)
        scored = sorted(((len(asked & words), i) for i, (words, _) in enumerate(self._words)), reverse=True)
        return [self._words[i][1] for score, i in scored[:rows] if score > 0]

    def _doi(self, request: RecordedRequest, prefix: str) -> SamplePaper | None:
        return self._by_doi.get(unquote(request.path[len(prefix) :]).lower())

    def _crossref_work(self, request: RecordedRequest) -> Reply:
        work = self._doi(request, ScholarlyWeb.CROSSREF_PATH + "/")
        if work is None:
            return Reply.of("Resource not found.", 404)
        return Reply.of({"status": "ok", "message-type": "work", "message": self.crossref_item(work)})

    def _notices(self, updated: list[str]) -> Reply:
        items = [
            {
                "DOI": f"{doi}.retraction",
                "title": ["Retraction notice"],
                "type": "journal-article",
                "update-to": [{"DOI": doi, "type": "retraction", "label": "Retraction"}],
            }
            for doi in updated
            if doi in self.retracted | self.noticed
        ]
        message = {"total-results": len(items), "items": items, "items-per-page": len(items)}
        return Reply.of({"status": "ok", "message-type": "work-list", "message": message})

    def _crossref_search(self, request: RecordedRequest) -> Reply:
        filters = (request.param("filter") or "").split(",")
        if filters[0].startswith("updates:"):
            return self._notices([f.removeprefix("updates:").lower() for f in filters])
        query = request.param("query.bibliographic") or ""
        rows = int(request.param("rows") or SEARCH_ROWS)
        items = [self.crossref_item(w) for w in self._found(query, rows) if w.doi]
        message = {"total-results": len(items), "items": items, "items-per-page": rows}
        return Reply.of({"status": "ok", "message-type": "work-list", "message": message})

    def _openalex_work(self, request: RecordedRequest) -> Reply:
        work = self._doi(request, ScholarlyWeb.OPENALEX_PATH + "/doi:")
        if work is None:
            return Reply.of({"error": "Not Found", "message": "no such work"}, 404)
        return Reply.of(self.openalex_work(work))

    def _openalex_search(self, request: RecordedRequest) -> Reply:
        rows = int(request.param("per_page") or SEARCH_ROWS)
        results = [self.openalex_work(w) for w in self._found(request.param("search") or "", rows)]
        return Reply.of({"meta": {"count": len(results)}, "results": results})
