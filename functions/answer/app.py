"""The answer function's FastAPI app: the multi-source face (`/api/v1/research`, `/api/v1/ask`, presets,
focus modes) and the trust face (`/v1/query`, `/v1/query/stream`, `/v1/search`, `/v1/traces`,
`/v1/health`), both over the one answer pipeline (functions/research/pipeline.py)."""

from __future__ import annotations

from functions.answer.errors import install_error_handlers
from functions.answer.routes import research, trust
from functions.answer.schemas import TrustErrorResponse
from functions.common import snapstart
from functions.common.api import create_app
from functions.common.observability import get_logger
from functions.common.openapi import document_errors
from functions.metering.middleware import UsageMiddleware
from functions.search.errors import MultiSourceError

logger = get_logger("answer")

app = create_app(
    title="answer",
    description="Evidence-grounded answers with located citations, claim verification and agent traces "
    "(multi-source `/api/v1/research` and `/api/v1/ask`; trust `/v1/query`, `/v1/query/stream`, "
    "`/v1/search`, `/v1/traces/{trace_id}`, `/v1/health`).",
    routers=[research.router, trust.router],
    logger=logger,
    install_error_handlers=install_error_handlers,
    middlewares=[UsageMiddleware],  # counts each request per team, route and month (docs/usage.md)
)

# 400 validation, 404 nothing found (multi-source) or an unknown uploaded document (trust), 429 the
# per-client limit, 503 no search connector answered, 500 the multi-source seed's "Synthesis error".
_MULTI_SOURCE = (MultiSourceError, [400, 404, 429, 503])
_TRUST = (TrustErrorResponse, [400, 404, 429, 503])
document_errors(
    app,
    {
        "POST /api/v1/research": _MULTI_SOURCE,
        "POST /api/v1/ask": _MULTI_SOURCE,
        "GET /api/v1/presets": (MultiSourceError, []),
        "GET /api/v1/focus-modes": (MultiSourceError, []),
        "POST /v1/query": _TRUST,
        "POST /v1/query/stream": _TRUST,
        "POST /v1/search": _TRUST,
        "GET /v1/traces/{trace_id}": (TrustErrorResponse, [404]),
        "GET /v1/health": (TrustErrorResponse, []),
    },
)

# What the first answer imports (functions/answer/wiring.py, the routes), imported into the snapshot.
snapstart.prime_before_snapshot(
    "functions.answer.service",
    "functions.answer.stream",
    "functions.research.pipeline",
    "functions.extract.service",
    "functions.search.service",
    "functions.common.http_backend",
    "functions.common.traces",
    "functions.common.embedder",
    "functions.metering.meter",
)
