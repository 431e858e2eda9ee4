"""Reference checking's refusals (functions/answer/app.py words them on the trust face)."""

from __future__ import annotations

from functions.common.errors import InvalidInput


class ReferencesTooLarge(InvalidInput):
    """More references than one check takes, or an upload over its byte limit: 413."""

    code = "payload_too_large"


class UnsupportedUpload(InvalidInput):
    """An uploaded file that is neither a PDF nor a `.bib`: 415."""

    code = "unsupported_media_type"
