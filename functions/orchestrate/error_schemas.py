"""The agent API's error body, documented by every function that answers in it (orchestrate, extract's
`/api/tools/extract`).

A module of its own, without the error handlers' imports (the job service, the plan renderer), so that the
extract handler documents it without importing those (bench/cold_start.py);
functions/orchestrate/errors.py re-exports it.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class AgentError(BaseModel):
    """The agent API's error body (`/api/agent/*`, `/api/tools/extract`, `/api/schedules`, `/api/webhooks`,
    `/api/usage*`): `{"error": CODE, "message": ..., "field": ...}`; a 429 carries `retry_after`."""

    model_config = ConfigDict(extra="allow")
    error: str
    message: str | None = None
    field: str | None = None
    retry_after: int | None = None
