"""Author names from the layout of generated front pages (no corpus files): superscript markers and
e-mail addresses, affiliation and address lines, "and"/comma separators, ALL-CAPS names, author
blocks in columns, the choice between the embedded /Author entry and the layout."""

from __future__ import annotations

from functions.extract.authors import choose, from_metadata, names_in
from functions.extract.extraction import from_parsed
from functions.extract.pdf import ParsedPdf, SizedLine, parse_pdf
from tests.support.pdfgen import (
    SAMPLE_TITLE,
    TextRun,
    author_block,
    build_pdf,
    cover_page,
    paper_with_authors,
    sample_paper_pages,
)


def authors_of(data: bytes) -> list[str]:
    parsed = parse_pdf(data)
    paper = from_parsed(parsed, source_url="file:test", canonical_id="file:test")
    assert paper.title == SAMPLE_TITLE
    return paper.authors


def test_superscript_markers_and_emails_are_removed() -> None:
    runs = [
        TextRun(72, 705, 11, "Maria Keller1,*, Tomas Lindqvist2\u2020 and Ana de la Cruz1,2"),
        TextRun(72, 692, 9, "1University of Oslo, 0316 Oslo, Norway"),
        TextRun(72, 680, 9, "2Department of Physics, ETH Zurich, 8093 Zurich, Switzerland"),
        TextRun(72, 668, 9, "{keller,cruz}@uio.no, lindqvist@phys.ethz.ch"),
    ]
    assert authors_of(paper_with_authors(runs)) == ["Maria Keller", "Tomas Lindqvist", "Ana de la Cruz"]


def test_raised_superscripts_in_a_smaller_size() -> None:
    runs = [
        TextRun(72, 705, 11, "Maria Keller"),
        TextRun(136, 709, 6, "a,b"),
        TextRun(150, 705, 11, "and Tomas Lindqvist"),
        TextRun(254, 709, 6, "*"),
        TextRun(72, 690, 9, "aInstitute of Marine Research, Bergen, Norway"),
    ]
    assert authors_of(paper_with_authors(runs)) == ["Maria Keller", "Tomas Lindqvist"]


def test_affiliation_and_address_lines_are_not_names() -> None:
    # Affiliations in the same type size as the names: only the name shape tells them apart.
    names = author_block(
        [["Patrick Simianer and Stefan Riezler", "Department of Computational Linguistics"]], small=11
    )
    runs = [
        *names,
        TextRun(72, 679, 11, "Heidelberg University"),
        TextRun(72, 666, 11, "Language Technologies Group"),
        TextRun(72, 653, 11, "Pittsburgh, PA 15213, USA"),
    ]
    assert authors_of(paper_with_authors(runs)) == ["Patrick Simianer", "Stefan Riezler"]


def test_names_separated_by_and_commas_semicolons_all_caps_and_suffixes() -> None:
    runs = [
        TextRun(72, 705, 11, "Ana de la Cruz, Wei ZHANG; John B. Smith Jr. and Ludwig van Beethoven"),
        TextRun(72, 690, 11, "KATHARINE M. MULLEN, AND IVO H. M. VAN STOKKUM"),
    ]
    assert authors_of(paper_with_authors(runs)) == [
        "Ana de la Cruz",
        "Wei Zhang",
        "John B. Smith Jr.",
        "Ludwig van Beethoven",
        "Katharine M. Mullen",
        "Ivo H. M. van Stokkum",
    ]


def test_multi_column_author_block() -> None:
    runs = author_block(
        [
            ["Maria Keller", "University of Oslo", "Oslo, Norway", "keller@uio.no"],
            ["Tomas Lindqvist", "ETH Zurich", "Zurich, Switzerland", "tomas@ethz.ch"],
            ["Ana de la Cruz", "Universidad de Chile", "Santiago, Chile", "ana@uchile.cl"],
        ]
    )
    data = paper_with_authors(runs)
    line = next(ln for ln in parse_pdf(data).first_page_lines if ln.text.startswith("Maria Keller"))
    assert line.cells == ("Maria Keller", "Tomas Lindqvist", "Ana de la Cruz")
    assert authors_of(data) == ["Maria Keller", "Tomas Lindqvist", "Ana de la Cruz"]


