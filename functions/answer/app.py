"""The answer function's FastAPI app: the multi-source face (`/api/v1/research`, `/api/v1/ask`, presets,
focus modes) and the trust face (`/v1/query`, `/v1/query/stream`, `/v1/search`, `/v1/traces`,
`/v1/health`), both over the one answer pipeline (functions/research/pipeline.py)."""

from __future__ import annotations

from functions.answer.errors import install_error_handlers
from functions.answer.routes import research, trust
from functions.common.api import create_app
from functions.common.observability import get_logger

logger = get_logger("answer")

app = create_app(
    title="answer",
    description="Evidence-grounded answers with located citations, claim verification and agent traces "
    "(multi-source `/api/v1/research` and `/api/v1/ask`; trust `/v1/query`, `/v1/query/stream`, "
    "`/v1/search`, `/v1/traces/{trace_id}`, `/v1/health`).",
    routers=[research.router, trust.router],
    logger=logger,
    install_error_handlers=install_error_handlers,
)
