"""A team's uploaded PDF: parsed strictly (it must have a text layer) and described by its record."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from functions.common.documents import DocumentRecord, DocumentRepository
from functions.common.models import ExtractedPaper
from functions.common.tenancy import valid_team_id
from functions.extract.documents import SEARCH_TEXT_LIMIT, utc_now
from functions.extract.errors import SourceUnavailable, UnprocessableDocument
from functions.extract.extraction import parse_or_failure
from functions.extract.parse_cache import StorageKeys
from functions.extract.pdf import ParsedPdf


def owned_record(
    documents: DocumentRepository | None, team_id: str | None, document_id: str
) -> DocumentRecord:
    """The team's document. No team, another team's document and an unknown one all raise the same
    error, so that a caller cannot tell whether a document exists elsewhere."""
    missing = SourceUnavailable(f"no uploaded document {document_id}")
    if documents is None or team_id is None or not valid_team_id(team_id):
        raise missing
    record = documents.get(team_id, document_id)
    if record is None or record.team_id != team_id:
        raise missing
    return record


def parse_upload(data: bytes, source_url: str, canonical_id: str) -> ParsedPdf:
    """Raises UnprocessableDocument (against the form's `file` field) for a PDF that cannot be used."""
    outcome = parse_or_failure(data, source_url, canonical_id, field="file")
    if isinstance(outcome, ExtractedPaper):
        raise UnprocessableDocument(outcome.failure_reason or "the PDF cannot be parsed", field="file")
    if not outcome.text_pages:
        raise UnprocessableDocument(
            "the PDF has no text layer (an image-only scan); OCR is not supported", field="file"
        )
    return outcome


def upload_record(
    *,
    team_id: str,
    document_id: str,
    filename: str,
    data: bytes,
    sha256: str,
    parsed: ParsedPdf,
    paper: ExtractedPaper,
    metadata: dict[str, Any],
    pdf_location: str,
    keys: StorageKeys,
) -> DocumentRecord:
    """The record GET /v1/documents/{id} shows the team: the uploader's metadata first, else the paper's."""
    title = str(metadata.get("title") or paper.title or filename)
    return DocumentRecord(
        team_id=team_id,
        document_id=document_id,
        filename=filename or "document.pdf",
        uploaded_at=utc_now(),
        size_bytes=len(data),
        status="indexed",
        pages=parsed.page_count,
        sha256=sha256,
        pdf_key=pdf_location,
        parsed_key=keys.parsed,
        title=title,
        authors=[str(a) for a in metadata.get("authors", [])] or paper.authors,
        abstract=paper.abstract,
        year=_document_year(metadata.get("year"), parsed.metadata),
        metadata=metadata,
        search_text=_search_text(title, paper)[:SEARCH_TEXT_LIMIT],
    )


def _document_year(given: object, pdf_metadata: dict[str, str]) -> int:
    """The uploader's year, else the PDF's creation year, else this year (search results need one)."""
    if isinstance(given, int | str) and str(given).isdigit() and 1000 < int(given) < 3000:
        return int(given)
    created = re.match(r"^D:(\d{4})", pdf_metadata.get("CreationDate", ""))
    if created:
        return int(created.group(1))
    return datetime.now(UTC).year


def _search_text(title: str, paper: ExtractedPaper) -> str:
    parts = [title, paper.abstract, " ".join(paper.sections), " ".join(paper.key_findings), paper.methodology]
    return "\n".join(p for p in parts if p)
