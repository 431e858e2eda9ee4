"""Uploaded documents' records, shared by extraction (which writes them on upload) and the library search
connector (which matches a team's documents): the record, its repository port and its two adapters.

A document belongs to the team that uploaded it: its record is keyed by (team_id, document_id) and
every read names the team, so another team's document is indistinguishable from an unknown one.
"""

from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from functions.common.aws import dynamodb_resource
from functions.common.settings import get_settings
from functions.common.storage import from_dynamo

if TYPE_CHECKING:
    from mypy_boto3_dynamodb.service_resource import Table

# how search results and extraction requests name an uploaded document: library://<document_id>
LIBRARY_SCHEME = "library://"


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
