"""PDF text, page by page: pypdfium2 first (fast, tolerant), pypdf as the fallback.

A bad page never sinks the document: it is recorded as empty with a flag. Pages are normalised
(NFKC, soft-hyphen and line-end de-hyphenation, one `\\n` per line) and that normalised text is what
evidence offsets point into. The first page also yields lines with their font height, which is how
the title is found.
"""

from __future__ import annotations

import io
import itertools
import logging
import re
import statistics
import threading
import time
import unicodedata
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from functions.common.untrusted import clean_untrusted
from functions.extract.errors import PdfLimitExceeded

if TYPE_CHECKING:
    import pypdfium2 as pdfium  # type: ignore[import-untyped]

# pypdfium2 (its native library through ctypes) is imported by the first parse, not with this module: the
# handlers that import it for its types need not load it (bench/cold_start.py). The parse worker
# (`functions.extract.pdf_worker`) imports this module at every start, so it stays light (no pydantic).

DEFAULT_MAX_PAGES = 300
DEFAULT_TIME_BUDGET_SECONDS = 12.0

_GLYPH_NAMES = re.compile(r"/g\d{2,4}\b|/uni[0-9A-F]{4}\b|\(cid:\d+\)")
_SOFT_HYPHEN_BREAK = re.compile(r"[\ufffe\u00ad\x02]\s*\n?")
_HARD_HYPHEN_BREAK = re.compile(r"(?<=[a-z])-\n(?=[a-z])")
_SPACES = re.compile(r"[ \t\u00a0]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\ufeff\ufff0-\uffff]")

# PDFium is not thread-safe: two documents worked on from two threads at once can crash the process
# (seen as a segfault in FPDF_LoadPage while the extract step parsed on its thread pool). Every PDFium
# session, from open to close, holds this lock; pypdf needs none. The service parses each PDF in a worker
# process of its own (`pdf_sandbox`), so this lock never makes one request wait for another's parse.
_PDFIUM_LOCK = threading.Lock()


