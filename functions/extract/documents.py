"""Uploaded documents: validation, content-addressed storage, parsing, and their metadata records.

A document belongs to the team that uploaded it: its record is keyed by (team_id, document_id) and
every read names the team, so another team's document is indistinguishable from an unknown one. The
document id is content-derived, so two teams uploading the same file hold two separate documents.
"""

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
from functions.common.validation import json_text_problem
from functions.extract.errors import DocumentTooLarge, UnprocessableDocument
from functions.extract.resolve import LIBRARY_SCHEME

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

SEARCH_TEXT_LIMIT = 20_000


class DocumentRecord(BaseModel):
    team_id: str  # the owning team (the table's partition key)
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
    """Uploaded documents' records, always read within one team."""

    def put(self, record: DocumentRecord) -> None: ...

    def get(self, team_id: str, document_id: str) -> DocumentRecord | None: ...

    def all(self, team_id: str, limit: int = 1000) -> list[DocumentRecord]: ...


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


class DynamoDocumentRepository:
    def __init__(self, table: Table | None = None) -> None:
        self._table = table or dynamodb_resource().Table(get_settings().documents_table)

    def put(self, record: DocumentRecord) -> None:
        item = json.loads(record.model_dump_json(), parse_float=Decimal)
        self._table.put_item(Item={k: v for k, v in item.items() if v is not None})

    def get(self, team_id: str, document_id: str) -> DocumentRecord | None:
        if not team_id or not document_id:  # DynamoDB refuses empty key values: nothing is stored there
            return None
        item = self._table.get_item(Key={"team_id": team_id, "document_id": document_id}).get("Item")
        return None if item is None else DocumentRecord.model_validate(from_dynamo(item))

    def all(self, team_id: str, limit: int = 1000) -> list[DocumentRecord]:
        """The team's documents (a Query on its partition, never a Scan of every team's)."""
        records: list[DocumentRecord] = []
        if not team_id or limit <= 0:
            return records
        kwargs: dict[str, Any] = {
            "KeyConditionExpression": "team_id = :team",
            "ExpressionAttributeValues": {":team": team_id},
        }
        while len(records) < limit:
            page = self._table.query(Limit=limit - len(records), **kwargs)
            records.extend(DocumentRecord.model_validate(from_dynamo(item)) for item in page.get("Items", []))
            if "LastEvaluatedKey" not in page:
                break
            kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return records[:limit]


class InMemoryDocumentRepository:
    def __init__(self) -> None:
        self._records: dict[tuple[str, str], DocumentRecord] = {}

    def put(self, record: DocumentRecord) -> None:
        self._records[(record.team_id, record.document_id)] = record.model_copy(deep=True)

    def get(self, team_id: str, document_id: str) -> DocumentRecord | None:
        found = self._records.get((team_id, document_id))
        return found.model_copy(deep=True) if found else None

    def all(self, team_id: str, limit: int = 1000) -> list[DocumentRecord]:
        """The team's documents in document-id order (as a Query on the sort key returns them)."""
        mine = sorted(
            (record for (team, _), record in self._records.items() if team == team_id),
            key=lambda record: record.document_id,
        )
        return [record.model_copy(deep=True) for record in mine[: max(0, limit)]]
