"""Lambda entry point through Mangum (API Gateway proxy events into the FastAPI app).

On AWS the function runs this app under the Lambda Web Adapter (uvicorn, response streaming), so that
`/v1/query/stream` streams; this handler serves it buffered, for a deployment without the adapter.
"""

from __future__ import annotations

from mangum import Mangum

from functions.answer.app import app

handler = Mangum(app, lifespan="off")
