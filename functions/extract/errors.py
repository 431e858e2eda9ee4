"""Extraction's domain errors (functions/extract/app.py words them on the agent and trust faces)."""

from __future__ import annotations

from functions.common.errors import InvalidInput, NotFound


class SourceUnavailable(NotFound):
    """The source could not be fetched (404, paywall, no open-access copy, connection failure)."""

    code = "SOURCE_UNAVAILABLE"

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient  # 5xx/throttling after retries: worth retrying later


class DocumentTooLarge(InvalidInput):
    code = "payload_too_large"


class UnprocessableDocument(InvalidInput):
    code = "unprocessable_document"


class PdfLimitExceeded(Exception):
    """The document needs more than a parse may take (decompressed bytes, time, memory): it is refused,
    not read in part. `reason` is user-facing and names the limit."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
