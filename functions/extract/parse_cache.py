"""Where an extraction keeps what it fetched and parsed, in the data bucket:
pdfs/<sha256>.pdf                    a fetched public PDF, content-addressed
parsed/<hash(canonical_id)>.json     the ExtractedPaper (what the step handler passes by reference)
parsed/<hash(canonical_id)>.pages.json  the normalised page text: a repeat extraction of the same
                                     paper re-runs only the (fast) analysis, with no fetch and no parse
teams/<team_id>/documents/<document_id>/original.pdf, paper.json, pages.json
                                     the same three for a team's uploaded document, under its team
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from functions.common.models import ExtractedPaper, short_hash
from functions.common.storage import BlobStore, get_json, put_json
from functions.common.tenancy import checked_team
from functions.extract.metadata import ResolvedMetadata
from functions.extract.pdf import ParsedPdf


def pdf_key(sha256: str) -> str:
    return f"pdfs/{sha256}.pdf"


def parsed_key(canonical_id: str) -> str:
    return f"parsed/{short_hash(canonical_id, 16)}.json"


def pages_key(canonical_id: str) -> str:
    return f"parsed/{short_hash(canonical_id, 16)}.pages.json"


@dataclass(frozen=True, slots=True)
class StorageKeys:
    """Where a source's parse is kept: the shared keys of a public paper, or its team's for an upload."""

    parsed: str
    pages: str


def public_keys(canonical_id: str) -> StorageKeys:
    return StorageKeys(parsed_key(canonical_id), pages_key(canonical_id))


def document_prefix(team_id: str, document_id: str) -> str:
    """Every stored file of an uploaded document lives under its team (the team id is checked, since it
    becomes part of the key)."""
    return f"teams/{checked_team(team_id)}/documents/{document_id}"


def document_pdf_key(team_id: str, document_id: str) -> str:
    return f"{document_prefix(team_id, document_id)}/original.pdf"


def document_keys(team_id: str, document_id: str) -> StorageKeys:
    prefix = document_prefix(team_id, document_id)
    return StorageKeys(f"{prefix}/paper.json", f"{prefix}/pages.json")


@dataclass(frozen=True, slots=True)
class StoredPages:
    """A source's normalised pages as kept, with what its first analysis found out about them."""

    parsed: ParsedPdf
    pdf_sha256: str | None
    extra_citations: list[str]
    resolved: ResolvedMetadata | None


class ParseCache:
    def __init__(self, blobs: BlobStore) -> None:
        self._blobs = blobs

    async def put_pdf(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(self._blobs.put_bytes, key, data, "application/pdf")

    async def pdf(self, key: str) -> bytes | None:
        return await asyncio.to_thread(self._blobs.get_bytes, key)

    async def put_pages(
        self,
        keys: StorageKeys,
        parsed: ParsedPdf,
        sha256: str | None,
        extra_citations: list[str],
        resolved: ResolvedMetadata | None = None,
    ) -> None:
        """The normalised pages that a repeat extraction re-analyses instead of fetching and parsing
        again (with the registries' metadata once it was found, so that a repeat asks no registry)."""
        stored: dict[str, Any] = {
            "parsed": parsed.to_json(),
            "pdf_sha256": sha256,
            "extra_citations": extra_citations,
        }
        if resolved is not None and resolved.found:
            stored["authoritative"] = resolved.to_json()
        await asyncio.to_thread(put_json, self._blobs, keys.pages, stored)

    async def pages(self, keys: StorageKeys) -> StoredPages | None:
        stored = await asyncio.to_thread(get_json, self._blobs, keys.pages)
        if stored is None:
            return None
        authoritative = stored.get("authoritative")
        return StoredPages(
            ParsedPdf.from_json(stored["parsed"]),
            stored.get("pdf_sha256"),
            stored.get("extra_citations") or [],
            ResolvedMetadata.from_json(authoritative) if authoritative else None,
        )

    async def put_paper(self, paper: ExtractedPaper, keys: StorageKeys) -> None:
        await asyncio.to_thread(put_json, self._blobs, keys.parsed, paper.model_dump(mode="json"))

    async def failed_paper(self, keys: StorageKeys) -> ExtractedPaper | None:
        """The stored paper when its extraction failed for good (corrupt, scanned): not fetched again."""
        previous = await asyncio.to_thread(get_json, self._blobs, keys.parsed)
        if previous is None or previous.get("success"):
            return None
        return ExtractedPaper.model_validate(previous)
