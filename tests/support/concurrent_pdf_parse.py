"""Parse generated PDFs from eight threads at once and compare with a serial parse.

Run as a separate process by tests/unit/extract/test_pdf.py: PDFium is not thread-safe, and if the
parser stops serialising it this crashes the interpreter, which the test then sees as a failure
instead of losing the whole pytest run.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from functions.extract.pdf import PageText, parse_pdf
from tests.support.pdfgen import TextRun, build_pdf


def _pages(data: bytes) -> list[PageText]:
    return parse_pdf(data).pages


def main() -> None:
    documents = [
        build_pdf(
            [[TextRun(72, 700, 12, f"Document {d}, page {p}: attention routes tokens.")] for p in range(30)]
        )
        for d in range(8)
    ]
    serial = [_pages(data) for data in documents]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(20):
            assert list(pool.map(_pages, documents)) == serial
    print(f"parsed {len(documents) * 20} documents concurrently, all equal to the serial parse")


if __name__ == "__main__":
    main()
