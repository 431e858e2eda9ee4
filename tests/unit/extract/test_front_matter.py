"""Front matter on papers nobody tuned for: identifiers, cover sheets, type labels, multi-line titles,
licence and correspondence boilerplate around abstracts (generated PDFs, no corpus files)."""

from __future__ import annotations

import pytest

from functions.extract.extraction import from_parsed
from functions.extract.frontmatter import clean_abstract, is_repository_name, strip_type_label
from functions.extract.identifiers import embedded_hints, find_identifiers
from functions.extract.pdf import parse_pdf
from tests.support.pdfgen import (
    SAMPLE_ABSTRACT,
    TextRun,
    build_pdf,
    cover_page,
    sample_paper_pages,
)

TWO_LINE_TITLE = ("Learning Sparse Routing for Journal-Length", "Scientific Documents with Transformers")


def analysed(data: bytes) -> tuple[str, str, list[str]]:
    parsed = parse_pdf(data)
    paper = from_parsed(parsed, source_url="file:test", canonical_id="file:test")
    return paper.title, paper.abstract, paper.authors


def article(
    title_lines: tuple[str, ...], *, label: str | None = None, abstract: str = SAMPLE_ABSTRACT
) -> list[list[TextRun]]:
    return sample_paper_pages(
        title=title_lines[0], title_continuation=list(title_lines[1:]), type_label=label, abstract=abstract
    )


# --- identifiers ------------------------------------------------------------------------------------


def test_arxiv_margin_stamp_new_and_old_style() -> None:
    found = find_identifiers(["arXiv:2101.01234v2 [cs.CL] 3 Jan 2021\nSome Title"], {})
    assert found.arxiv_id == "2101.01234" and found.year == 2021
    old = find_identifiers(["hep-th/9901001v1 [hep-th] 4 Jan 1999\nA Title", ""], {})
    assert old.arxiv_id == "hep-th/9901001"


def test_doi_on_the_first_page_and_trailing_punctuation() -> None:
    page = "Journal of Things 12 (2020) 1-10\nhttps://doi.org/10.1016/j.thing.2020.01.002.\nA Title"
    found = find_identifiers([page, "References\n[1] X. 10.1000/cited.work"], {})
    assert found.doi == "10.1016/j.thing.2020.01.002"
    assert "10.1000/cited.work" not in found.dois, "unlabelled DOIs on page 2 are references"


def test_arxiv_datacite_doi_becomes_an_arxiv_id() -> None:
    found = find_identifiers(["DOI: 10.48550/arXiv.2301.00001"], {})
    assert found.dois == [] and found.arxiv_id == "2301.00001"


def test_xmp_packet_and_doi_link_are_read_from_the_raw_file() -> None:
    xmp = (
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description>'
        b"<dc:title><rdf:Alt><rdf:li xml:lang='x-default'>Sparse Routing &amp; Attention</rdf:li></rdf:Alt>"
        b"</dc:title><prism:doi>10.5555/XMP.1</prism:doi></rdf:Description></rdf:RDF></x:xmpmeta>"
    )
    link = b"<< /Type /Annot /A << /S /URI /URI (https://doi.org/10.5555/link.2) >> >>"
    hints = embedded_hints(b"%PDF-1.7\n" + xmp + b"\n" + link)
    assert hints == {
        "xmp:title": "Sparse Routing & Attention",
        "xmp:doi": "10.5555/xmp.1",
        "link:doi": "10.5555/link.2",
    }
    assert find_identifiers(["no identifiers here"], hints).dois == ["10.5555/xmp.1", "10.5555/link.2"]


# --- type labels, repository names -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Research Article: Deep Routing for Long Documents", "Deep Routing for Long Documents"),
        ("ORIGINAL ARTICLE Deep Routing for Long Documents", "Deep Routing for Long Documents"),
        ("Review Article Deep Routing for Long Documents", "Deep Routing for Long Documents"),
        ("Brief Communication Deep Routing for Long Documents", "Deep Routing for Long Documents"),
        (
            "Letter | Quantum supremacy with a programmable processor",
            "Quantum supremacy with a programmable processor",
        ),
        ("Review of Deep Routing Methods", "Review of Deep Routing Methods"),
        ("Letters from the Field of Ecology", "Letters from the Field of Ecology"),
        ("Paper Mills and Research Integrity", "Paper Mills and Research Integrity"),
    ],
)
def test_type_labels_are_stripped_only_when_they_are_labels(raw: str, expected: str) -> None:
    assert strip_type_label(raw) == expected


