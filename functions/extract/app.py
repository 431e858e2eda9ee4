"""The extract function's FastAPI app (served by Lambda through Mangum, locally by the gateway)."""

from __future__ import annotations

from fastapi import FastAPI

from functions.common.api import create_app
from functions.common.observability import get_logger

logger = get_logger("extract")


def _no_error_handlers(app: FastAPI) -> None:
    return None


app = create_app(
    title="extract",
    description="extract API",
    routers=[],
    logger=logger,
    install_error_handlers=_no_error_handlers,
)
