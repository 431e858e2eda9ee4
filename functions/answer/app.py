"""The answer function's FastAPI app: the multi-source face (`/api/v1/research`, `/api/v1/ask`, presets,
focus modes) and the trust face (`/v1/query`, `/v1/query/stream`, `/v1/search`, `/v1/claims/verify`,
`/v1/traces`, `/v1/health`), both over the one answer pipeline (functions/research/pipeline.py)."""

from __future__ import annotations

from functions.answer.errors import SearchUnavailable
from functions.answer.routes import claims, references, research, trust
from functions.common import snapstart
from functions.common.errors import DomainError, UpstreamError
from functions.common.faces import multisource
from functions.common.faces import trust as trust_face
from functions.common.faces.face import ErrorReply
from functions.common.observability import get_logger
from functions.common.web.api import create_app
from functions.common.web.openapi import document_errors
from functions.metering.middleware import UsageMiddleware
from functions.references.errors import ReferencesTooLarge, UnsupportedUpload

logger = get_logger("answer")


def _synthesis_failed(exc: BaseException) -> ErrorReply:
    """The multi-source seed's 500: "Synthesis error: <why>" (an unexpected error's type alone)."""
    message = exc.message if isinstance(exc, DomainError) else type(exc).__name__
    return multisource.reply(500, f"Synthesis error: {message}")


# The multi-source seed's words for a failed answer: no connector answered is 503, any other upstream
# failure or fault is the seed's 500 "Synthesis error".
RESEARCH_FACE = multisource.FACE.with_rules(
    "multisource (answer)",
    [
        (SearchUnavailable, lambda exc: multisource.reply(503, exc.message)),
        (UpstreamError, _synthesis_failed),
    ],
    otherwise=_synthesis_failed,
)

# Reference checking's refusals: an oversized list or upload is 413, a file of another kind 415.
REFERENCES_FACE = trust_face.FACE.with_rules(
    "trust (references)",
    [
        (
            ReferencesTooLarge,
            lambda exc: trust_face.reply(413, exc.code, exc.message, trust_face.field_details(exc.field)),
        ),
        (
            UnsupportedUpload,
            lambda exc: trust_face.reply(415, exc.code, exc.message, trust_face.field_details(exc.field)),
        ),
    ],
)

app = create_app(
    title="answer",
    description="Evidence-grounded answers with located citations, claim verification and agent traces "
    "(multi-source `/api/v1/research` and `/api/v1/ask`; trust `/v1/query`, `/v1/query/stream`, "
    "`/v1/search`, `/v1/claims/verify`, `/v1/traces/{trace_id}`, `/v1/health`; `/v1/references/check`).",
    routers=[
        (RESEARCH_FACE, research.router),
        (trust_face.FACE, trust.router),
        (trust_face.FACE, claims.router),
        (REFERENCES_FACE, references.router),
    ],
    logger=logger,
    middlewares=[UsageMiddleware],  # counts each request per team, route and month (docs/usage.md)
)

# 400 validation, 404 nothing found (multi-source) or an unknown uploaded document (trust), 429 the
# per-client limit, 503 no search connector answered, 500 the multi-source seed's "Synthesis error".
_MULTI_SOURCE = (multisource.MultiSourceError, [400, 404, 429, 503])
_TRUST = (trust_face.TrustErrorResponse, [400, 404, 429, 503])
document_errors(
    app,
    {
        "POST /api/v1/research": _MULTI_SOURCE,
        "POST /api/v1/ask": _MULTI_SOURCE,
        "GET /api/v1/presets": (multisource.MultiSourceError, []),
        "GET /api/v1/focus-modes": (multisource.MultiSourceError, []),
        "POST /v1/query": _TRUST,
        "POST /v1/query/stream": _TRUST,
        "POST /v1/search": _TRUST,
        "POST /v1/claims/verify": _TRUST,
        "GET /v1/traces/{trace_id}": (trust_face.TrustErrorResponse, [404]),
        "GET /v1/health": (trust_face.TrustErrorResponse, []),
        "POST /v1/references/check": (trust_face.TrustErrorResponse, [400, 413, 415, 429, 503]),
    },
)

# What the first answer imports (functions/answer/wiring.py, the routes), imported into the snapshot.
snapstart.prime_before_snapshot(
    "functions.answer.service",
    "functions.answer.stream",
    "functions.research.pipeline",
    "functions.extract.service",
    "functions.search.service",
    "functions.common.outbound.http_backend",
    "functions.common.traces",
    "functions.common.ml.embedder",
    "functions.metering.meter",
)
