"""Structure and evidence from a generated two-column paper."""

from __future__ import annotations

import re

from functions.extract.analysis import analyse
from functions.extract.extraction import from_parsed
from functions.extract.pdf import PageText, parse_pdf
from functions.extract.references import format_reference, split_references
from tests.support.pdfgen import SAMPLE_ABSTRACT, SAMPLE_TITLE, sample_paper_pdf


def _analysis(focus: list[str] | None = None):  # type: ignore[no-untyped-def]
    parsed = parse_pdf(sample_paper_pdf())
    return parsed, analyse(
        parsed.pages, first_page_lines=parsed.first_page_lines, metadata=parsed.metadata, focus_areas=focus
    )


def test_title_authors_abstract_and_sections() -> None:
    _, result = _analysis()
    assert result.title == SAMPLE_TITLE
    assert result.authors == ["Maria Keller", "Tomas Lindqvist"]
    assert result.abstract == SAMPLE_ABSTRACT
    assert result.sections[:5] == ["1 Introduction", "2 Methods", "3 Results", "4 Discussion", "5 Conclusion"]


def test_references_are_rendered_in_the_contract_format() -> None:
    _, result = _analysis()
    assert result.citations == [
        "Vaswani et al., 2017. Attention is all you need. In Advances in Neural Information Processing Systems.",
        "Beltagy et al., 2020. Longformer: The long-document transformer. arXiv preprint.",
        "Zaheer et al., 2020. Big bird: Transformers for longer sequences. In Advances in Neural Information Processing Systems.",
    ]


def test_findings_are_real_result_sentences_with_page_located_evidence() -> None:
    parsed, result = _analysis(["results"])
    assert 3 <= len(result.key_findings) <= 7
    assert all(50 <= len(f) <= 200 for f in result.key_findings)
    assert any("38%" in f for f in result.key_findings)
    assert not any(f.startswith("We train") for f in result.key_findings)
    pages = {p.number: p.text for p in parsed.pages}
    findings = [q for q in result.evidence if q.kind == "finding"]
    assert [q.quote for q in findings] == result.key_findings
    for quote in result.evidence:
        located = pages[quote.page][quote.char_start : quote.char_end]
        assert located.replace("\n", " ") == quote.quote
        assert 0.0 <= quote.relevance_score <= 1.0
    sections = {q.section for q in findings}
    assert "Results" in sections


def test_methodology_comes_from_the_methods_section() -> None:
    _, result = _analysis()
    assert 200 <= len(result.methodology) <= 1000
    assert result.methodology.startswith("We train a twelve layer encoder")


def test_focus_areas_steer_findings() -> None:
    _, plain = _analysis()
    _, focused = _analysis(["memory inference"])
    assert any("Memory use at inference" in f for f in focused.key_findings)
    assert focused.key_findings[0].startswith("Memory use") or len(plain.key_findings) >= 3


def test_success_and_confidence_rules() -> None:
    parsed = parse_pdf(sample_paper_pdf())
    full = from_parsed(parsed, source_url="u", canonical_id="c")
    assert full.success and full.confidence_score >= 0.8
    only_header = [PageText(1, f"{SAMPLE_TITLE}\nAbstract\n{SAMPLE_ABSTRACT}\n1 Introduction\nShort.")]
    parsed.pages = only_header
    parsed.first_page_lines = []
    parsed.metadata = {"Title": SAMPLE_TITLE}
    low = from_parsed(parsed, source_url="u", canonical_id="c")
    assert low.success and low.confidence_score <= 0.5
    parsed.pages = [PageText(1, "Table of values\n1 2 3 4\n5 6 7 8")]
    parsed.metadata = {}
    none = from_parsed(parsed, source_url="u", canonical_id="c")
    assert not none.success and none.failure_reason


def test_reference_styles() -> None:
    numbered = split_references(
        [
            "[1] A. Vaswani, N. Shazeer, and N. Parmar, \u201cAttention is all you need,\u201d in",
            "Proc. NeurIPS, 2017, pp. 5998\u20136008.",
            "[2] J. Devlin and M. Chang, \u201cBERT: Pre-training of deep bidirectional transformers,\u201d NAACL, 2019.",
        ]
    )
    assert len(numbered) == 2
    assert (
        format_reference(numbered[0]) == "Vaswani et al., 2017. Attention is all you need. in Proc. NeurIPS."
    )
    assert format_reference(numbered[1]).startswith("Devlin and Chang, 2019. BERT: Pre-training")
    apa = split_references(
        [
            "Smith, J., & Doe, K. (2019). Measuring things carefully. Journal of Measurement, 12, 1-10.",
            "Brown, T. (2020). Language models are few-shot learners. NeurIPS.",
        ]
    )
    assert len(apa) == 2
    assert (
        format_reference(apa[0])
        == "Smith and Doe, 2019. Measuring things carefully. Journal of Measurement, 12."
    )
    assert re.match(
        r"^Brown, 2020\. Language models are few-shot learners\. NeurIPS\.$", format_reference(apa[1])
    )