def test_author_block_behind_a_cover_sheet() -> None:
    cover = cover_page("HAL", ["HAL Id: hal-01234567", "Submitted on 3 Mar 2021", "Keller, Lindqvist"])
    block = author_block([["Maria Keller*", "University of Oslo"], ["Tomas Lindqvist", "ETH Zurich"]])
    article = sample_paper_pages(authors="", author_block=block)
    assert authors_of(build_pdf([cover, *article])) == ["Maria Keller", "Tomas Lindqvist"]


def test_the_layout_replaces_an_embedded_author_entry_with_only_one_name() -> None:
    runs = [TextRun(72, 705, 11, "Maria Keller, Tomas Lindqvist and Ana de la Cruz")]
    data = paper_with_authors(runs, metadata_author="M. Keller")
    assert authors_of(data) == ["Maria Keller", "Tomas Lindqvist", "Ana de la Cruz"]
    complete = paper_with_authors(runs, metadata_author="Keller, Maria; Lindqvist, Tomas; de la Cruz, Ana")
    assert authors_of(complete) == ["Maria Keller", "Tomas Lindqvist", "Ana de la Cruz"]


def test_names_in_lines() -> None:
    assert names_in("Anyi Hu,1,2 Nianzhi Jiao,1") == ["Anyi Hu", "Nianzhi Jiao"]
    assert names_in("Arman Cohan\u2020\u2217 Sergey Feldman\u2020\u2217") == ["Arman Cohan", "Sergey Feldman"]
    assert names_in("John Smitha,b, Mary Jones c") == ["John Smith", "Mary Jones"]
    assert names_in("MARIA VAN DER BERG") == ["Maria van der Berg"]
    assert names_in("Razvan C. Bunescu Raymond J. Mooney") == ["Razvan C. Bunescu", "Raymond J. Mooney"]
    assert names_in("\u2020Allen Institute for Artificial Intelligence") == []
    assert names_in("Received 9 February 2011/Accepted 15 July 2011") == []
    assert names_in("Oxford University, UK") == []
    assert names_in("Ana Ruiz1, University of Oslo, Norway") == ["Ana Ruiz"]
    assert names_in("Google Research, Mountain View") == []
    assert names_in("Open Access") == []


def test_embedded_author_entries_and_the_choice() -> None:
    assert from_metadata("Arman Cohan ; Sergey Feldman") == ["Arman Cohan", "Sergey Feldman"]
    assert from_metadata("Mullen, Katharine M.; van Stokkum, Ivo H. M.") == [
        "Katharine M. Mullen",
        "Ivo H. M. van Stokkum",
    ]
    assert from_metadata("Katharine M. Mullen, Ivo H. M. van Stokkum") == [
        "Katharine M. Mullen",
        "Ivo H. M. van Stokkum",
    ]
    assert from_metadata("Association for Computational Linguistics") == []
    assert choose(["A. Shokrollahi"], ["Amir Sheikhahmadi", "Arman Shokrollahi"]) == [
        "Amir Sheikhahmadi",
        "Arman Shokrollahi",
    ]
    assert choose(["Ana Ruiz", "Li Wei"], ["Ana Ruiz"]) == ["Ana Ruiz", "Li Wei"]
    assert choose(["Ana Ruiz"], ["Bo Chen", "Li Wei"]) == ["Ana Ruiz"]
    assert choose([], ["Bo Chen"]) == ["Bo Chen"]


def test_cells_survive_the_pages_file_and_old_files_still_load() -> None:
    line = SizedLine("Ana Ruiz Li Wei", 12.0, 80.0, ("Ana Ruiz", "Li Wei"))
    parsed = ParsedPdf([], 1, {}, [line, SizedLine("Abstract", 12.0, 100.0)], "pypdfium2")
    again = ParsedPdf.from_json(parsed.to_json())
    assert again.first_page_lines == parsed.first_page_lines
    old = parsed.to_json() | {"first_page_lines": [["Ana Ruiz Li Wei", 12.0, 80.0]]}
    assert ParsedPdf.from_json(old).first_page_lines[0].cells == ()
