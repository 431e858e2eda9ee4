"""Ingestion of real (generated) PDFs: contents, sections, numbered items, passages, pages."""

from __future__ import annotations

import pytest

from functions.rag.index import BuiltIndex, build_index, index_version
from functions.rag.model import Entity
from functions.rag.pdf_pages import extract_pages
from functions.rag.toc import looks_like_toc, parse_toc
from tests.unit.rag.tiny_book import TOC_PAGES, make_pdf, tiny_book


def _by_id(built: BuiltIndex) -> dict[str, Entity]:
    return {entity.id: entity for entity in built.entities}


def test_table_of_contents_is_parsed_with_levels_and_pages() -> None:
    pages = extract_pages(make_pdf(TOC_PAGES), "contents.pdf")
    assert looks_like_toc(pages)
    entries = {entry.number: entry for entry in parse_toc(pages)}
    assert entries["1"].title == "Belief States and Planning" and entries["1"].level == 1
    assert entries["1.2.1"].title == "Convergence analysis" and entries["1.2.1"].printed_page == 3
    assert entries["1.2.1"].level == 3
    assert entries["A.1"].title == "Random variables"
    assert "Contents" not in {entry.title for entry in entries.values()}


@pytest.mark.parametrize(
    ("ident", "kind", "number", "title", "section", "page"),
    [
        ("algo_1_1", "algorithm", "1.1", "Belief update for a POMDP", "1.1", 2),
        ("algo_2_1", "algorithm", "2.1", "(s,S) inventory policy", "2.2", 6),
        ("formula_1_1", "formula", "1.1", "Equation (1.1) in Belief states", "1.1", 1),
        ("formula_1_2", "formula", "1.2", "Equation (1.2) in Value iteration", "1.2", 2),
        (
            "table_1_1",
            "table",
            "1.1",
            "Value estimates of value iteration at the first iterations.",
            "1.2",
            2,
        ),
        ("table_2_1", "table", "2.1", "Demand statistics of the warehouse network.", "2.1", 5),
        ("figure_1_1", "figure", "1.1", "Where we are in this book.", "1", 1),
        (
            "figure_1_2",
            "figure",
            "1.2",
            "Convergence of value iteration on the two-state example.",
            "1.2.1",
            3,
        ),
        ("box_1_1", "box", "1.1", "Proof of the convergence of (1.2)", "1.2.1", 3),
        (
            "example_1_1",
            "example",
            "1.1",
            "Consider a two-state problem with gamma 0.9 and rewards 1 and 0.",
            "1.2.1",
            3,
        ),
        ("exercise_1_2", "exercise", "1.2", "Does value iteration always converge?", "1.3", 3),
        ("section_1_2_1", "section", "1.2.1", "Convergence analysis", "1.2.1", 3),
        ("section_2", "section", "2", "Inventory Control", "2", 5),
        ("appendix_A_1", "appendix", "A.1", "Random variables", "A.1", 9),
    ],
)
def test_numbered_items_have_number_title_section_and_printed_page(
    built_index: BuiltIndex, ident: str, kind: str, number: str, title: str, section: str, page: int
) -> None:
    entity = _by_id(built_index)[ident]
    assert (entity.type, entity.number, entity.title, entity.section, entity.page_number) == (
        kind,
        number,
        title,
        section,
        page,
    )


def test_item_content_holds_its_text(built_index: BuiltIndex) -> None:
    entities = _by_id(built_index)
    assert "Normalize the belief so that it sums to one." in entities["algo_1_1"].content
    # A formula keeps its surrounding lines, so its meaning travels with it.
    assert "the belief state is updated by" in entities["formula_1_1"].content
    assert "which is the Bayes rule" in entities["formula_1_1"].content
    # A table's cells come before its caption in the text.
    assert "1 1.0 0.5" in entities["table_1_1"].content
    assert "geometrically" in entities["box_1_1"].content
    assert "Yes, because the Bellman optimality operator" in entities["exercise_1_2"].content


def test_running_headers_and_footers_stay_out_of_the_text(built_index: BuiltIndex) -> None:
    for entity in built_index.entities:
        lines = entity.content.splitlines()
        assert "1.1. Belief states" not in lines
        assert "2" not in lines and "3" not in lines


def test_passages_stay_inside_one_section(built_index: BuiltIndex) -> None:
    chunks = [entity for entity in built_index.entities if entity.is_chunk]
    assert chunks
    assert {chunk.type for chunk in chunks} == {"section"}
    value_iteration = [chunk for chunk in chunks if chunk.section == "1.2"]
    assert value_iteration and all(chunk.id.startswith("chunk_1_2_") for chunk in value_iteration)
    assert all("Convergence analysis" not in chunk.content for chunk in value_iteration)


def test_each_type_and_number_is_unique(built_index: BuiltIndex) -> None:
    keys = [(entity.type, entity.number) for entity in built_index.entities if not entity.is_chunk]
    assert len(keys) == len(set(keys))
    ids = [entity.id for entity in built_index.entities]
    assert len(ids) == len(set(ids))


def test_version_depends_only_on_the_pdfs() -> None:
    first, second = tiny_book(), tiny_book()
    assert index_version(first) == index_version(list(reversed(second)))
    changed = [*first[:2], type(first[2])("ch02.pdf", first[2].data + b"\n")]
    assert index_version(changed) != index_version(first)


def test_a_pdf_that_is_neither_chapter_nor_contents_is_refused() -> None:
    stray = type(tiny_book()[0])("notes.pdf", make_pdf([["Some notes", "without structure"]]))
    with pytest.raises(ValueError, match=r"notes\.pdf: neither a chapter"):
        build_index([stray])


def test_book_id_comes_from_the_title_page(built_index: BuiltIndex) -> None:
    assert built_index.book_id == "decisions-under-uncertainty"
