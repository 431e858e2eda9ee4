"""The web's literature: the 20 corpus papers followed by the distractors, optionally re-dated."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from bench.corpus_web.corpus import corpus_dir, load_corpus_papers
from bench.corpus_web.distractors import load_distractors
from bench.corpus_web.paper import WebPaper
from bench.corpus_web.text import normalise_title


def redate(papers: list[WebPaper], window: int, now: int) -> list[WebPaper]:
    """Map every year into [now - window + 1, now] by one order-preserving linear map."""
    years = [p.year for p in papers if p.year is not None]
    if not years:
        return papers
    # a handful of classics (1950, 1980s) would squeeze everything else into two years: the map starts
    # at 1995 and anything older lands on the window's first year
    oldest, newest = max(min(years), 1995), max(max(years), now)
    span = max(1, newest - oldest)
    low = now - window + 1

    def moved(year: int | None) -> int | None:
        if year is None:
            return None
        return low + round((max(year, oldest) - oldest) * (now - low) / span)

    return [replace(p, year=moved(p.year)) for p in papers]


@cache
def _load(root: Path) -> tuple[WebPaper, ...]:
    """The corpus papers and the distractors not among them, read once per process."""
    relevant = load_corpus_papers(root)
    titles = {normalise_title(p.title) for p in relevant}
    dois = {p.doi for p in relevant if p.doi}
    distractors = [
        p for p in load_distractors(root) if normalise_title(p.title) not in titles and p.doi not in dois
    ]
    return (*relevant, *distractors)


def literature(root: Path | None = None, *, redate_years: int | None = 10) -> list[WebPaper]:
    """The 20 corpus papers followed by the distractors, years re-dated into the last `redate_years`."""
    papers = list(_load(corpus_dir(root)))
    return redate(papers, redate_years, datetime.now(UTC).year) if redate_years else papers
