"""Limits of PDF parsing (environment variables `EXTRACT_PDF_*`, documented in docs/extract.md).

Every PDF a request brings (an upload, a fetched URL, a job's source) is parsed in a worker process of
its own (`functions.extract.pdf_sandbox`), held to these limits; a PDF that exceeds one is refused.
"""

from __future__ import annotations

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MIB = 1024 * 1024


class PdfParseLimits(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="EXTRACT_PDF_", case_sensitive=False, extra="ignore")

    # Decompressed bytes of one stream (a page's content, a font, an object stream) and of all a
    # document's streams together (images excepted: text extraction does not decode them).
    max_stream_bytes: int = Field(default=64 * MIB, gt=0)
    max_document_bytes: int = Field(default=256 * MIB, gt=0)
    # Wall-clock time of one page (opening the document counts as the first page's) and of the whole
    # parse; the worker is killed when either runs out.
    page_seconds: float = Field(default=10.0, gt=0)
    parse_seconds: float = Field(default=30.0, gt=0)
    # The worker's address space (RLIMIT_AS): what one parse can take from the machine, whatever the
    # parsers do inside.
    memory_bytes: int = Field(default=448 * MIB, gt=0)
    # Parses running at once in one process; a further one waits for a free slot.
    max_concurrent: int = Field(default=2, gt=0)
