"""How well a registry record fits a cited reference: the title first (normalised, fuzzy), the authors and
the year as tie-breakers.

The title score is the Levenshtein similarity (rapidfuzz `ratio`) of the normalised cited title and the
record's; where the cited title could not be told apart from the rest of the reference, or the record's
title is long enough not to be found by chance, the best alignment of the record's title inside the
reference's text (`partial_ratio`) counts too. The thresholds were set on the dev half of
bench/reference_check.py's labelled set (docs/references.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rapidfuzz import fuzz

from functions.common.models import WorkMetadata
from functions.references.parsing import CitedReference, normalise_text

# A title this similar is the cited work's title, whoever the reference names as its authors.
TITLE_SAME = 0.97
# A title this similar is the cited work's unless the authors and the year both disagree (on the dev
# half, an invented title sharing most of its words with a real one scored 0.91 with neither).
TITLE_MATCH = 0.90
# A title this similar is accepted when the authors and the year agree as well.
TITLE_WITH_AUTHORS = 0.75
# Two candidates whose scores are this close are equally good.
TIE = 0.02
# A record's title at least this long may be looked for inside the whole reference.
ALIGNED_TITLE_CHARS = 30
AUTHORS_CHECKED = 3


@dataclass(frozen=True)
class Match:
    record: WorkMetadata
    title: float  # 0..1
    authors: float | None  # share of the record's first authors named in the reference; None: no authors
    year: bool | None  # the record's year within a year of one in the reference; None: either has none
    score: float

    @property
    def accepted(self) -> bool:
        """The record is the cited work: the same title, a close title that the authors or the year do
        not contradict, or a less close one with its authors and year."""
        authors_agree = (self.authors or 0.0) >= 0.5
        if self.title >= TITLE_SAME:
            return True
        if self.title >= TITLE_MATCH:
            return authors_agree or self.year is not False or self.authors is None
        return self.title >= TITLE_WITH_AUTHORS and authors_agree and self.year is True


def title_similarity(reference: CitedReference, title: str) -> float:
    record_title = normalise_text(title)
    if not record_title:
        return 0.0
    cited_title = normalise_text(reference.title or "")
    text = normalise_text(reference.text)
    best = fuzz.ratio(cited_title, record_title) / 100 if cited_title else 0.0
    may_align = not cited_title or len(record_title) >= ALIGNED_TITLE_CHARS
    if may_align and text and len(record_title) <= len(text):
        best = max(best, fuzz.partial_ratio(record_title, text) / 100)
    return best


def _surname(name: str) -> str:
    words = normalise_text(name).split()
    return words[-1] if words else ""


def author_agreement(reference: CitedReference, record: WorkMetadata) -> float | None:
    surnames = [s for s in (_surname(n) for n in record.authors[:AUTHORS_CHECKED]) if len(s) > 1]
    if not surnames:
        return None
    words = set(normalise_text(reference.text).split())
    return sum(1 for s in surnames if s in words) / len(surnames)


def year_agreement(reference: CitedReference, record: WorkMetadata) -> bool | None:
    if record.year is None or not reference.years:
        return None
    return any(abs(record.year - year) <= 1 for year in reference.years)


def match(reference: CitedReference, record: WorkMetadata) -> Match:
    title = title_similarity(reference, record.title)
    authors = author_agreement(reference, record)
    year = year_agreement(reference, record)
    # the tie-breakers move a score by at most 0.1: the title decides, they choose between equals
    score = (
        title
        + 0.06 * (authors if authors is not None else 0.5)
        + 0.04 * {True: 1.0, None: 0.5}.get(year, 0.0)
    )
    return Match(record, round(title, 4), authors, year, round(score, 4))


def ranked(reference: CitedReference, records: Sequence[WorkMetadata]) -> list[Match]:
    """The records as matches, best first, one per work (the same DOI, or the same title and year)."""
    best: dict[tuple[str, ...], Match] = {}
    for record in records:
        scored = match(reference, record)
        key = (record.doi,) if record.doi else (normalise_text(record.title), str(record.year))
        if key not in best or scored.score > best[key].score:
            best[key] = scored
    return sorted(best.values(), key=lambda m: -m.score)
