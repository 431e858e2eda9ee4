"""The answer function's part of claim verification (`POST /v1/claims/verify`): how a named source is
read (functions/extract/resolve.py's identifiers), the checker's adapters, and the response body.

The checker (functions/research/claims/) is built per request over the answer pipeline's own reading
(`wiring.reading`: the search port, the team's documents, a metered extraction service), so a claim's
fetches queue at the providers, are cached and are counted for the team exactly as an answer's are.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any

from functions.common.errors import InvalidInput
from functions.common.settings import Settings, get_settings

if TYPE_CHECKING:
    from functions.answer.service import AnswerService
    from functions.research.claims.checker import ClaimCheck, ClaimChecker, NamedSource

LIBRARY_SCHEME = "library://"
DOCUMENT_PREFIX = "doc-"

ClaimCheckers = Callable[[], AbstractAsyncContextManager["ClaimChecker"]]


def locate(given: str, index: int) -> NamedSource:
    """A source as the caller names it: a URL, a DOI, an arXiv id, a library document (`doc-…` or
    `library://doc-…`); anything else is InvalidInput naming the list item."""
    from functions.extract.resolve import classify
    from functions.research.claims.checker import NamedSource

    raw = given.strip()
    address = LIBRARY_SCHEME + raw if raw.startswith(DOCUMENT_PREFIX) else raw
    field = f"sources[{index}]"
    try:
        target = classify(address)
    except InvalidInput as exc:
        raise InvalidInput(
            f"{field}: {given[:80]!r} is not a URL, a DOI, an arXiv id or a library document id "
            f"({exc.message})",
            field,
        ) from exc
    if target.kind == "library":
        return NamedSource(given, LIBRARY_SCHEME + target.value, target.value)
    return NamedSource(given, address)


_checkers: tuple[Settings, ClaimCheckers] | None = None


def claim_checkers(service: AnswerService) -> ClaimCheckers:
    """One factory per container and settings, over the answer service's search port."""
    global _checkers
    settings = get_settings()
    if _checkers is None or _checkers[0] is not settings:
        _checkers = (settings, _factory(settings, service))
    return _checkers[1]


def _factory(settings: Settings, service: AnswerService) -> ClaimCheckers:
    from functions.answer.wiring import UploadedDocuments, reading
    from functions.common.documents import DynamoDocumentRepository
    from functions.research.claims.checker import ClaimChecker

    documents = UploadedDocuments(DynamoDocumentRepository())

    @asynccontextmanager
    async def checker() -> AsyncIterator[ClaimChecker]:
        async with reading(settings, service.search_port, documents) as read:
            assert read.retriever.full_text is not None
            yield ClaimChecker(
                read.retriever,
                read.retriever.full_text,
                locate,
                pages=read.extraction,
                documents=documents,
                library_prefix=service.search_port.connector_prefix("library"),
            )

    return checker


def claim_response(check: ClaimCheck) -> dict[str, Any]:
    """The `/v1/claims/verify` body."""
    by_id = {source.source_id: source for source in check.sources}
    evidence = []
    for weighed in check.verdict.evidence:
        chunk = weighed.chunk
        source = by_id.get(chunk.source_id)
        evidence.append(
            {
                "quote": chunk.text,
                "source": source.given if source else chunk.source_id,
                "source_id": chunk.source_id,
                "title": source.title if source else "",
                "url": source.url if source else "",
                "page": chunk.page,
                "char_start": chunk.char_start,
                "char_end": chunk.char_end,
                "origin": chunk.origin,
                "stance": weighed.stance,
                "note": weighed.note,
            }
        )
    return {
        "claim": check.claim,
        "verdict": check.verdict.verdict,
        "confidence": check.verdict.confidence,
        "evidence": evidence,
        "notes": check.notes,
        "sources": [
            {
                "source": source.given,
                "source_id": source.source_id,
                "title": source.title,
                "url": source.url,
                "read": source.read,
                "note": source.note,
            }
            for source in check.sources
        ],
    }
