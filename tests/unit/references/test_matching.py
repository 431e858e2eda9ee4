"""Matching and verdicts on real registry records: Crossref's recorded `/works/{doi}` answers and an
OpenAlex work, read by the connectors' own lookup parsers."""

from __future__ import annotations

import json
from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest

from functions.common.models import WorkMetadata
from functions.references.judging import judge
from functions.references.lookup import Found
from functions.references.matching import match, ranked
from functions.references.parsing import parse_reference
from functions.search.connectors import crossref, openalex
from tests.support.cassettes import load_cassette

CROSSREF_WORKS = "crossref/habanero-cassettes/test-works/test_works_with_many_ids.yaml"
OPENALEX_WORK = "openalex/openalex-python-entities/W2741809807.json"


@pytest.fixture
def records(corpus_dir: Path) -> list[WorkMetadata]:
    works = [
        work
        for interaction in load_cassette(corpus_dir / "api" / CROSSREF_WORKS)
        for work in crossref.parse_lookup(interaction.status, interaction.body).works
    ]
    works += openalex.parse_lookup(200, (corpus_dir / "api" / OPENALEX_WORK).read_bytes()).works
    assert len(works) >= 4 and all(w.doi and w.authors and w.year for w in works)
    return works


def _surname(name: str) -> str:
    return name.split()[-1]


def _styles(work: WorkMetadata) -> list[str]:
    first = work.authors[0]
    return [
        f"{_surname(first)}, {first[0]}., et al. ({work.year}). {work.title}. {work.venue or ''}.",
        f"{_surname(first)} {first[0]}, et al. {work.title}. {work.venue or ''}. {work.year};1:1-9.",
        f'{first[0]}. {_surname(first)} et al., "{work.title}," {work.venue or ""}, {work.year}.',
        f"@article{{k, title={{{work.title}}}, author={{{' and '.join(work.authors)}}}, year={{{work.year}}}}}",
    ]


def test_each_record_matches_its_own_references_in_every_style(records: list[WorkMetadata]) -> None:
    for work in records:
        for text in _styles(work):
            reference = parse_reference(text)
            best = ranked(reference, records)[0]
            assert best.record == work and best.accepted, text
            assert best.authors and best.authors > 0 and best.year is True, text


def test_another_records_title_is_not_accepted(records: list[WorkMetadata]) -> None:
    for work, other in pairwise(records):
        reference = parse_reference(_styles(work)[0].replace(work.title, other.title))
        assert not match(reference, work).accepted


def test_a_slightly_misspelt_title_with_its_authors_and_year_is_accepted(records: list[WorkMetadata]) -> None:
    work = records[0]
    words = work.title.split()
    misspelt = " ".join([*words[:-2], words[-2][:-1], words[-1]])  # a letter dropped
    reference = parse_reference(_styles(work)[0].replace(work.title, misspelt))
    assert match(reference, work).accepted


def test_a_real_doi_with_an_invented_title_is_a_mismatch_showing_the_dois_record(
    records: list[WorkMetadata],
) -> None:
    work, other = records[0], records[1]
    text = f"{_styles(work)[0].replace(work.title, other.title)} https://doi.org/{work.doi}"
    reference = parse_reference(text)
    verdict = judge(reference, Found([work], asked=["crossref"]), Found(records, asked=["crossref"]))
    assert verdict.status == "doi_title_mismatch"
    assert verdict.matched == work
    assert any(str(other.doi) in note for note in verdict.notes)


def test_a_retracted_record_is_retracted_and_two_equal_records_are_ambiguous(
    records: list[WorkMetadata],
) -> None:
    work = records[0]
    reference = parse_reference(_styles(work)[0])
    flagged = replace(work, source="openalex", is_retracted=True)
    verdict = judge(reference, None, Found([work, flagged], asked=["crossref", "openalex"]))
    assert verdict.status == "retracted" and verdict.matched is not None
    twin = replace(work, doi="10.9999/another.copy")
    verdict = judge(reference, None, Found([work, twin], asked=["crossref"]))
    assert verdict.status == "ambiguous"


def test_an_unknown_doi_and_a_failed_lookup_are_told_apart(records: list[WorkMetadata]) -> None:
    reference = parse_reference("10.1234/not.registered")
    unknown = judge(reference, Found([], asked=["crossref", "openalex"]), None)
    assert unknown.status == "not_found" and unknown.confidence >= 0.8
    failed = judge(
        reference,
        Found([], errors=["crossref: down", "openalex: down"], asked=["crossref", "openalex"]),
        None,
    )
    assert failed.status == "not_found" and failed.confidence == 0.0
    assert any("unchecked" in note for note in failed.notes)


def test_a_crossref_retraction_notice_marks_the_work_retracted(corpus_dir: Path) -> None:
    interaction = load_cassette(corpus_dir / "api" / CROSSREF_WORKS)[0]
    data = json.loads(interaction.body)
    assert crossref.parse_lookup(200, interaction.body).works[0].is_retracted is None  # no updates listed
    notice = {
        "DOI": "10.5555/notice",
        "type": "retraction",
        "label": "Retraction",
        "source": "retraction-watch",
    }
    data["message"]["updated-by"] = [notice]
    assert crossref.parse_lookup(200, json.dumps(data)).works[0].is_retracted is True
    data["message"]["updated-by"] = [{**notice, "type": "correction", "label": "Correction"}]
    assert crossref.parse_lookup(200, json.dumps(data)).works[0].is_retracted is False
