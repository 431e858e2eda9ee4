"""Every domain error maps to each of the answer app's faces in one table per face."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException

from functions.answer.app import RESEARCH_FACE
from functions.answer.errors import InternalFailure, NoResults, SearchUnavailable
from functions.common.errors import FetchError, InvalidInput, NotFound, RateLimited, UpstreamError
from functions.common.faces import trust as trust_face
from functions.common.faces.face import ErrorReply


def error_reply(exc: BaseException, *, trust: bool) -> ErrorReply:
    """How the answer app words `exc` on its trust face, else on its multi-source face."""
    return (trust_face.FACE if trust else RESEARCH_FACE).reply(exc)


CASES: list[tuple[BaseException, int, dict[str, Any], int, dict[str, Any]]] = [
    (
        InvalidInput("connectors: unknown connector 'x'", field="connectors"),
        400,
        {"detail": "connectors: unknown connector 'x'"},
        400,
        {
            "code": "invalid_request",
            "message": "connectors: unknown connector 'x'",
            "details": {"field": "connectors"},
        },
    ),
    (
        NoResults(),
        404,
        {"detail": "No search results found"},
        404,
        {"code": "not_found", "message": "No search results found", "details": {}},
    ),
    (
        NotFound("document doc-1 not found"),
        404,
        {"detail": "document doc-1 not found"},
        404,
        {"code": "not_found", "message": "document doc-1 not found", "details": {}},
    ),
    (
        RateLimited("slow down", retry_after=2.2),
        429,
        {"detail": "Rate limit exceeded", "retry_after": 3},
        429,
        {"code": "rate_limited", "message": "Rate limit exceeded", "details": {"retry_after": 3}},
    ),
    (
        SearchUnavailable("No search connectors configured"),
        503,
        {"detail": "No search connectors configured"},
        503,
        {"code": "upstream_unavailable", "message": "No search connectors configured", "details": {}},
    ),
    (
        UpstreamError("Connection refused"),
        500,
        {"detail": "Synthesis error: Connection refused"},
        503,
        {"code": "upstream_unavailable", "message": "Connection refused", "details": {}},
    ),
    (
        InternalFailure("KeyError"),
        500,
        {"detail": "Synthesis error: KeyError"},
        500,
        {"code": "internal_error", "message": "Internal error", "details": {}},
    ),
    (
        FetchError("library document unreadable"),
        500,
        {"detail": "Synthesis error: library document unreadable"},
        500,
        {"code": "internal_error", "message": "Internal error", "details": {}},
    ),
    (
        ValueError("/srv/secret/path"),
        500,
        {"detail": "Synthesis error: ValueError"},
        500,
        {"code": "internal_error", "message": "Internal error", "details": {}},
    ),
    (
        HTTPException(405, "Method Not Allowed"),
        405,
        {"detail": "Method Not Allowed"},
        405,
        {"code": "method_not_allowed", "message": "Method Not Allowed", "details": {}},
    ),
]


@pytest.mark.parametrize(("exc", "status", "body", "trust_status", "trust_error"), CASES)
def test_each_error_has_its_status_and_body_on_both_faces(
    exc: BaseException, status: int, body: dict[str, Any], trust_status: int, trust_error: dict[str, Any]
) -> None:
    research = error_reply(exc, trust=False)
    assert (research.status, research.body) == (status, body)
    trust = error_reply(exc, trust=True)
    assert (trust.status, trust.body) == (trust_status, {"error": trust_error})
    assert "secret" not in str(research.body) + str(trust.body)


def test_rate_limited_tells_when_to_retry() -> None:
    for trust in (False, True):
        assert error_reply(RateLimited("x", retry_after=0.1), trust=trust).headers == {"Retry-After": "1"}


def test_validation_errors_name_the_field() -> None:
    missing = RequestValidationError([{"type": "missing", "loc": ("body", "query"), "msg": "Field required"}])
    assert error_reply(missing, trust=False).body == {"detail": "query: is required"}
    assert error_reply(missing, trust=True).body == {
        "error": {"code": "invalid_request", "message": "Missing query field", "details": {"field": "query"}}
    }
    several = RequestValidationError(
        [
            {
                "type": "less_than_equal",
                "loc": ("body", "options", "max_sources"),
                "msg": "Input should be <= 30",
            },
            {"type": "literal_error", "loc": ("body", "options", "preset"), "msg": "Input should be 'fast'"},
        ]
    )
    reply = error_reply(several, trust=True)
    assert reply.status == 400
    assert reply.body["error"]["message"] == "options.max_sources: Input should be <= 30"
    assert reply.body["error"]["details"]["field"] == "options.max_sources"
    assert "options.preset" in reply.body["error"]["details"]["problems"]
    broken = RequestValidationError(
        [{"type": "json_invalid", "loc": ("body", 1), "msg": "JSON decode error"}]
    )
    assert error_reply(broken, trust=False).body == {"detail": "body: is not valid JSON"}
    assert error_reply(broken, trust=True).body["error"]["code"] == "invalid_request"
