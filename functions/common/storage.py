"""Storage adapters: blobs (S3) and a TTL key-value cache (DynamoDB), each with an in-memory twin.

Domain code depends on the protocols; the S3/DynamoDB classes are the product, the in-memory ones
implement the same interface for unit tests and are never wired into a deployed function.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol

from botocore.exceptions import ClientError

from functions.common.aws import dynamodb_resource, s3_client
from functions.common.settings import get_settings

if TYPE_CHECKING:
    from aws_lambda_powertools import Logger
    from mypy_boto3_dynamodb.service_resource import Table
    from mypy_boto3_s3.client import S3Client


class BlobStore(Protocol):
    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None: ...

    def get_bytes(self, key: str) -> bytes | None: ...

    def exists(self, key: str) -> bool: ...

    def list_keys(self, prefix: str) -> list[str]: ...


def put_json(store: BlobStore, key: str, value: Any) -> None:
    store.put_bytes(key, json.dumps(value, default=str).encode("utf-8"), "application/json")


def get_json(store: BlobStore, key: str) -> Any | None:
    data = store.get_bytes(key)
    return None if data is None else json.loads(data)


class S3BlobStore:
    def __init__(self, bucket: str | None = None, client: S3Client | None = None) -> None:
        self.bucket = bucket or get_settings().data_bucket
        self._client = client or s3_client()

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        self._client.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)

    def get_bytes(self, key: str) -> bytes | None:
        try:
            return self._client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if _is_missing(exc):
                return None
            raise

    def exists(self, key: str) -> bool:
        try:
            self._client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if _is_missing(exc):
                return False
            raise
        return True

    def list_keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            keys.extend(item["Key"] for item in page.get("Contents", []))
        return keys


def _is_missing(exc: ClientError) -> bool:
    """GetObject says NoSuchKey; HeadObject, which has no body, only 404."""
    return exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "NotFound")


class InMemoryBlobStore:
    def __init__(self) -> None:
        self._blobs: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put_bytes(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        with self._lock:
            self._blobs[key] = bytes(data)

    def get_bytes(self, key: str) -> bytes | None:
        with self._lock:
            return self._blobs.get(key)

    def exists(self, key: str) -> bool:
        with self._lock:
            return key in self._blobs

    def list_keys(self, prefix: str) -> list[str]:
        with self._lock:
            return sorted(k for k in self._blobs if k.startswith(prefix))


def from_dynamo(value: Any) -> Any:
    """A DynamoDB item (numbers come back as Decimal) as plain JSON-like Python values."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dict):
        return {k: from_dynamo(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_dynamo(v) for v in value]
    return value


class TtlCache(Protocol):
    def get(self, key: str) -> Any | None: ...

    def put(self, key: str, value: Any, ttl_seconds: int) -> None: ...


async def cache_read(cache: TtlCache, key: str, logger: Logger, what: str) -> Any | None:
    """The cached value; None for a miss and for a cache that fails: a cache is an optimisation, so a
    broken one is a miss (logged as "<what> read failed")."""
    try:
        return await asyncio.to_thread(cache.get, key)
    except Exception:
        logger.warning(f"{what} read failed", key=key, exc_info=True)
        return None


async def cache_write(
    cache: TtlCache, key: str, value: Any, ttl_seconds: int, logger: Logger, what: str
) -> None:
    """Cache `value`; a cache that fails is logged ("<what> write failed"), never raised."""
    try:
        await asyncio.to_thread(cache.put, key, value, ttl_seconds)
    except Exception:
        logger.warning(f"{what} write failed", key=key, exc_info=True)


class DynamoDbTtlCache:
    """JSON values in the cache table; expired items are ignored on read (DynamoDB TTL deletes them later).

    Items are capped at DynamoDB's 400 KB; larger values are silently not cached (a miss, not an error).
    """

    MAX_ITEM_BYTES = 350_000

    def __init__(self, table: Table | None = None, clock: Any = time.time) -> None:
        self._table = table or dynamodb_resource().Table(get_settings().cache_table)
        self._clock = clock

    def get(self, key: str) -> Any | None:
        item = self._table.get_item(Key={"cache_key": key}).get("Item")
        if not item or float(str(item.get("expires_at", 0))) <= self._clock():
            return None
        return json.loads(str(item["value"]))

    def put(self, key: str, value: Any, ttl_seconds: int) -> None:
        encoded = json.dumps(value, default=str)
        if len(encoded.encode("utf-8")) > self.MAX_ITEM_BYTES:
            return
        self._table.put_item(
            Item={"cache_key": key, "value": encoded, "expires_at": int(self._clock() + ttl_seconds)}
        )


class InMemoryTtlCache:
    def __init__(self, clock: Any = time.time) -> None:
        self._items: dict[str, tuple[float, str]] = {}
        self._clock = clock
        self._lock = threading.Lock()

    def get(self, key: str) -> Any | None:
        with self._lock:
            found = self._items.get(key)
        if not found or found[0] <= self._clock():
            return None
        return json.loads(found[1])

    def put(self, key: str, value: Any, ttl_seconds: int) -> None:
        with self._lock:
            self._items[key] = (self._clock() + ttl_seconds, json.dumps(value, default=str))
