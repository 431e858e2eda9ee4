"""PDF bytes -> page texts (pypdf), with the few normalisations every later step relies on."""

from __future__ import annotations

import io
import re

from functions.rag.model import PageText

# Ligatures that pypdf keeps from TeX fonts; searching "different" must find "diﬀerent".
_LIGATURES = str.maketrans({"ﬀ": "ff", "ﬁ": "fi", "ﬂ": "fl", "ﬃ": "ffi", "ﬄ": "ffl", "ﬅ": "st", "ﬆ": "st"})
_FOOTER_NUMBER = re.compile(r"^\s*(\d{1,4})\s*$")


def normalise_text(text: str) -> str:
    return text.translate(_LIGATURES).replace("\u00a0", " ")


def extract_pages(pdf_bytes: bytes, source: str) -> list[PageText]:
    from pypdf import PdfReader  # parsing only: serving imports this module for `footer_number`

    reader = PdfReader(io.BytesIO(pdf_bytes))
    pages: list[PageText] = []
    for index, page in enumerate(reader.pages, start=1):
        text = normalise_text(page.extract_text() or "")
        pages.append(PageText(source=source, page_index=index, text=text, printed_page=footer_number(text)))
    return pages


def footer_number(text: str) -> int | None:
    """The printed page number when the page's last line is a bare number (the book's footer)."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    match = _FOOTER_NUMBER.match(lines[-1])
    return int(match.group(1)) if match else None
