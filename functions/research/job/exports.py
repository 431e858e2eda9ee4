"""Finalize: the sources as reference managers import them, RIS (`references.ris`) and CSL-JSON
(`references.csl.json`), one record per source under the BibTeX citation key, rendered from metadata;
each is read back and checked before it is written."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from functions.research.retrieval.screening import Candidate
from functions.research.retrieval.untrusted_text import own_links, without_hostile

if TYPE_CHECKING:
    from functions.research.retrieval.evidence import EvidenceChunk

# The CSL input-data schema v1.0 (citation-style-language/schema, MIT licence), beside this module.
CSL_DATA_SCHEMA = Path(__file__).with_name("csl-data.json")
# Lower-case name parts that lead a family name and are sorted with it ("van der Berg", "de la Cruz").
_PARTICLES = frozenset(
    {"van", "von", "der", "den", "de", "del", "della", "di", "da", "dos", "du", "la", "le", "ter"}
)


def _one_line(value: str) -> str:
    return " ".join(value.split())


def _abstract(candidate: Candidate) -> str:
    paper = candidate.paper
    if not paper.abstract:
        return ""
    return _one_line(without_hostile(paper.abstract, own_links(paper.url, paper.doi)))


def _quoted_pages(evidence: Sequence[EvidenceChunk]) -> dict[str, list[int]]:
    """Source id -> the pages its quotes are on, in page order."""
    pages: dict[str, set[int]] = {}
    for item in evidence:
        if item.page is not None:
            pages.setdefault(item.source_id, set()).add(item.page)
    return {source_id: sorted(found) for source_id, found in pages.items()}


def pages_note(pages: Sequence[int]) -> str:
    return f"Quoted on p. {', '.join(str(page) for page in pages)}" if pages else ""


# Each kind of work as RIS and CSL type it: a preprint is RIS's unpublished work and CSL's `article`; a
# team's upload or a work without a venue is a generic document.
RIS_TYPES = {"journal": "JOUR", "preprint": "UNPB", "document": "GEN"}
CSL_TYPES = {"journal": "article-journal", "preprint": "article", "document": "document"}


def _kind(candidate: Candidate) -> str:
    if _is_journal_article(candidate):
        return "journal"
    return "preprint" if candidate.paper.arxiv_id else "document"


def _is_journal_article(candidate: Candidate) -> bool:
    return (
        bool(candidate.paper.venue) and not candidate.paper.arxiv_id and candidate.paper.source != "library"
    )


def ris_records(
    sources: Sequence[Candidate], keys: Mapping[str, str], evidence: Sequence[EvidenceChunk]
) -> list[dict[str, Any]]:
    """rispy's records: TY, ID (the citation key), TI, AU, PY, JO (a journal's) or T2 (another venue),
    DO, UR, AB, and N1 the pages the source's quotes are on."""
    pages = _quoted_pages(evidence)
    records = []
    for candidate in sources:
        paper = candidate.paper
        record: dict[str, Any] = {
            "type_of_reference": RIS_TYPES[_kind(candidate)],
            "id": keys[candidate.source_id],
            "title": _one_line(paper.title),
        }
        if paper.authors:
            record["authors"] = [_one_line(author) for author in paper.authors]
        if paper.year:
            record["year"] = str(paper.year)
        if paper.venue:
            record["journal_name" if _is_journal_article(candidate) else "secondary_title"] = _one_line(
                paper.venue
            )
        if paper.doi:
            record["doi"] = paper.doi
        record["urls"] = [paper.url]
        if abstract := _abstract(candidate):
            record["abstract"] = abstract
        if note := pages_note(pages.get(candidate.source_id, [])):
            record["notes"] = [note]
        records.append(record)
    return records


@cache
def _ris_writer() -> Any:
    """rispy's RIS writer without its numbered line ("1.") before each record: every record starts at
    its TY tag, as reference managers write RIS."""
    import rispy  # on first use, not with the handler (bench/cold_start.py)

    class PlainRisWriter(rispy.RisWriter):  # type: ignore[misc]
        def set_header(self, count: int) -> str:
            return ""

    return PlainRisWriter


def ris_text(records: list[dict[str, Any]]) -> str:
    import rispy

    return str(rispy.dumps(records, implementation=_ris_writer())) if records else ""


def validate_ris(text: str, records: list[dict[str, Any]]) -> None:
    """The RIS text reads back, with rispy, as exactly the records it was written from."""
    import rispy

    parsed = rispy.loads(text) if text else []
    if parsed != records:
        raise ValueError(f"RIS does not read back as its {len(records)} record(s)")


def csl_name(author: str) -> dict[str, str]:
    """A "Family, Given" author as a CSL name; leading lower-case particles are the family's own
    (`non-dropping-particle`); a name without a comma (an organisation, a mononym) is literal."""
    family, comma, given = (part.strip() for part in _one_line(author).partition(","))
    if not comma or not family:
        return {"literal": _one_line(author)}
    words = family.split()
    lead = 0
    while lead < len(words) - 1 and words[lead] in _PARTICLES:
        lead += 1
    name = {"family": " ".join(words[lead:])}
    if lead:
        name["non-dropping-particle"] = " ".join(words[:lead])
    if given:
        name["given"] = given
    return name


def csl_items(
    sources: Sequence[Candidate], keys: Mapping[str, str], evidence: Sequence[EvidenceChunk]
) -> list[dict[str, Any]]:
    """CSL-JSON items: id (the citation key), type, title, author, issued, DOI, URL, container-title,
    abstract, and a note of the pages quoted."""
    pages = _quoted_pages(evidence)
    items = []
    for candidate in sources:
        paper = candidate.paper
        item: dict[str, Any] = {
            "id": keys[candidate.source_id],
            "type": CSL_TYPES[_kind(candidate)],
            "title": _one_line(paper.title),
        }
        if paper.authors:
            item["author"] = [csl_name(author) for author in paper.authors]
        if paper.year:
            item["issued"] = {"date-parts": [[paper.year]]}
        if paper.venue:
            item["container-title"] = _one_line(paper.venue)
        if paper.doi:
            item["DOI"] = paper.doi
        item["URL"] = paper.url
        if abstract := _abstract(candidate):
            item["abstract"] = abstract
        if note := pages_note(pages.get(candidate.source_id, [])):
            item["note"] = note
        items.append(item)
    return items


@cache
def _csl_validator() -> Any:
    from jsonschema import Draft7Validator  # on first use (bench/cold_start.py)

    schema = json.loads(CSL_DATA_SCHEMA.read_text(encoding="utf-8"))
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema)


def validate_csl_json(text: str, items: list[dict[str, Any]]) -> None:
    """The text is CSL input data by the CSL-JSON schema, and reads back as exactly its items."""
    parsed = json.loads(text)
    errors = sorted(_csl_validator().iter_errors(parsed), key=lambda error: list(error.absolute_path))
    if errors:
        where = "/".join(str(part) for part in errors[0].absolute_path)
        raise ValueError(f"invalid CSL-JSON at {where or 'the top'}: {errors[0].message}")
    if parsed != items:
        raise ValueError(f"CSL-JSON does not read back as its {len(items)} item(s)")


def csl_json_text(items: list[dict[str, Any]]) -> str:
    return json.dumps(items, indent=2, ensure_ascii=False) + "\n"
