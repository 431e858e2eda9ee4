from __future__ import annotations

import pytest

from functions.search.text import (
    arxiv_id_from,
    format_author,
    normalise_title,
    snippet_from,
    strip_jats_abstract,
)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("John Smith", "Smith, J."),
        ("Alan M. Turing", "Turing, A. M."),
        ("Smith, John", "Smith, J."),
        ("Jean-Pierre Dupont", "Dupont, J.-P."),
        ("Ludwig van Beethoven", "van Beethoven, L."),
        ("Plato", "Plato"),
        ("  ", None),
    ],
)
def test_format_author(name: str, expected: str | None) -> None:
    assert format_author(name) == expected


def test_format_author_from_parts() -> None:
    assert format_author(family="Chen", given="Li Wei") == "Chen, L. W."
    assert format_author(family="Chen", given=None) == "Chen"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("http://arxiv.org/abs/2202.12139v1", "2202.12139"),
        ("https://arxiv.org/pdf/1707.08567", "1707.08567"),
        ("10.48550/arxiv.2401.12345", "2401.12345"),
        ("http://arxiv.org/abs/quant-ph/0201082v1", "quant-ph/0201082"),
        ("2301.00001", "2301.00001"),
        ("https://doi.org/10.1109/ICSTW55395.2022.00035", None),
        (None, None),
    ],
)
def test_arxiv_id_from(value: str | None, expected: str | None) -> None:
    assert arxiv_id_from(value) == expected


def test_jats_is_stripped() -> None:
    raw = (
        "<jats:title>Abstract</jats:title><jats:p>We show that <jats:italic>x</jats:italic> &amp; y.</jats:p>"
    )
    assert strip_jats_abstract(raw) == "We show that x & y."


def test_snippet_is_cut_at_a_boundary_within_limits() -> None:
    abstract = " ".join(f"Sentence number {i} says something about transformers." for i in range(40))
    text = snippet_from(abstract, fallback="Title.")
    assert 100 <= len(text) <= 500
    assert text.endswith(".")


def test_short_or_missing_abstract_is_completed_with_metadata() -> None:
    fallback = "A Title. Smith, J. (2020). Some Journal of Long Names and Many Words."
    assert snippet_from(None, fallback=fallback) == fallback
    assert snippet_from("Short.", fallback=fallback).startswith("Short. A Title.")


def test_normalise_title() -> None:
    assert normalise_title("Attention Is All You Need!") == "attention is all you need"
