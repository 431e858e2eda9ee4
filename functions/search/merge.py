"""De-duplication across connectors (DOI, arXiv id, normalised title) and Reciprocal Rank Fusion."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from functions.search.models import ConnectorResult, FoundPaper
from functions.search.normalise import choose_url
from functions.search.sources import metadata_preference
from functions.search.text import normalise_title

RRF_K = 60
T = TypeVar("T")
# Whose metadata wins when connectors disagree: registries of record first, preprint server last.
METADATA_PREFERENCE = metadata_preference()
MIN_TITLE_KEY_LENGTH = 20


def _preference(connector: str) -> int:
    return (
        METADATA_PREFERENCE.index(connector) if connector in METADATA_PREFERENCE else len(METADATA_PREFERENCE)
    )


def _keys(paper: FoundPaper) -> list[str]:
    keys = []
    if paper.doi:
        keys.append(f"doi:{paper.doi}")
    if paper.arxiv_id:
        keys.append(f"arxiv:{paper.arxiv_id}")
    title = normalise_title(paper.title)
    if len(title) >= MIN_TITLE_KEY_LENGTH:
        keys.append(f"title:{title}")
    return keys


def _compatible(group: list[FoundPaper], paper: FoundPaper, key: str) -> bool:
    """A title-only match must not join works whose years are far apart (re-used generic titles)."""
    if not key.startswith("title:"):
        return True
    years = [p.year for p in group if p.year] + ([paper.year] if paper.year else [])
    return not years or max(years) - min(years) <= 1


def merge_papers(papers: Iterable[FoundPaper]) -> list[FoundPaper]:
    groups: list[list[FoundPaper] | None] = []
    index: dict[str, int] = {}
    for paper in papers:
        keys = _keys(paper)
        hits = sorted(
            {index[k] for k in keys if k in index and _compatible(groups[index[k]] or [], paper, k)}
        )
        if not hits:
            groups.append([paper])
            target = len(groups) - 1
        else:
            target = hits[0]
            members = groups[target]
            assert members is not None
            for other in hits[1:]:
                absorbed = groups[other]
                assert absorbed is not None
                members.extend(absorbed)
                groups[other] = None
            members.append(paper)
        # every key of every member (absorbed ones included) now points at the target group
        for member in groups[target] or []:
            for key in _keys(member):
                index[key] = target
    return [_combine(group) for group in groups if group]


def _first(values: Iterable[T | None]) -> T | None:
    return next((v for v in values if v is not None and v != ""), None)


def _combine(group: list[FoundPaper]) -> FoundPaper:
    if len(group) == 1:
        return group[0]
    by_preference = sorted(group, key=lambda p: _preference(p.source))
    ranks: dict[str, int] = {}
    for paper in group:
        for connector, rank in paper.connector_ranks.items():
            ranks[connector] = min(rank, ranks.get(connector, rank))
    best = min(group, key=lambda p: (p.upstream_rank or 10**6, _preference(p.source)))
    arxiv_id = _first(p.arxiv_id for p in group)
    doi = _first(p.doi for p in by_preference)
    pdf_url = _first(p.pdf_url for p in sorted(group, key=lambda p: p.source != "arxiv"))
    abstracts = [p.abstract for p in group if p.abstract]
    citations = [p.citations for p in group if p.citations is not None]
    open_access = [p.open_access for p in group if p.open_access is not None]
    retracted = [p.is_retracted for p in group if p.is_retracted is not None]
    url = choose_url(arxiv_id, doi, pdf_url, None)
    return FoundPaper(
        title=by_preference[0].title,
        url=url or best.url,
        abstract=max(abstracts, key=len) if abstracts else None,
        year=_first(p.year for p in by_preference),
        authors=max((p.authors for p in by_preference), key=len),
        venue=_first(p.venue for p in by_preference if p.venue != "arXiv") or _first(p.venue for p in group),
        doi=doi,
        arxiv_id=arxiv_id,
        citations=max(citations) if citations else None,
        pdf_url=pdf_url,
        open_access=any(open_access) if open_access else None,
        is_retracted=any(retracted) if retracted else None,  # one registry's retraction notice is enough
        source=best.source,
        found_by=list(dict.fromkeys(c for p in group for c in p.found_by)),
        upstream_rank=min((r for r in ranks.values()), default=best.upstream_rank),
        connector_ranks=ranks,
        source_type="academic" if any(p.source_type == "academic" for p in group) else best.source_type,
    )


def merge_results(results: Iterable[ConnectorResult]) -> list[FoundPaper]:
    """Papers of every successful connector, in connector order then rank, merged."""
    return merge_papers(p for result in results if result.ok for p in result.papers)


def rrf_score(paper: FoundPaper, k: int = RRF_K) -> float:
    """Reciprocal Rank Fusion: sum over connectors of 1 / (k + rank)."""
    return round(sum(1.0 / (k + rank) for rank in paper.connector_ranks.values()), 6)
