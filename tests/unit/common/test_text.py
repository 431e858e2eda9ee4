from __future__ import annotations

import pytest

from functions.common.text import QUERY_STOPWORDS, STOPWORDS, sentence_spans, stem, stems, terms


def test_terms_and_stems() -> None:
    assert terms("What are recent advances in Transformer architectures?") == [
        "advances",
        "transformer",
        "architectures",
    ]
    assert stem("transformers") == stem("transformer")
    assert stem("architectures") == stem("architecture")
    assert stems("Graph networks, 2024") == ["graph", "network", "2024"]


def test_term_options_say_what_each_caller_keeps() -> None:
    text = "Our 3 models and the 2024 baselines beat it by 12 points"
    assert terms(text, numbers=False) == ["our", "models", "baselines", "beat", "points"]
    assert terms(text, min_length=4, numbers=False) == ["models", "baselines", "beat", "points"]
    assert terms("16S rRNA genes of 3D cells", letter_first=True) == ["rrna", "genes", "cells"]
    assert terms(text, stopwords=QUERY_STOPWORDS | {"our"}) == [
        "models",
        "2024",
        "baselines",
        "beat",
        "12",
        "points",
    ]
    assert "between" in STOPWORDS and "between" not in QUERY_STOPWORDS


def _sentences(text: str, start: int = 0, end: int | None = None) -> list[str]:
    return [text[first:stop] for first, stop in sentence_spans(text, start, end)]


def test_sentence_splitting_keeps_abbreviations_and_offsets() -> None:
    text = "Results follow Smith et al. in Fig. 2 for the data. The gain was 3.5 points. Next one"
    assert _sentences(text) == [
        "Results follow Smith et al. in Fig. 2 for the data.",
        "The gain was 3.5 points.",
        "Next one",
    ]
    assert _sentences(text, 52, 76) == ["The gain was 3.5 points."]


@pytest.mark.parametrize(
    "first",
    [
        "Accuracy rose with more data (Fig. 2) and fell again.",
        "Accuracy rose with more data (Fig. 2A; Eq. 3) and fell again.",
        "As Smith et al. (2020) showed, the loss falls quickly.",
        "The loss is given by Eq. 4 in the appendix.",
        "The effect holds (see e.g. [12]) for vitamin A. Deficiency aside.",
    ],
)
def test_no_sentence_ends_at_an_abbreviation_inside_or_outside_brackets(first: str) -> None:
    text = f"{first} The model was good enough for us."
    assert _sentences(text) == [first, "The model was good enough for us."]


def test_a_sentence_ends_after_its_closing_bracket_or_quote() -> None:
    text = 'The gain was large (p < 0.01.) Then it was "small." Finally none.'
    assert _sentences(text) == ["The gain was large (p < 0.01.)", 'Then it was "small."', "Finally none."]
