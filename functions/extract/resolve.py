"""What a source URL names: an arXiv paper, a DOI, an uploaded document, or a plain web address."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlsplit

from functions.common.errors import InvalidInput
from functions.common.models import normalise_doi, short_hash

LIBRARY_SCHEME = "library://"
_NEW_ARXIV = r"\d{4}\.\d{4,5}"
_OLD_ARXIV = r"[a-z][a-z.-]+(?:\.[A-Z]{2})?/\d{7}"
_ARXIV_ID = re.compile(rf"^(?P<id>{_NEW_ARXIV}|{_OLD_ARXIV})(?P<version>v\d+)?$")
_ARXIV_PATH = re.compile(
    rf"^/(?:abs|pdf|html)/(?P<id>{_NEW_ARXIV}|{_OLD_ARXIV})(?P<version>v\d+)?(?:\.pdf)?/?$"
)
_ARXIV_HOSTS = frozenset({"arxiv.org", "www.arxiv.org", "export.arxiv.org"})
_DOI_HOSTS = frozenset({"doi.org", "dx.doi.org", "www.doi.org"})
_DOCUMENT_ID = re.compile(r"^doc-[0-9a-f]{8,64}$")


@dataclass(frozen=True, slots=True)
class Target:
    kind: Literal["arxiv", "doi", "url", "library"]
    value: str  # arXiv id (with version when given), DOI, URL or document id
    canonical_id: str

    @property
    def cache_key(self) -> str:
        return short_hash(self.canonical_id, 16)


def arxiv_target(identifier: str, version: str | None) -> Target:
    value = identifier + (version or "")
    return Target("arxiv", value, f"arxiv:{value}")


def library_target(document_id: str) -> Target:
    return Target("library", document_id, f"library:{document_id}")


def classify(source_url: str) -> Target:
    """Raises InvalidInput for anything that is neither an identifier nor an http(s) URL."""
    raw = (source_url or "").strip()
    if not raw:
        raise InvalidInput("source_url must not be empty", field="source_url")
    if len(raw) > 2048:
        raise InvalidInput("source_url is longer than 2048 characters", field="source_url")
    if raw.startswith(LIBRARY_SCHEME):
        document_id = raw[len(LIBRARY_SCHEME) :].strip("/")
        if not _DOCUMENT_ID.match(document_id):
            raise InvalidInput(f"not a document id: {document_id!r}", field="source_url")
        return library_target(document_id)
    lowered = raw.lower()
    for prefix in ("arxiv:", "arxiv.org/abs/"):
        if lowered.startswith(prefix):
            raw = raw[len(prefix) :]
            break
    bare = _ARXIV_ID.match(raw)
    if bare:
        return arxiv_target(bare.group("id"), bare.group("version"))
    if lowered.startswith("doi:") or re.match(r"^10\.\d{4,9}/", raw):
        doi = normalise_doi(raw)
        if doi:
            return Target("doi", doi, f"doi:{doi}")
    return _web_target(raw)


def _web_target(raw: str) -> Target:
    """An http(s) URL: an arXiv or doi.org address names its paper, any other is fetched as it is."""
    try:
        parts = urlsplit(raw)
    except ValueError as exc:
        raise InvalidInput(f"source_url is not a valid URL: {exc}", field="source_url") from exc
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(
            "source_url must be an http(s) URL, an arXiv id, a DOI or library://<document_id>",
            field="source_url",
        )
    host = parts.hostname.lower()
    if host in _ARXIV_HOSTS:
        match = _ARXIV_PATH.match(unquote(parts.path))
        if match:
            return arxiv_target(match.group("id"), match.group("version"))
    if host in _DOI_HOSTS:
        doi = normalise_doi(unquote(parts.path.lstrip("/")))
        if doi:
            return Target("doi", doi, f"doi:{doi}")
    return Target("url", raw, f"url:{short_hash(raw, 16)}")