def test_repository_names() -> None:
    for name in ("HAL", "bioRxiv", "medRxiv", "Research Square", "SSRN", "arXiv", "Aaltodoc Repository"):
        assert is_repository_name(name), name
    assert not is_repository_name("Sparse Attention Routing for Long Documents")


# --- abstracts ------------------------------------------------------------------------------------


def test_leading_licence_and_copyright_are_dropped() -> None:
    text = (
        "© 2021 The Authors. Published by Elsevier B.V. This is an open access article distributed under "
        "the terms of the Creative Commons Attribution License (http://creativecommons.org/licenses/by/4.0/), "
        "which permits unrestricted use, provided the original work is properly cited. " + SAMPLE_ABSTRACT
    )
    assert clean_abstract(text) == SAMPLE_ABSTRACT


def test_correspondence_address_and_trailing_copyright_are_dropped() -> None:
    text = (
        "*Correspondence: Maria Keller, Department of Informatics, University of Somewhere, Main Street 1. "
        "E-mail: keller@example.org " + SAMPLE_ABSTRACT + " © 2020 Elsevier Ltd. All rights reserved."
    )
    assert clean_abstract(text) == SAMPLE_ABSTRACT


def test_abstract_is_cut_at_an_introduction_heading_inside_it() -> None:
    text = SAMPLE_ABSTRACT + " 1 Introduction Long documents such as scientific articles are long."
    assert clean_abstract(text) == SAMPLE_ABSTRACT


# --- layout: multi-line titles, labels, cover sheets -------------------------------------------------


def test_two_line_title_is_merged_even_with_a_venue_word_in_it() -> None:
    title, abstract, authors = analysed(build_pdf(article(TWO_LINE_TITLE)))
    assert title == " ".join(TWO_LINE_TITLE)
    assert abstract.startswith("Transformers scale quadratically")
    assert authors == ["Maria Keller", "Tomas Lindqvist"]


def test_type_label_line_above_the_title_is_not_part_of_it() -> None:
    title, _, _ = analysed(build_pdf(article(TWO_LINE_TITLE, label="Research Article")))
    assert title == " ".join(TWO_LINE_TITLE)


def test_licence_block_before_the_abstract_is_dropped() -> None:
    licence = (
        "This is an open access article distributed under the terms of the Creative Commons Attribution "
        "License, which permits unrestricted use, provided the original work is properly cited. "
    )
    _, abstract, _ = analysed(build_pdf(article(TWO_LINE_TITLE, abstract=licence + SAMPLE_ABSTRACT)))
    assert abstract == SAMPLE_ABSTRACT


@pytest.mark.parametrize("repository", ["HAL", "bioRxiv", "Research Square"])
def test_cover_sheet_title_is_taken_from_the_article_page(repository: str) -> None:
    cover = cover_page(
        repository,
        [
            "A preprint cover title that differs",
            f"{repository} Id: 01234567",
            "Submitted on 3 Mar 2021",
            "To cite this version: Keller and Lindqvist.",
        ],
    )
    data = build_pdf([cover, *article(TWO_LINE_TITLE)])
    title, abstract, authors = analysed(data)
    assert title == " ".join(TWO_LINE_TITLE)
    assert abstract.startswith("Transformers scale quadratically")
    assert "Maria Keller" in authors


def test_an_ordinary_first_page_is_not_a_cover() -> None:
    page = [
        TextRun(72, 730, 17, "A Short Note on Routing"),
        TextRun(72, 700, 11, "Downloaded from somewhere"),
    ]
    body = [
        TextRun(72, 700 - 14 * i, 10, "We show that routing improves accuracy by 3% on long inputs.")
        for i in range(20)
    ]
    parsed = parse_pdf(build_pdf([page + body, body]))
    paper = from_parsed(parsed, source_url="file:x", canonical_id="file:x")
    assert paper.title == "A Short Note on Routing"
