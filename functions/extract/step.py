"""Step Functions task: extract one source for the research state machine.

Permanent failures (not found, refused, unparseable, timed out) are RETURNED as success=false so the
Map records them without failing the job; transient ones raise RetryableStepError for the Retry.
"""

from __future__ import annotations

import asyncio
from functools import lru_cache
from typing import Any

from functions.common.errors import DomainError, FetchError, FetchTimeout, RetryableStepError
from functions.common.http import HttpClient
from functions.common.observability import get_logger
from functions.common.settings import get_settings
from functions.common.storage import BlobStore, S3BlobStore
from functions.extract.documents import DocumentRepository, DynamoDocumentRepository
from functions.extract.errors import SourceUnavailable
from functions.extract.resolve import classify
from functions.extract.service import ExtractionService, parsed_key

logger = get_logger("extract-step")
STEP_BUDGET_SECONDS = 40.0


@lru_cache(maxsize=1)
def _storage() -> tuple[BlobStore, DocumentRepository]:
    return S3BlobStore(get_settings().data_bucket), DynamoDocumentRepository()


async def run_step(
    event: dict[str, Any], blobs: BlobStore, documents: DocumentRepository | None
) -> dict[str, Any]:
    source_url = str(event.get("source_url") or "")
    focus = [str(f) for f in event.get("focus_areas") or []]
    result: dict[str, Any] = {
        "source_url": source_url,
        "source_id": event.get("source_id"),
        "canonical_id": None,
        "success": False,
        "failure_reason": None,
        "parsed_key": None,
        "evidence_count": 0,
        "confidence_score": 0.0,
    }
    http = HttpClient(get_settings())
    service = ExtractionService(http=http, blobs=blobs, documents=documents)
    try:
        result["canonical_id"] = classify(source_url).canonical_id
        budget = min(STEP_BUDGET_SECONDS, get_settings().extract_budget_seconds)
        paper = await service.extract(source_url, focus_areas=focus, budget_seconds=budget)
    except SourceUnavailable as exc:
        if exc.transient:
            raise RetryableStepError(exc.message) from exc
        result["failure_reason"] = f"source unavailable: {exc.message}"
        return result
    except FetchTimeout as exc:
        result["failure_reason"] = f"timeout: {exc.message}"
        return result
    except (FetchError, DomainError) as exc:
        result["failure_reason"] = exc.message
        return result
    finally:
        await http.aclose()
    result.update(
        canonical_id=paper.canonical_id,
        success=paper.success,
        failure_reason=paper.failure_reason,
        parsed_key=parsed_key(paper.canonical_id),
        evidence_count=len(paper.evidence),
        confidence_score=paper.confidence_score,
    )
    return result


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    blobs, documents = _storage()
    result = asyncio.run(run_step(event, blobs, documents))
    logger.info(
        "extracted",
        source_url=result["source_url"],
        success=result["success"],
        reason=result["failure_reason"],
    )
    return result
