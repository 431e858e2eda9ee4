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

    def __init__(self, message: str, status_code: int | None = None, *, not_run: bool = False) -> None:
        super().__init__(message)
        self.status_code = status_code
        # nothing was asked of the upstream: every request waited past its deadline for its turn
        self.not_run = not_run


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


class StepDeferred(DomainError):
    """Raised by a step handler whose work waits for an upstream's turn longer than the step may wait
    while it is billed: the state machine's Retry for it waits instead (free), then runs the step again.
    Metering records such an attempt as a deferral of its step, not as a step."""

    code = "DEFERRED"


# An AWS service the API stores in (DynamoDB, S3, Step Functions, ...) that is throttling, failing or out
# of reach is an upstream outage: the API answers 503 with a clear body, not a bare 500.
AWS_OUTAGE_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "Throttling",
        "ThrottledException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "SlowDown",
        "ServiceUnavailable",
        "ServiceUnavailableException",
        "InternalServerError",
        "InternalError",
        "InternalFailure",
        "RequestTimeout",
        "RequestTimeoutException",
    }
)


def aws_outage(exc: BaseException) -> str | None:
    """What failed, when `exc` is botocore's report of an AWS outage (throttling, a 5xx, no connection);
    None for anything else (a ClientError that is our bug stays a 500). botocore is not imported here."""
    if not type(exc).__module__.startswith("botocore"):
        return None
    response = getattr(exc, "response", None)
    if isinstance(response, dict):  # a ClientError (or its generated subclasses)
        code = str(response.get("Error", {}).get("Code", ""))
        return code if code in AWS_OUTAGE_CODES else None
    return type(exc).__name__  # EndpointConnectionError, ReadTimeoutError, ...
