"""Lambda entry point: API Gateway proxy events into the FastAPI app."""

from __future__ import annotations

from mangum import Mangum

from functions.admin.app import app
from functions.common import snapstart

snapstart.prime_before_snapshot()  # the AWS SDK, imported by the first request otherwise
handler = Mangum(app, lifespan="off")
