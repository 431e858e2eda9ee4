"""The search sources: each connector's name and what the rest of the code needs to know about it.

Adding a source takes one line here and a factory in `functions/search/connectors/__init__.py`. That
module keys its factories by these names, and a test checks that the two agree. Everything else is
derived from this list: the search request's connector enum (in this order), the connectors a job plan
searches and how each engine matches a query, the order of metadata preference when connectors
disagree, and the sources extraction asks for metadata. The module imports nothing, so the planner and
the API schemas can read it without loading the connectors and their HTTP client.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

# How an engine matches a query, which decides what one request to it can find (see planning.py).
Matching = Literal["boolean", "ranked_any", "all_words"]


@dataclass(frozen=True)
class Source:
    name: str
    # None: job plans never search it (the team's own library is searched on request only).
    matching: Matching | None
    # Whose metadata wins when connectors disagree: lower ranks win. None: a source that is not a
    # bibliographic index (never preferred, and extraction does not ask it for metadata).
    metadata_rank: int | None


SOURCES: tuple[Source, ...] = (
    Source("arxiv", matching="boolean", metadata_rank=4),
    Source("semantic_scholar", matching="all_words", metadata_rank=3),
    Source("openalex", matching="all_words", metadata_rank=2),
    Source("crossref", matching="ranked_any", metadata_rank=1),
    Source("library", matching=None, metadata_rank=None),
)


def connector_names(sources: Sequence[Source] = SOURCES) -> tuple[str, ...]:
    """Every connector, in the order the search API's enum lists them."""
    return tuple(source.name for source in sources)


def planned_connectors(sources: Sequence[Source] = SOURCES) -> tuple[str, ...]:
    """The connectors a job plan sends queries to."""
    return tuple(source.name for source in sources if source.matching is not None)


def engine_matching(sources: Sequence[Source] = SOURCES) -> dict[str, Matching]:
    return {source.name: source.matching for source in sources if source.matching is not None}


def metadata_preference(sources: Sequence[Source] = SOURCES) -> tuple[str, ...]:
    """The bibliographic sources, the one whose metadata wins first."""
    ranked = [(source.metadata_rank, source.name) for source in sources if source.metadata_rank is not None]
    return tuple(name for _, name in sorted(ranked))
