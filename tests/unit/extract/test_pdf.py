"""PDF parsing on PDFs generated in the test: pages, normalisation, damaged pages, caps, failures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from functions.common.models import ExtractedPaper
from functions.extract.extraction import NO_TEXT_LAYER, from_parsed, parse_or_failure
from functions.extract.pdf import ParsedPdf, PdfParseError, normalise_text, parse_pdf, quality_flags
from tests.support.pdfgen import TextRun, build_pdf, sample_paper_pdf


def test_two_column_paper_is_read_page_by_page_in_column_order() -> None:
    parsed = parse_pdf(sample_paper_pdf())
    assert parsed.parser == "pypdfium2"
    assert parsed.page_count == len(parsed.pages) == 2
    first = parsed.pages[0].text
    # The left column (Methods) comes before the right column (Results) in the text.
    assert first.index("2 Methods") < first.index("3 Results")
    assert "References" in parsed.pages[1].text or "References" in first
    assert parsed.first_page_lines[0].text.startswith("Sparse Attention Routing")
    assert parsed.first_page_lines[0].height > parsed.first_page_lines[-1].height


def test_one_damaged_page_does_not_sink_the_document() -> None:
    pages = [
        [TextRun(72, 700, 12, "A readable first page about measured results.")],
        [],
        [TextRun(72, 700, 12, "Third page text.")],
    ]
    data = build_pdf(pages, raw_streams={1: b"BT /F1 12 Tf (unterminated"})
    parsed = parse_pdf(data)
    assert [p.number for p in parsed.pages] == [1, 2, 3]
    assert parsed.pages[1].flags in (["empty"], ["error"])
    assert "Third page text." in parsed.pages[2].text


def test_page_cap_truncates_long_documents() -> None:
    pages = [[TextRun(72, 700, 12, f"Page number {i} of a long book.")] for i in range(12)]
    parsed = parse_pdf(build_pdf(pages), max_pages=5)
    assert parsed.truncated and parsed.page_count == 12 and len(parsed.pages) == 5


def test_image_only_pdf_fails_with_no_text_layer() -> None:
    scan = build_pdf([[]], raw_streams={0: b"q 0 0 1 rg 72 72 400 600 re f Q"})
    parsed = parse_or_failure(scan, "http://x/scan.pdf", "url:scan")
    assert isinstance(parsed, ParsedPdf) and not parsed.text_pages
    paper = from_parsed(parsed, source_url="http://x/scan.pdf", canonical_id="url:scan")
    assert paper.success is False and paper.failure_reason == NO_TEXT_LAYER


def test_corrupted_and_non_pdf_bytes_fail_cleanly() -> None:
    with pytest.raises(PdfParseError, match="not a PDF"):
        parse_pdf(b"<html>not a pdf</html>")
    garbage = b"%PDF-1.4\n" + b"\x00garbage" * 50
    outcome = parse_or_failure(garbage, "http://x/broken.pdf", "url:broken")
    assert isinstance(outcome, ExtractedPaper)
    assert outcome.success is False
    assert outcome.failure_reason and outcome.failure_reason.startswith("PDF parsing failed")
    truncated = parse_or_failure(sample_paper_pdf()[:300], "http://x/cut.pdf", "url:cut")
    if isinstance(truncated, ParsedPdf):  # pdfium may open what is left; then it has no text
        assert not truncated.text_pages
    else:
        assert truncated.success is False


def test_normalisation_nfkc_soft_hyphens_and_hyphenation() -> None:
    assert normalise_text("e\ufb03cient ingre\ufffe\r\ndient") == "efficient ingredient"
    assert normalise_text("repre-\nsentations", join_hyphens=True) == "representations"
    assert normalise_text("state-of-\nthe-art") == "state-of-\nthe-art"
    assert quality_flags("/g123 /g124 /g125 /g126 /g127 text") == ["garbled"]
    assert quality_flags("   ") == ["empty"]
    assert quality_flags("Plain readable sentence.") == []


def _encrypted(user_password: str) -> bytes:
    import io

    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(sample_paper_pdf())))
    writer.encrypt(user_password=user_password, owner_password="owner-secret", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_encrypted_pdf_opens_with_the_empty_password_when_allowed() -> None:
    parsed = parse_pdf(_encrypted(""))
    assert parsed.text_pages and "Sparse Attention Routing" in parsed.pages[0].text


def test_encrypted_pdf_needing_a_password_fails_with_a_clear_reason() -> None:
    outcome = parse_or_failure(_encrypted("reader-secret"), "http://x/locked.pdf", "url:locked")
    assert isinstance(outcome, ExtractedPaper) and not outcome.success
    assert outcome.failure_reason == "PDF parsing failed - encrypted PDF: a password is required to open it"


def test_parsing_from_many_threads_at_once_neither_crashes_nor_mixes_pages() -> None:
    # In a child process: without the PDFium lock this is a segfault, which would end pytest itself.
    child = subprocess.run(
        [sys.executable, "-m", "tests.support.concurrent_pdf_parse"],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert child.returncode == 0, (child.returncode, child.stderr[-2000:])
    assert "all equal to the serial parse" in child.stdout
