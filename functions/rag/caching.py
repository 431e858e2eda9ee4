"""HTTP caching of the knowledge base's answers: Cache-Control, a strong ETag, 304 on If-None-Match."""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable
from threading import Lock
from typing import Any

from fastapi import Request, Response

SEARCH_MAX_AGE = 86_400  # 24 h: search and graph expansion
ENTITY_MAX_AGE = 604_800  # 7 days: a numbered entity does not change


def encode(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def cached_json(request: Request, body: bytes, max_age: int) -> Response:
    etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
    headers = {"Cache-Control": f"public, max-age={max_age}", "ETag": etag}
    if _matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    return Response(content=body, media_type="application/json", headers=headers)


def _matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    candidates = {item.strip().removeprefix("W/") for item in header.split(",")}
    return "*" in candidates or etag in candidates


class ResponseMemo:
    """Bounded in-process memo of encoded answers, keyed by the normalised request and index version."""

    def __init__(self, capacity: int = 512) -> None:
        self._items: OrderedDict[str, bytes] = OrderedDict()
        self._capacity = capacity
        self._lock = Lock()

    def get(self, key: str) -> bytes | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def encoded(self, key: str, answer: Callable[[], Any]) -> bytes:
        """The encoded answer for `key`; `answer()` is computed (and kept) only on a miss."""
        body = self.get(key)
        if body is None:
            body = encode(answer())
            self.put(key, body)
        return body

    def put(self, key: str, body: bytes) -> None:
        with self._lock:
            self._items[key] = body
            self._items.move_to_end(key)
            while len(self._items) > self._capacity:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
