"""Read recorded HTTP interactions: vcrpy YAML (both layouts), Ruby VCR YAML, arXiv JSON wrappers."""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml


@dataclass(frozen=True)
class Interaction:
    source: str  # file it came from
    method: str
    uri: str
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def path(self) -> str:
        return urlsplit(self.uri).path

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "application/octet-stream")

    def json(self) -> Any:
        return json.loads(self.body)


def _headers(raw: Any) -> dict[str, str]:
    headers: dict[str, str] = {}
    for key, value in (raw or {}).items():
        headers[str(key).lower()] = str(value[0] if isinstance(value, list) and value else value)
    return headers


def _decode(body: bytes, headers: dict[str, str]) -> bytes:
    encoding = headers.get("content-encoding", "").lower()
    if body[:2] == b"\x1f\x8b" or encoding == "gzip":
        try:
            return gzip.decompress(body)
        except OSError:
            return body
    if encoding == "deflate":
        return zlib.decompress(body)
    return body


def _as_bytes(value: Any) -> bytes:
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def load_cassette(path: Path) -> list[Interaction]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw_interactions = data.get("interactions") or data.get("http_interactions") or []
    interactions = []
    for raw in raw_interactions:
        request, response = raw["request"], raw["response"]
        status = response.get("status", response.get("status_code"))
        if isinstance(status, dict):
            status = status.get("code")
        headers = _headers(response.get("headers"))
        body_field = response.get("body", response.get("content"))
        if isinstance(body_field, dict):
            if "base64_string" in body_field:
                body = base64.b64decode(body_field["base64_string"])
            else:
                body = _as_bytes(body_field.get("string"))
        else:
            body = _as_bytes(body_field)
        interactions.append(
            Interaction(
                source=path.name,
                method=str(request.get("method", "GET")).upper(),
                uri=str(request["uri"]),
                status=int(status),
                headers=headers,
                body=_decode(body, headers),
            )
        )
    return interactions


def load_arxiv_fixture(path: Path) -> Interaction:
    data = json.loads(path.read_text(encoding="utf-8"))
    return Interaction(
        source=path.name,
        method="GET",
        uri=data["url"],
        status=int(data["status_code"]),
        headers={"content-type": "application/atom+xml"},
        body=data["body"].encode("utf-8"),
    )


def load_all(directory: Path) -> list[Interaction]:
    """Every recorded interaction under `directory` (YAML cassettes and arXiv JSON wrappers)."""
    found: list[Interaction] = []
    for path in sorted(directory.rglob("*")):
        if path.suffix in (".yaml", ".yml"):
            found.extend(load_cassette(path))
        elif path.suffix == ".json" and "arxiv" in path.parts[-2].lower():
            found.append(load_arxiv_fixture(path))
    return found
