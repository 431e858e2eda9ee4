"""The reference-manager exports (functions/research/job/exports.py): RIS read back by rispy, CSL-JSON
checked against the CSL input-data schema, one record per source."""

from __future__ import annotations

import json

import pytest
import rispy

from functions.research.job import exports, outputs
from functions.research.retrieval.evidence import PAGE, EvidenceChunk
from functions.research.retrieval.screening import Candidate, source_id_for
from tests.unit.orchestrate.fixtures import paper


def _candidate(index: int, **overrides: object) -> Candidate:
    item = paper(index, **overrides)
    return Candidate(paper=item, source_id=source_id_for(item.canonical_id))


SOURCES = [
    _candidate(  # a journal article with a DOI; authors with particles and letters beyond ASCII
        1,
        arxiv_id=None,
        url="https://doi.org/10.1145/3600006",
        doi="10.1145/3600006",
        venue="Journal of Łódź Studies",
        source="crossref",
        authors=["van der Berg, Jan", "de la Cruz, María", "Ōkubo, 健", "OpenAI"],
        title="Attention\nER  - is not the end: long documents",
    ),
    _candidate(2, authors=["Müller, Ö."], abstract="Line one.\nLine two."),  # an arXiv preprint, no DOI
    _candidate(  # a team's upload: no DOI, no arXiv id, a library URL
        3,
        arxiv_id=None,
        url="library://doc-1234",
        source="library",
        venue=None,
        year=None,
        authors=[],
        abstract=None,
    ),
]
KEYS = {source.source_id: f"key{index}" for index, source in enumerate(SOURCES)}


def _quote(source: Candidate, page: int, index: int) -> EvidenceChunk:
    return EvidenceChunk(f"ev-{index}", source.source_id, "A quote.", 0.5, PAGE, page, 0, 8, kind="finding")


EVIDENCE = [
    _quote(SOURCES[0], 3, 1),
    _quote(SOURCES[0], 1, 2),
    _quote(SOURCES[0], 3, 3),
    _quote(SOURCES[2], 2, 4),
]


def test_ris_reads_back_as_one_record_per_source_with_its_metadata() -> None:
    records = exports.ris_records(SOURCES, KEYS, EVIDENCE)
    text = exports.ris_text(records)
    exports.validate_ris(text, records)
    parsed = rispy.loads(text)
    assert parsed == records and text.startswith("TY  - JOUR\n") and text.count("\nER  - ") == 3
    journal, preprint, upload = parsed
    assert journal["type_of_reference"] == "JOUR" and journal["journal_name"] == "Journal of Łódź Studies"
    assert journal["title"] == "Attention ER - is not the end: long documents"
    assert journal["authors"] == ["van der Berg, Jan", "de la Cruz, María", "Ōkubo, 健", "OpenAI"]
    assert journal["doi"] == "10.1145/3600006" and journal["year"] == "2025"
    assert journal["notes"] == ["Quoted on p. 1, 3"] and journal["id"] == "key0"
    assert preprint["type_of_reference"] == "UNPB" and "doi" not in preprint
    assert preprint["secondary_title"] == SOURCES[1].paper.venue and "journal_name" not in preprint
    assert preprint["abstract"] == "Line one. Line two." and "notes" not in preprint
    assert preprint["urls"] == [SOURCES[1].paper.url]
    assert upload["type_of_reference"] == "GEN" and upload["urls"] == ["library://doc-1234"]
    assert "authors" not in upload and "year" not in upload and upload["notes"] == ["Quoted on p. 2"]


def test_ris_that_does_not_read_back_as_its_records_is_refused() -> None:
    records = exports.ris_records(SOURCES, KEYS, EVIDENCE)
    text = exports.ris_text(records)
    with pytest.raises(ValueError, match="does not read back"):
        exports.validate_ris(text.replace("AU  - OpenAI\n", ""), records)


def test_csl_json_is_csl_input_data_with_each_sources_metadata() -> None:
    items = exports.csl_items(SOURCES, KEYS, EVIDENCE)
    text = exports.csl_json_text(items)
    exports.validate_csl_json(text, items)
    journal, preprint, upload = json.loads(text)
    assert [item["id"] for item in (journal, preprint, upload)] == ["key0", "key1", "key2"]
    assert [item["type"] for item in (journal, preprint, upload)] == [
        "article-journal",
        "article",
        "document",
    ]
    assert journal["author"] == [
        {"family": "Berg", "non-dropping-particle": "van der", "given": "Jan"},
        {"family": "Cruz", "non-dropping-particle": "de la", "given": "María"},
        {"family": "Ōkubo", "given": "健"},
        {"literal": "OpenAI"},
    ]
    assert journal["issued"] == {"date-parts": [[2025]]} and journal["DOI"] == "10.1145/3600006"
    assert journal["container-title"] == "Journal of Łódź Studies" and journal["note"] == "Quoted on p. 1, 3"
    assert journal["URL"] == "https://doi.org/10.1145/3600006"
    assert "DOI" not in preprint and preprint["author"] == [{"family": "Müller", "given": "Ö."}]
    assert upload["URL"] == "library://doc-1234" and not {"author", "issued", "container-title"} & set(upload)


def test_csl_json_outside_the_schema_is_refused() -> None:
    items = exports.csl_items(SOURCES, KEYS, EVIDENCE)
    wrong = [{**items[0], "type": "paper"}, *items[1:]]
    with pytest.raises(ValueError, match="invalid CSL-JSON at 0/type"):
        exports.validate_csl_json(exports.csl_json_text(wrong), wrong)
    with pytest.raises(ValueError, match="does not read back"):
        exports.validate_csl_json(exports.csl_json_text(items[:2]), items)


def test_every_export_keys_its_records_as_the_bibtex_does() -> None:
    bib, keys = outputs.bibtex_entries(SOURCES)
    ris = rispy.loads(exports.ris_text(exports.ris_records(SOURCES, keys, [])))
    csl = exports.csl_items(SOURCES, keys, [])
    assert [record["id"] for record in ris] == [item["id"] for item in csl] == list(keys.values())
    assert all(f"{{{key}," in bib for key in keys.values())


def test_no_sources_is_an_empty_export() -> None:
    assert exports.ris_text([]) == ""
    exports.validate_ris("", [])
    exports.validate_csl_json(exports.csl_json_text([]), [])
