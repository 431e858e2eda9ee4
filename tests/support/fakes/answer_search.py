"""An in-memory search port (the Retriever's SearchPort, as SearchService implements it) for unit tests."""

from __future__ import annotations

from dataclasses import dataclass, field

from functions.common.errors import UpstreamError
from functions.common.text import stems
from functions.search.models import FoundPaper, PaperQuery, SearchOutcome

PREFIXES = {"arxiv": "ax", "openalex": "oa", "semantic_scholar": "s2", "crossref": "cr"}


def paper(
    title: str, abstract: str, *, year: int = 2023, source: str = "openalex", doi: str | None = None
) -> FoundPaper:
    slug = "-".join(title.lower().split()[:4])
    return FoundPaper(
        title=title,
        abstract=abstract,
        year=year,
        url=f"https://example.org/{slug}",
        doi=doi,
        source=source,
        found_by=[source],
        venue="Journal of Tests",
        citations=10,
    )


@dataclass
class InMemorySearch:
    papers: list[FoundPaper]
    fail: bool = False
    queries: list[PaperQuery] = field(default_factory=list)

    @property
    def connector_names(self) -> list[str]:
        return sorted({p.source for p in self.papers}) or ["openalex"]

    def connector_prefix(self, name: str) -> str:
        return PREFIXES.get(name, name[:2])

    async def search(self, query: PaperQuery) -> SearchOutcome:
        self.queries.append(query)
        if self.fail:
            raise UpstreamError("openalex: down")
        wanted = set(stems(query.query))
        found = [p for p in self.papers if wanted <= set(stems(f"{p.title} {p.abstract}"))]
        return SearchOutcome(
            papers=list(found),
            total_found=len(found),
            connectors_used=self.connector_names,
            failed_connectors={},
            query_time_ms=1.0,
            rrf_scores={p.canonical_id: 1 / (60 + rank) for rank, p in enumerate(found, start=1)},
        )
