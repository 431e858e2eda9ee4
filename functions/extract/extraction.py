"""Pure pipeline steps (no I/O): PDF bytes or parsed pages -> ExtractedPaper."""

from __future__ import annotations

from datetime import UTC, datetime

from functions.common.models import ExtractedPaper
from functions.extract.analysis import analyse
from functions.extract.errors import PdfLimitExceeded, UnprocessableDocument
from functions.extract.identifiers import DocumentIdentifiers, RequestedIdentifiers
from functions.extract.metadata import ResolvedMetadata
from functions.extract.pdf import ParsedPdf, PdfParseError
from functions.extract.pdf_sandbox import parse_pdf_isolated

NO_TEXT_LAYER = "no text layer: the PDF contains only images (a scan); OCR is not supported"
GARBLED = "text layer is garbled: glyphs are not mapped to characters"


def failed(source_url: str, canonical_id: str, reason: str, **extra: object) -> ExtractedPaper:
    return ExtractedPaper(
        source_url=source_url,
        canonical_id=canonical_id,
        success=False,
        failure_reason=reason,
        extracted_at=datetime.now(UTC),
        **extra,
    )


def parse_or_failure(
    data: bytes, source_url: str, canonical_id: str, *, field: str = "source_url"
) -> ParsedPdf | ExtractedPaper:
    """The parse (in a bounded worker), or the failed paper of an unreadable PDF. A PDF over the parsing
    limits (a decompression bomb, a page that never ends) is refused: UnprocessableDocument naming
    `field`, the request's own error, not a paper that failed."""
    try:
        return parse_pdf_isolated(data)
    except PdfParseError as exc:
        return failed(source_url, canonical_id, f"PDF parsing failed - {exc.reason}")
    except PdfLimitExceeded as exc:
        raise UnprocessableDocument(f"the PDF exceeds the parsing limits: {exc.reason}", field=field) from exc


# What a paper takes from the analysis as it is.
ANALYSED_FIELDS = ("title", "authors", "abstract", "key_findings", "methodology", "sections", "evidence")


def from_parsed(
    parsed: ParsedPdf,
    *,
    source_url: str,
    canonical_id: str,
    focus_areas: list[str] | None = None,
    pdf_sha256: str | None = None,
    extra_citations: list[str] | None = None,
) -> ExtractedPaper:
    pages_with_text = parsed.text_pages
    common = {"page_count": parsed.page_count, "pdf_sha256": pdf_sha256}
    if not pages_with_text:
        return failed(source_url, canonical_id, NO_TEXT_LAYER, **common)
    if all("garbled" in page.flags for page in pages_with_text):
        return failed(source_url, canonical_id, GARBLED, **common)
    analysis = analyse(
        parsed.pages,
        first_page_lines=parsed.first_page_lines,
        second_page_lines=parsed.second_page_lines,
        metadata=parsed.metadata,
        focus_areas=focus_areas,
    )
    citations = analysis.citations or list(extra_citations or [])
    success = bool(analysis.key_findings) and bool(analysis.title or analysis.abstract)
    reason = None
    if not success:
        reason = (
            "no findings: the text contains no statements of results"
            if analysis.title or analysis.abstract
            else "insufficient content: neither a title nor an abstract was found"
        )
    return ExtractedPaper(
        source_url=source_url,
        canonical_id=canonical_id,
        success=success,
        failure_reason=reason,
        **{name: getattr(analysis, name) for name in ANALYSED_FIELDS},
        citations=citations,
        page_count=parsed.page_count,
        confidence_score=analysis.confidence_score if success else 0.0,
        pdf_sha256=pdf_sha256,
        extracted_at=datetime.now(UTC),
    )


def with_metadata(
    paper: ExtractedPaper,
    found: DocumentIdentifiers,
    resolved: ResolvedMetadata | None,
    requested: RequestedIdentifiers,
) -> ExtractedPaper:
    """The paper with the registries' fields where they answered, the layout's elsewhere, and the
    source of every field; the requested source's own identifiers come first."""
    resolved = resolved or ResolvedMetadata()
    sources = dict(resolved.sources)
    if resolved.title:
        paper.title = resolved.title
    if resolved.authors:
        paper.authors = resolved.authors
    if resolved.abstract:
        paper.abstract = resolved.abstract
    paper.year = resolved.year or found.year
    paper.venue = resolved.venue
    for name, present in (
        ("title", paper.title),
        ("authors", paper.authors),
        ("abstract", paper.abstract),
        ("year", paper.year),
    ):
        if present and name not in sources:
            sources[name] = "layout"
    paper.metadata_sources = sources
    identifiers = {
        "doi": requested.doi or resolved.doi or found.doi,
        "arxiv_id": requested.arxiv_id or resolved.arxiv_id or found.arxiv_id,
    }
    paper.identifiers = {name: value for name, value in identifiers.items() if value}
    return paper
