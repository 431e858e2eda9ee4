"""Lambda entry point: API Gateway proxy events into the FastAPI app."""

from __future__ import annotations

from mangum import Mangum

from functions.admin.app import app

handler = Mangum(app, lifespan="off")
