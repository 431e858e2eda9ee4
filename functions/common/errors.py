"""Domain errors. Each API maps them to its own contract's error body in one place."""

from __future__ import annotations


class DomainError(Exception):
    """Base of every error the domain code raises on purpose."""

    code = "DOMAIN_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(DomainError):
    code = "INVALID_INPUT"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFound(DomainError):
    code = "NOT_FOUND"


class Unauthorized(DomainError):
    """The request carries no valid credential (each API answers 401 in its own error format)."""

    code = "UNAUTHORIZED"


class Conflict(DomainError):
    code = "CONFLICT"


class RateLimited(DomainError):
    code = "RATE_LIMITED"

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class UpstreamError(DomainError):
    """An upstream service failed (after retries) or answered something unusable."""

    code = "UPSTREAM_ERROR"

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class FetchError(DomainError):
    """An outbound fetch did not produce a usable response."""

    code = "FETCH_ERROR"


class FetchBlocked(FetchError):
    """The SSRF guard refused the destination."""

    code = "FETCH_BLOCKED"


class FetchTooLarge(FetchError):
    code = "FETCH_TOO_LARGE"


class FetchTimeout(FetchError):
    code = "FETCH_TIMEOUT"


class FetchStatusError(FetchError):
    """The final response had an error status (after retries for transient ones)."""

    code = "FETCH_STATUS"

    def __init__(self, message: str, status_code: int) -> None:
        super().__init__(message)
        self.status_code = status_code


class RetryableStepError(DomainError):
    """Raised by a step handler for a transient failure; the state machine retries it."""

    code = "RETRYABLE"
