"""Uploading a document: validation, its content-derived id and the uploader's metadata (the records
themselves are functions/common/documents.py, which the library search connector reads too).

A document belongs to the team that uploaded it: its record is keyed by (team_id, document_id) and
every read names the team, so another team's document is indistinguishable from an unknown one. The
document id is content-derived, so two teams uploading the same file hold two separate documents.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

from functions.common.settings import Settings, get_settings
from functions.common.validation import json_text_problem
from functions.extract.errors import DocumentTooLarge, UnprocessableDocument

SEARCH_TEXT_LIMIT = 20_000


def document_id_for(sha256: str) -> str:
    """Content-derived: uploading the same file twice gives the same document."""
    return f"doc-{sha256[:24]}"


def validate_upload(data: bytes, filename: str, settings: Settings | None = None) -> str:
    """Returns the sha256; raises DocumentTooLarge / UnprocessableDocument."""
    limit = (settings or get_settings()).upload_max_bytes
    if len(data) > limit:
        raise DocumentTooLarge(f"file is {len(data)} bytes; the limit is {limit} bytes", field="file")
    if not data:
        raise UnprocessableDocument("file is empty", field="file")
    # pdf.is_pdf's test written out: the search function imports this module and must not load pypdfium2.
    if b"%PDF-" not in data[:1024]:
        raise UnprocessableDocument(f"{filename or 'file'} is not a PDF (no %PDF header)", field="file")
    return hashlib.sha256(data).hexdigest()


def parse_metadata_field(raw: str | None) -> dict[str, Any]:
    if not raw:
        return {}
    problem = json_text_problem(raw)  # nesting bounded before json.loads recurses into it
    if problem is not None:
        where = ".".join(str(part) for part in problem.location)
        raise UnprocessableDocument(
            f"metadata{'.' + where if where else ''}: {problem.message}", field="metadata"
        )
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UnprocessableDocument(f"metadata is not valid JSON: {exc.msg}", field="metadata") from exc
    if not isinstance(value, dict):
        raise UnprocessableDocument("metadata must be a JSON object", field="metadata")
    return value


def utc_now() -> datetime:
    return datetime.now(UTC)
