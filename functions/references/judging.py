"""A reference's verdict from what the registries answered.

- `verified`: a record is the cited work (by its DOI, or found by its title: matching.Match.accepted).
- `doi_title_mismatch`: the DOI is registered but to another work than the cited title (`matched` is the
  DOI's real record), or the DOI is registered nowhere while the cited title is a registered work's
  (`matched` is that work).
- `retracted`: the cited work is found and a registry marks it retracted.
- `ambiguous`: no DOI decides, and two different works fit equally well (`matched` is the first).
- `not_found`: no registry knows the work (or none could be asked: the notes say so).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from functions.common.models import WorkMetadata
from functions.references.lookup import Found
from functions.references.matching import TIE, Match, ranked
from functions.references.parsing import CitedReference

UNCHECKED = "no registry could be asked: the reference is unchecked"
Status = Literal["verified", "doi_title_mismatch", "not_found", "retracted", "ambiguous"]


@dataclass
class Verdict:
    status: Status
    matched: WorkMetadata | None
    confidence: float
    notes: list[str] = field(default_factory=list)


def cites_title(reference: CitedReference) -> bool:
    """The reference says more than its identifiers (a bare DOI says nothing to compare)."""
    return len(reference.text.split()) >= 3


def _retracted(record: WorkMetadata, records: Sequence[WorkMetadata]) -> bool:
    """Any registry's record of the same work marks it retracted."""
    same = [r for r in records if record.doi and r.doi == record.doi] or [record]
    return any(r.is_retracted for r in same) or record.title.lower().startswith("retracted")


def _describe(record: WorkMetadata) -> str:
    where = f" ({record.doi})" if record.doi else ""
    return f'"{record.title}"{where}'


def _confidence(best: Match) -> float:
    return round(min(1.0, best.score), 2)


def _found_verdict(best: Match, records: Sequence[WorkMetadata], how: str) -> Verdict:
    notes = [how]
    if _retracted(best.record, records):
        notes.append("a registry marks the work retracted")
        return Verdict("retracted", best.record, _confidence(best), notes)
    return Verdict("verified", best.record, _confidence(best), notes)


def _by_search(reference: CitedReference, searched: Found | None) -> tuple[list[Match], list[str]]:
    if searched is None:
        return [], []
    notes = [f"search failed at {e}" for e in searched.errors]
    return [m for m in ranked(reference, searched.records) if m.accepted], notes


def _searched_verdict(reference: CitedReference, searched: Found | None, notes: list[str]) -> Verdict:
    accepted, failures = _by_search(reference, searched)
    notes += failures
    if not accepted:
        if searched is not None and not searched.answered:
            notes.append(UNCHECKED)
            return Verdict("not_found", None, 0.0, notes)
        notes.append("no registry holds a work with this title")
        return Verdict("not_found", None, 0.8 if not failures else 0.5, notes)
    best = accepted[0]
    rivals = [m for m in accepted[1:] if best.score - m.score <= TIE]
    if rivals:
        names = "; ".join(_describe(m.record) for m in (best, *rivals))
        notes.append(f"equally good matches: {names}")
        return Verdict("ambiguous", best.record, round(best.score / 2, 2), notes)
    return _found_verdict(best, searched.records if searched else [], "found by a bibliographic search")


def judge(reference: CitedReference, by_doi: Found | None, searched: Found | None) -> Verdict:
    """The verdict from the DOI's records (None: the reference has no DOI) and the search's (None: not
    searched)."""
    notes: list[str] = []
    if by_doi is None:
        return _searched_verdict(reference, searched, notes)
    notes += [f"DOI lookup failed at {e}" for e in by_doi.errors]
    if not by_doi.records:
        if not by_doi.answered and searched is None:
            notes.append(UNCHECKED)
            return Verdict("not_found", None, 0.0, notes)
        if not by_doi.answered:
            return _searched_verdict(reference, searched, notes)
        accepted, failures = _by_search(reference, searched)
        notes += failures
        notes.append(f"the DOI {reference.doi} is registered at neither Crossref nor OpenAlex")
        if accepted:
            notes.append(f"the cited title is that of {_describe(accepted[0].record)}")
            return Verdict("doi_title_mismatch", accepted[0].record, 0.7, notes)
        return Verdict("not_found", None, 0.9, notes)
    best = ranked(reference, by_doi.records)[0]
    if not cites_title(reference) or best.accepted:
        return _found_verdict(best, by_doi.records, "found by its DOI")
    notes.append(f"the DOI is registered to {_describe(best.record)}, not to the cited title")
    accepted, failures = _by_search(reference, searched)
    notes += failures
    elsewhere = [m for m in accepted if m.record.doi != best.record.doi]
    if elsewhere:
        notes.append(f"the cited title is that of {_describe(elsewhere[0].record)}")
    if _retracted(best.record, by_doi.records):
        notes.append("a registry marks the DOI's work retracted")
    return Verdict("doi_title_mismatch", best.record, round(1.0 - best.title / 2, 2), notes)


def with_notice(verdict: Verdict, retracted: bool, notice: str | None, failure: str | None) -> None:
    """Crossref's retraction notices of the matched DOI, read into the verdict (in place): a verified
    work with a notice is retracted; a notice that could not be read is said in the notes."""
    if failure is not None:
        verdict.notes.append(f"Crossref's retraction notices could not be read: {failure}")
    if not retracted:
        return
    where = f" ({notice})" if notice else ""
    if verdict.status == "verified":
        verdict.status = "retracted"
        verdict.notes.append(f"Crossref lists a retraction notice{where}")
    elif "retracted" not in " ".join(verdict.notes):
        verdict.notes.append(f"Crossref lists a retraction notice{where} for the matched work")
