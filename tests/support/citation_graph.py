"""A citation graph among SamplePapers, served on a ScholarlyWeb in each provider's own format.

    graph = CitationGraphWeb(papers, cites={0: [5], 1: [5]}, searchable=4)   # papers 0-3 are searchable
    graph.install(web)

Semantic Scholar: `POST /paper/batch` (`{"ids": [...]}` -> a list, `null` for unknown ids) and
`/paper/{id}/references` / `/paper/{id}/citations` (`{"offset", "data": [{"citedPaper" | "citingPaper"}]}`,
`next` while a page follows). OpenAlex: `/works/doi:{doi}` (a work with `referenced_works`) and
`/works?filter=openalex:W1|W2` or `filter=cites:W1`. Crossref: `/works/{doi}` (a work with its `reference`
list, `DOI` where deposited) and `/works?filter=doi:a,doi:b`. The search endpoints answer with the
searchable papers only, so a paper past them is reachable only through a citation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from tests.support.scholarly_fixtures import (
    SamplePaper,
    arxiv_feed,
    crossref_works,
    openalex_works,
    semantic_scholar_search,
)
from tests.support.scholarly_web import Handler, RecordedRequest, Reply, ScholarlyWeb


@dataclass
class CitationGraphWeb:
    papers: list[SamplePaper]
    cites: dict[int, list[int]]  # a paper's index -> the indices of the papers it references
    searchable: int | None = None  # the first this many papers answer searches (None: all)
    page_size: int = 100  # Semantic Scholar's page; a smaller one makes clients follow `next`
    _s2: list[dict[str, Any]] = field(init=False)
    _openalex: list[dict[str, Any]] = field(init=False)
    _searches: dict[str, Handler] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._s2 = semantic_scholar_search(self.papers)["data"]
        self._openalex = openalex_works(self.papers)["results"]

    @property
    def searched(self) -> list[SamplePaper]:
        return self.papers[: self.searchable] if self.searchable is not None else list(self.papers)

    def cited_by(self, index: int) -> list[int]:
        return [citing for citing, cited in self.cites.items() if index in cited]

    def install(self, web: ScholarlyWeb, searches: Mapping[str, Handler] | None = None) -> None:
        """The graph endpoints, and the search endpoints over the searchable papers; `searches` (by path:
        the OpenAlex and Crossref `/works` lists) answers the searches instead, e.g. a bench's own web."""
        self._searches = dict(searches or {})
        if searches is None:
            searched = self.searched
            web.set_response(web.ARXIV_PATH, arxiv_feed(searched), content_type="application/atom+xml")
            web.set_response(web.SEMANTIC_SCHOLAR_PATH, semantic_scholar_search(searched))
        web.set_handler(web.SEMANTIC_SCHOLAR_BASE + "/paper/batch", self._s2_batch)
        web.set_handler(web.SEMANTIC_SCHOLAR_BASE + "/paper/", self._s2_graph, prefix=True)
        web.set_handler(web.OPENALEX_PATH, self._openalex_list)
        web.set_handler(web.OPENALEX_PATH + "/", self._openalex_work, prefix=True)
        web.set_handler(web.CROSSREF_PATH, self._crossref_list)
        web.set_handler(web.CROSSREF_PATH + "/", self._crossref_work, prefix=True)

    # ---- finding a paper by the identifiers each provider uses ---------------------------------------

    def _by_doi(self, doi: str) -> int | None:
        doi = doi.lower().removeprefix("https://doi.org/")
        return next((i for i, p in enumerate(self.papers) if p.doi and p.doi.lower() == doi), None)

    def _by_s2_id(self, identifier: str) -> int | None:
        kind, _, value = identifier.partition(":")
        if kind.upper() == "DOI":
            return self._by_doi(value)
        if kind.upper() == "ARXIV":
            return next((i for i, p in enumerate(self.papers) if p.arxiv_id == value), None)
        return next((i for i, r in enumerate(self._s2) if r["paperId"] == identifier), None)

    # ---- Semantic Scholar --------------------------------------------------------------------------

    def _s2_batch(self, request: RecordedRequest) -> Reply:
        ids = (request.json() or {}).get("ids") or []
        rows = []
        for identifier in ids:
            index = self._by_s2_id(str(identifier))
            rows.append(None if index is None else {"paperId": self._s2[index]["paperId"]})
        return Reply.of(rows)

    def _s2_graph(self, request: RecordedRequest) -> Reply:
        rest = unquote(request.path.split("/paper/", 1)[1])
        identifier, _, direction = rest.rpartition("/")
        index = self._by_s2_id(identifier)
        if index is None or direction not in ("references", "citations"):
            return Reply.of({"error": f"Paper with id {identifier} not found"}, 404)
        linked = self.cites.get(index, []) if direction == "references" else self.cited_by(index)
        envelope = "citedPaper" if direction == "references" else "citingPaper"
        offset = int(request.param("offset") or 0)
        limit = min(int(request.param("limit") or 100), self.page_size)
        page = linked[offset : offset + limit]
        body: dict[str, Any] = {"offset": offset, "data": [{envelope: self._s2[i]} for i in page]}
        if offset + limit < len(linked):
            body["next"] = offset + limit
        return Reply.of(body)

    # ---- OpenAlex -----------------------------------------------------------------------------------

    def _openalex_id(self, index: int) -> str:
        return str(self._openalex[index]["id"])

    def _openalex_work(self, request: RecordedRequest) -> Reply:
        key = unquote(request.path.rsplit("/works/", 1)[1])
        doi = key.removeprefix("doi:").lower()
        arxiv = doi.removeprefix("10.48550/arxiv.") if doi.startswith("10.48550/arxiv.") else None
        index = (
            self._by_s2_id(f"ARXIV:{arxiv}")
            if arxiv
            else self._by_doi(doi)
            if key.startswith("doi:")
            else None
        )
        if index is None:
            return Reply.of({"error": "NotFoundError", "message": f"{key} not found"}, 404)
        work = {
            **self._openalex[index],
            "referenced_works": [self._openalex_id(i) for i in self.cites.get(index, [])],
        }
        return Reply.of(work)

    def _openalex_list(self, request: RecordedRequest) -> Reply:
        work_filter = request.param("filter") or ""
        if work_filter.startswith("openalex:"):
            wanted = set(work_filter.removeprefix("openalex:").split("|"))
            found = [i for i in range(len(self.papers)) if self._openalex_id(i).rsplit("/", 1)[1] in wanted]
        elif work_filter.startswith("cites:"):
            cited = work_filter.removeprefix("cites:")
            index = next(
                (i for i in range(len(self.papers)) if self._openalex_id(i).endswith("/" + cited)), None
            )
            found = self.cited_by(index) if index is not None else []
        elif ScholarlyWeb.OPENALEX_PATH in self._searches:
            return self._searches[ScholarlyWeb.OPENALEX_PATH](request)
        else:
            return Reply.of(openalex_works(self.searched))
        meta = {"count": len(found), "page": 1, "per_page": len(found)}
        return Reply.of({"meta": meta, "results": [self._openalex[i] for i in found]})

    # ---- Crossref -----------------------------------------------------------------------------------

    def _crossref_work(self, request: RecordedRequest) -> Reply:
        index = self._by_doi(unquote(request.path.split("/works/", 1)[1]))
        if index is None:
            return Reply.of("Resource not found.", 404)
        references = [
            {"key": f"ref{n}", "DOI": self.papers[i].doi, "article-title": self.papers[i].title}
            for n, i in enumerate(self.cites.get(index, []), start=1)
            if self.papers[i].doi
        ]
        references.append({"key": "unstructured", "unstructured": "A reference deposited without a DOI."})
        work = crossref_works([self.papers[index]])["message"]["items"][0]
        return Reply.of(
            {"status": "ok", "message-type": "work", "message": {**work, "reference": references}}
        )

    def _crossref_list(self, request: RecordedRequest) -> Reply:
        work_filter = request.param("filter") or ""
        if not work_filter.startswith("doi:"):
            search = self._searches.get(ScholarlyWeb.CROSSREF_PATH)
            return search(request) if search else Reply.of(crossref_works(self.searched))
        wanted = [self._by_doi(part.removeprefix("doi:")) for part in work_filter.split(",")]
        return Reply.of(crossref_works([self.papers[i] for i in wanted if i is not None]))
