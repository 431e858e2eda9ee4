"""Uploaded documents: validation, content-addressed storage, parsing, and their metadata records."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from functions.common.aws import dynamodb_resource
from functions.common.settings import Settings, get_settings
from functions.common.storage import from_dynamo
from functions.extract.errors import DocumentTooLarge, UnprocessableDocument
from functions.extract.resolve import LIBRARY_SCHEME

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

SEARCH_TEXT_LIMIT = 20_000


class DocumentRecord(BaseModel):
    document_id: str
    filename: str
    uploaded_at: datetime
    size_bytes: int
    status: str  # "indexed" (parsed and searchable) or "failed"
    pages: int = 0
    sha256: str
    pdf_key: str
    parsed_key: str | None = None
    title: str = ""
    authors: list[str] = Field(default_factory=list)
    abstract: str = ""
    year: int | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)  # the uploader's optional JSON
    search_text: str = ""  # title, abstract, headings and findings: what the library connector matches

    @property
    def source_url(self) -> str:
        return LIBRARY_SCHEME + self.document_id


class DocumentRepository(Protocol):
    def put(self, record: DocumentRecord) -> None: ...

    def get(self, document_id: str) -> DocumentRecord | None: ...

    def all(self, limit: int = 1000) -> list[DocumentRecord]: ...


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
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise UnprocessableDocument(f"metadata is not valid JSON: {exc.msg}", field="metadata") from exc
    if not isinstance(value, dict):
        raise UnprocessableDocument("metadata must be a JSON object", field="metadata")
    return value


def utc_now() -> datetime:
    return datetime.now(UTC)


class DynamoDocumentRepository:
    def __init__(self, table: Table | None = None) -> None:
        self._table = table or dynamodb_resource().Table(get_settings().documents_table)

    def put(self, record: DocumentRecord) -> None:
        item = json.loads(record.model_dump_json(), parse_float=Decimal)
        self._table.put_item(Item={k: v for k, v in item.items() if v is not None})

    def get(self, document_id: str) -> DocumentRecord | None:
        item = self._table.get_item(Key={"document_id": document_id}).get("Item")
        return None if item is None else DocumentRecord.model_validate(from_dynamo(item))

    def all(self, limit: int = 1000) -> list[DocumentRecord]:
        records: list[DocumentRecord] = []
        kwargs: dict[str, Any] = {}
        while len(records) < limit:
            page = self._table.scan(**kwargs)
            records.extend(DocumentRecord.model_validate(from_dynamo(item)) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return records[:limit]


class InMemoryDocumentRepository:
    def __init__(self) -> None:
        self._records: dict[str, DocumentRecord] = {}

    def put(self, record: DocumentRecord) -> None:
        self._records[record.document_id] = record.model_copy(deep=True)

    def get(self, document_id: str) -> DocumentRecord | None:
        found = self._records.get(document_id)
        return found.model_copy(deep=True) if found else None

    def all(self, limit: int = 1000) -> list[DocumentRecord]:
        return [r.model_copy(deep=True) for r in list(self._records.values())[:limit]]
