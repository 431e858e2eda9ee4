"""Bounded parsing: every limit of `PdfParseLimits` refuses a PDF that exceeds it, in a worker process
that is killed at its limit; a normal PDF parses in the worker exactly as in process."""

from __future__ import annotations

import base64
import io
import zlib

import pytest
from pypdf import PdfReader, PdfWriter

from functions.extract.config import MIB, PdfParseLimits
from functions.extract.errors import PdfLimitExceeded
from functions.extract.pdf import PdfParseError, parse_pdf
from functions.extract.pdf_sandbox import parse_pdf_isolated
from functions.extract.stream_budget import check_stream_sizes
from tests.support.pdfgen import BOMB_LINE, bomb_pdf, build_pdf, deflated_repeats, sample_paper_pdf

UNLIMITED_BYTES = 1 << 40


def _encrypted(data: bytes) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password="", owner_password="owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_normal_pdf_parses_in_the_worker_exactly_as_in_process() -> None:
    data = sample_paper_pdf()
    assert parse_pdf_isolated(data).to_json() == parse_pdf(data).to_json()


def test_an_unreadable_file_is_still_unreadable_not_over_a_limit() -> None:
    with pytest.raises(PdfParseError, match="not a PDF"):
        parse_pdf_isolated(b"<html>not a pdf</html>")


def test_a_decompression_bomb_is_refused_at_the_per_stream_limit() -> None:
    with pytest.raises(PdfLimitExceeded, match="more than the 64 MiB allowed per stream"):
        parse_pdf_isolated(bomb_pdf())


def test_streams_within_the_stream_limit_are_refused_at_the_document_limit() -> None:
    data = bomb_pdf(3 * MIB, pages=3)
    limits = PdfParseLimits(max_stream_bytes=4 * MIB, max_document_bytes=8 * MIB)
    with pytest.raises(PdfLimitExceeded, match="more than the 8 MiB allowed per document"):
        parse_pdf_isolated(data, limits)
    assert check_stream_sizes(data, max_stream_bytes=4 * MIB, max_document_bytes=10 * MIB) >= 9 * MIB


def _stream_object(dictionary: bytes, body: bytes) -> bytes:
    return (
        b"%%PDF-1.4\n1 0 obj\n<< /Length %d " % len(body)
        + dictionary
        + b" >>\nstream\n"
        + body
        + b"\nendstream\nendobj\n"
    )


def test_a_bomb_behind_a_chain_of_filters_is_measured_through_the_whole_chain() -> None:
    inner = deflated_repeats(BOMB_LINE, 32 * MIB)
    twice = _stream_object(b"/Filter [/FlateDecode /FlateDecode]", zlib.compress(inner, 9))
    armoured = _stream_object(b"/Filter [/A85 /Fl]", base64.a85encode(inner, adobe=True)[2:])
    for data in (twice, armoured):
        with pytest.raises(PdfLimitExceeded, match="more than the 8 MiB allowed per stream"):
            check_stream_sizes(data, max_stream_bytes=8 * MIB, max_document_bytes=64 * MIB)


def test_images_are_not_counted_since_text_extraction_does_not_decode_them() -> None:
    picture = _stream_object(b"/Subtype /Image /Filter /FlateDecode", deflated_repeats(b"\xff", 16 * MIB))
    assert check_stream_sizes(picture, max_stream_bytes=8 * MIB, max_document_bytes=8 * MIB) == 0


def test_an_encrypted_bomb_is_measured_after_decryption() -> None:
    # Encrypted streams cannot be inflated from the raw file: pypdf decrypts them (empty password, as
    # PDFium opens such a file) before they are measured.
    data = _encrypted(bomb_pdf(16 * MIB))
    with pytest.raises(PdfLimitExceeded, match="more than the 8 MiB allowed per stream"):
        parse_pdf_isolated(data, PdfParseLimits(max_stream_bytes=8 * MIB))


def test_pypdf_is_held_to_the_per_stream_limit_by_its_own_configuration() -> None:
    # Graphics only: PDFium finds no text, so pypdf reads the page as well, and must stop at the limit.
    drawing = build_pdf([[]], deflated_streams={0: deflated_repeats(b"q 1 0 0 1 0 0 cm Q\n", 16 * MIB)})
    with pytest.raises(PdfLimitExceeded, match="pypdf's decoding limit"):
        parse_pdf(drawing, max_stream_bytes=8 * MIB)


def test_what_escapes_the_byte_limits_is_stopped_by_the_workers_memory_limit() -> None:
    limits = PdfParseLimits(
        max_stream_bytes=UNLIMITED_BYTES, max_document_bytes=UNLIMITED_BYTES, memory_bytes=256 * MIB
    )
    with pytest.raises(PdfLimitExceeded, match="256 MiB"):
        parse_pdf_isolated(bomb_pdf(), limits)


def test_a_page_over_its_time_is_refused_and_its_worker_killed() -> None:
    with pytest.raises(PdfLimitExceeded, match=r"page 1 takes longer than the 0\.001 s allowed per page"):
        parse_pdf_isolated(sample_paper_pdf(), PdfParseLimits(page_seconds=0.001))


def test_a_parse_over_its_time_is_refused() -> None:
    with pytest.raises(PdfLimitExceeded, match=r"longer than the 0\.001 s allowed"):
        parse_pdf_isolated(sample_paper_pdf(), PdfParseLimits(parse_seconds=0.001))