class PdfParseError(Exception):
    """The document cannot be read at all; `reason` is user-facing."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(slots=True)
class SizedLine:
    text: str
    height: float  # loose glyph box height in points (proportional to the font size)
    top: float  # distance from the top of the page in points
    # The line cut at wide horizontal gaps (> 1.5 glyph heights), when it has any: author blocks laid
    # out in columns ("Ana Ruiz      Li Wei") that pdfium reads as one line.
    cells: tuple[str, ...] = ()


@dataclass(slots=True)
class PageText:
    number: int  # 1-based
    text: str
    flags: list[str] = field(default_factory=list)  # "empty", "garbled", "error"


@dataclass(slots=True)
class ParsedPdf:
    pages: list[PageText]
    page_count: int  # pages in the file, including any beyond the cap
    metadata: dict[str, str]
    first_page_lines: list[SizedLine]
    parser: str  # "pypdfium2" or "pypdf"
    truncated: bool = False
    # The second page's lines: where the title is when the first page is a repository cover sheet.
    second_page_lines: list[SizedLine] = field(default_factory=list)

    @property
    def text_pages(self) -> list[PageText]:
        return [page for page in self.pages if page.text.strip()]

    def to_json(self) -> dict[str, Any]:
        return {
            "pages": [{"number": p.number, "text": p.text, "flags": p.flags} for p in self.pages],
            "page_count": self.page_count,
            "metadata": self.metadata,
            "first_page_lines": [_line_json(ln) for ln in self.first_page_lines],
            "parser": self.parser,
            "truncated": self.truncated,
            "second_page_lines": [_line_json(ln) for ln in self.second_page_lines],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ParsedPdf:
        return cls(
            pages=[PageText(p["number"], p["text"], list(p["flags"])) for p in data["pages"]],
            page_count=int(data["page_count"]),
            metadata=dict(data["metadata"]),
            first_page_lines=[_line_from_json(item) for item in data["first_page_lines"]],
            parser=str(data["parser"]),
            truncated=bool(data.get("truncated", False)),
            second_page_lines=[_line_from_json(item) for item in data.get("second_page_lines") or []],
        )


def _line_json(line: SizedLine) -> list[Any]:
    row: list[Any] = [line.text, line.height, line.top]
    return [*row, list(line.cells)] if line.cells else row


def _line_from_json(item: list[Any]) -> SizedLine:
    """[text, height, top] or, with cells, [text, height, top, [cell, ...]] (older files: no cells)."""
    cells = tuple(str(cell) for cell in item[3]) if len(item) > 3 else ()
    return SizedLine(str(item[0]), float(item[1]), float(item[2]), cells)


def normalise_text(raw: str, *, join_hyphens: bool = False) -> str:
    """NFKC, soft hyphens removed; `join_hyphens` also joins `-\\n` between lower-case letters (pypdf
    keeps printed hyphens, pdfium marks line-end hyphens as soft ones itself)."""
    text = raw.replace("\r\n", "\n").replace("\r", "\n")
    text = _SOFT_HYPHEN_BREAK.sub("", text)
    text = unicodedata.normalize("NFKC", text)
    if join_hyphens:
        text = _HARD_HYPHEN_BREAK.sub("", text)
    text = _CONTROL.sub("", clean_untrusted(text))  # untrusted: markup and escape sequences too
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def quality_flags(text: str) -> list[str]:
    if not text.strip():
        return ["empty"]
    glyph_hits = len(_GLYPH_NAMES.findall(text))
    letters = sum(map(str.isalpha, text))
    visible = (len(text) - sum(map(str.isspace, text))) or 1
    if glyph_hits >= 5 or letters / visible < 0.25:
        return ["garbled"]
    return []


def is_pdf(data: bytes) -> bool:
    return b"%PDF-" in data[:1024]


class PdfLimits(TypedDict, total=False):
    """What bounds a parse (`read_pdf`'s keywords; unset: its defaults)."""

    max_pages: int
    time_budget_seconds: float
    max_stream_bytes: int | None
    on_page: Callable[[int], None] | None


def parse_pdf(data: bytes, **limits: Unpack[PdfLimits]) -> ParsedPdf:
    """Extract normalised text per page; raises PdfParseError only when no parser can open the file.

    In-process and unbounded but for pypdf's own limits (`max_stream_bytes`, else pypdf's defaults): a
    PDF from outside is parsed through `functions.extract.pdf_sandbox`, which bounds everything.
    `on_page(number)` is called as each page is done."""
    from functions.extract.identifiers import embedded_hints

    parsed = read_pdf(data, **limits)
    parsed.metadata.update(embedded_hints(data))
    return parsed


def read_pdf(
    data: bytes,
    *,
    max_pages: int = DEFAULT_MAX_PAGES,
    time_budget_seconds: float = DEFAULT_TIME_BUDGET_SECONDS,
    max_stream_bytes: int | None = None,
    on_page: Callable[[int], None] | None = None,
) -> ParsedPdf:
    """`parse_pdf` without the hints read from the raw file (what the parse worker does)."""
    if not is_pdf(data):
        raise PdfParseError("not a PDF file (no %PDF header)")
    report = on_page or _ignore_page
    try:
        parsed = _parse_with_pdfium(data, max_pages, time_budget_seconds, report)
    except PdfParseError as exc:
        if "password" in exc.reason:
            raise
        parsed = _parse_with_pypdf(data, max_pages, time_budget_seconds, exc.reason, max_stream_bytes, report)
    if not parsed.text_pages and parsed.parser != "pypdf":
        # pdfium found no text at all; pypdf occasionally reads text layers pdfium does not.
        try:
            fallback = _parse_with_pypdf(data, max_pages, time_budget_seconds, "", max_stream_bytes, report)
        except PdfParseError:
            fallback = parsed
        parsed = fallback if fallback.text_pages else parsed
    return parsed


def _ignore_page(number: int) -> None:
    return None


def _parse_with_pdfium(
    data: bytes, max_pages: int, budget: float, on_page: Callable[[int], None]
) -> ParsedPdf:
    with _PDFIUM_LOCK:
        return _parse_with_pdfium_locked(data, max_pages, budget, on_page)


def _parse_with_pdfium_locked(
    data: bytes, max_pages: int, budget: float, on_page: Callable[[int], None]
) -> ParsedPdf:
    import pypdfium2 as pdfium

    started = time.perf_counter()
    try:
        document = pdfium.PdfDocument(data, password="")
    except pdfium.PdfiumError as exc:
        message = str(exc)
        if "password" in message.lower():
            raise PdfParseError("encrypted PDF: a password is required to open it") from exc
        raise PdfParseError(f"PDF could not be opened: {message}") from exc
    try:
        total = len(document)
        metadata = {k: str(v) for k, v in document.get_metadata_dict(skip_empty=True).items()}
        sized: tuple[list[SizedLine], list[SizedLine]] = ([], [])

        def read_page(index: int) -> str:
            with closing(document[index]) as page, closing(page.get_textpage()) as textpage:
                raw: str = textpage.get_text_range()
                if index < len(sized):
                    sized[index].extend(_sized_lines(textpage, page.get_height()))
                return raw

        pages, truncated = _read_pages(total, read_page, max_pages, budget, started, on_page)
        return ParsedPdf(pages, total, metadata, sized[0], "pypdfium2", truncated, sized[1])
    finally:
        document.close()


def _sized_lines(textpage: pdfium.PdfTextPage, page_height: float) -> list[SizedLine]:
    """Lines of the first page with their median glyph height, read char by char so that text and
    geometry stay aligned. A horizontal gap wider than 1.5 glyph heights starts a new cell."""
    import ctypes

    import pypdfium2.raw as pdfium_c  # type: ignore[import-untyped]

    count = textpage.count_chars()
    lines: list[SizedLine] = []
    rect = pdfium_c.FS_RECTF()
    chars: list[str] = []
    heights: list[float] = []
    cuts: list[int] = []  # indexes into chars where a wide gap starts a new cell
    top = 0.0
    right: float | None = None

    def flush() -> None:
        text = normalise_text("".join(chars))
        if text and heights:
            bounds = [0, *cuts, len(chars)]
            cells = tuple(
                cell for a, b in itertools.pairwise(bounds) if (cell := normalise_text("".join(chars[a:b])))
            )
            lines.append(
                SizedLine(
                    text,
                    round(statistics.median(heights), 2),
                    round(page_height - top, 1),
                    cells if len(cells) > 1 else (),
                )
            )
        chars.clear()
        heights.clear()
        cuts.clear()

    for index in range(count):
        char = chr(pdfium_c.FPDFText_GetUnicode(textpage.raw, index) or 32)
        if char in "\r\n":
            if char == "\n":
                flush()
                top = 0.0
                right = None
            continue
        if not char.isspace() and pdfium_c.FPDFText_GetLooseCharBox(textpage.raw, index, ctypes.byref(rect)):
            height = abs(rect.top - rect.bottom)
            if right is not None and chars and rect.left - right > 1.5 * height:
                cuts.append(len(chars))
            right = rect.right
            heights.append(height)
            top = max(top, rect.top)
        chars.append(char)
    flush()
    return lines


def _parse_with_pypdf(
    data: bytes,
    max_pages: int,
    budget: float,
    earlier_reason: str,
    max_stream_bytes: int | None,
    on_page: Callable[[int], None],
) -> ParsedPdf:
    from pypdf import apply_configuration

    from functions.extract.stream_budget import pypdf_limits

    with apply_configuration(pypdf_limits(max_stream_bytes)):
        return _parse_with_pypdf_configured(data, max_pages, budget, earlier_reason, on_page)


def _parse_with_pypdf_configured(
    data: bytes, max_pages: int, budget: float, earlier_reason: str, on_page: Callable[[int], None]
) -> ParsedPdf:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, LimitReachedError, PyPdfError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # per-font warnings are noise here

    started = time.perf_counter()
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise PdfParseError("encrypted PDF: a password is required to open it")
        total = len(reader.pages)
    except LimitReachedError as exc:
        raise PdfLimitExceeded(f"a stream is over pypdf's decoding limit ({exc})") from exc
    except (FileNotDecryptedError, DependencyError) as exc:
        raise PdfParseError(f"encrypted PDF could not be opened: {exc}") from exc
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, RecursionError) as exc:
        reason = earlier_reason or f"corrupted PDF: {exc}"
        raise PdfParseError(reason) from exc
    metadata: dict[str, str] = {}
    try:
        info: dict[str, Any] = dict(reader.metadata or {})
        metadata = {str(k).lstrip("/"): str(v) for k, v in info.items() if v}
    except Exception:  # broken info dictionaries are common and irrelevant
        metadata = {}

    def read_page(index: int) -> str:
        try:
            return reader.pages[index].extract_text() or ""
        except LimitReachedError as exc:
            raise PdfLimitExceeded(f"page {index + 1} is over pypdf's decoding limit ({exc})") from exc

    pages, truncated = _read_pages(total, read_page, max_pages, budget, started, on_page, join_hyphens=True)
    return ParsedPdf(pages, total, metadata, [], "pypdf", truncated)


def _read_pages(
    total: int,
    read_page: Callable[[int], str],
    max_pages: int,
    budget: float,
    started: float,
    on_page: Callable[[int], None],
    *,
    join_hyphens: bool = False,
) -> tuple[list[PageText], bool]:
    """Normalised, flagged pages until the page cap or the time budget; (pages, truncated)."""
    pages: list[PageText] = []
    for index in range(total):
        if index >= max_pages or time.perf_counter() - started > budget:
            return pages, True
        try:
            raw = read_page(index)
        except PdfLimitExceeded:
            raise
        except Exception:  # one damaged page must not sink the document
            pages.append(PageText(index + 1, "", ["error"]))
            on_page(index + 1)
            continue
        text = normalise_text(raw, join_hyphens=join_hyphens)
        pages.append(PageText(index + 1, text, quality_flags(text)))
        on_page(index + 1)
    return pages, False
