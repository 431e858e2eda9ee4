"""The answer service's own failures (functions/answer/app.py words them on the multi-source and trust faces).

A module of its own so that the error handlers (installed when the app is built) do not import the
answer service and through it the pipeline (bench/cold_start.py).
"""

from __future__ import annotations

from functions.common.errors import DomainError, NotFound, UpstreamError

NO_RESULTS = "No search results found"


class SearchUnavailable(UpstreamError):
    """No search connector is configured, or every selected one failed (breakers open included)."""


class NoResults(NotFound):
    """The searches found nothing at all (not even sources judged irrelevant)."""

    def __init__(self) -> None:
        super().__init__(NO_RESULTS)


class InternalFailure(DomainError):
    """A bug or an unexpected failure inside the pipeline; its message is the exception's type only."""

    code = "INTERNAL"
