"""Lambda entry point: API Gateway proxy events into the FastAPI app."""

from __future__ import annotations

from mangum import Mangum

from functions.common import snapstart
from functions.extract.app import app

handler = Mangum(app, lifespan="off")

# What the routes import on first use (the cold start without SnapStart), imported into the snapshot.
snapstart.prime_before_snapshot(
    "functions.extract.service",
    "functions.common.outbound.http_backend",
    "pypdfium2",
    "pypdfium2.raw",
    "rapidfuzz.fuzz",
    "feedparser",
    "tenacity",
)
