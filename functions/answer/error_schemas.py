"""The trust API's error body (`{"error": {"code", "message", "details"}}`), documented by every function
that answers in it (answer, extract's `/v1/documents`, admin).

A module of its own, without the answer schemas' other models, so that the extract and admin handlers
document it without importing those (bench/cold_start.py); functions/answer/schemas.py re-exports it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class TrustErrorDetail(BaseModel):
    code: str
    message: str
    details: dict[str, Any]


class TrustErrorResponse(BaseModel):
    error: TrustErrorDetail
