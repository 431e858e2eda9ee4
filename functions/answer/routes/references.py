"""`POST /v1/references/check`: whether each reference exists as cited (docs/references.md).

The body is JSON (`{"references": [...]}`) or a multipart upload of one `file`: a PDF, whose reference
section is read, or a `.bib` file.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from functions.answer.routes import ServiceDep
from functions.answer.schemas import (
    CheckedReference,
    MatchedWork,
    ReferenceCheckRequest,
    ReferenceCheckResponse,
)
from functions.answer.wiring import reference_checking
from functions.common.errors import InvalidInput
from functions.common.settings import get_settings
from functions.common.web.api import TeamId, client_identity
from functions.references.errors import ReferencesTooLarge, UnsupportedUpload

if TYPE_CHECKING:
    from functions.common.models import WorkMetadata
    from functions.references.judging import Verdict
    from functions.references.parsing import CitedReference

router = APIRouter(prefix="/v1", tags=["references"])
UPLOAD_SCHEMA = {
    "type": "object",
    "required": ["file"],
    "properties": {"file": {"type": "string", "format": "binary", "description": "A PDF or a .bib file"}},
}
REQUEST_BODY = {
    "required": True,
    "content": {
        "application/json": {"schema": ReferenceCheckRequest.model_json_schema()},
        "multipart/form-data": {"schema": UPLOAD_SCHEMA},
    },
}


async def _json_references(request: Request) -> list[CitedReference]:
    from functions.references.parsing import parse_references

    try:
        body = ReferenceCheckRequest.model_validate_json(await request.body())
    except ValidationError as exc:
        raise RequestValidationError(
            [{**error, "loc": ("body", *error["loc"])} for error in exc.errors(include_url=False)]
        ) from exc
    return parse_references(body.references)


async def _uploaded_references(request: Request) -> list[CitedReference]:
    from functions.references.uploads import references_from_upload

    limit = get_settings().upload_max_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit + 64 * 1024:
        raise ReferencesTooLarge(f"upload of {declared} bytes exceeds the {limit} byte limit", field="file")
    async with request.form() as form:  # other fields are ignored, as unknown JSON fields are
        upload = form.get("file")
        if upload is None or isinstance(upload, str):
            raise InvalidInput("Missing file field: the multipart body must carry one `file`", field="file")
        data = await upload.read(limit + 1)
        if len(data) > limit:
            raise ReferencesTooLarge(f"file exceeds the {limit} byte limit", field="file")
        name, kind = upload.filename or "", upload.content_type or ""
    return await asyncio.to_thread(references_from_upload, name, kind, data)


async def read_references(request: Request) -> list[CitedReference]:
    media_type = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media_type == "application/json":
        return await _json_references(request)
    if media_type == "multipart/form-data":
        return await _uploaded_references(request)
    raise UnsupportedUpload(
        f"Content-Type {media_type or '(none)'} is not read here: send application/json or multipart/form-data"
    )


def _matched(record: WorkMetadata | None) -> MatchedWork | None:
    if record is None:
        return None
    url = f"https://doi.org/{record.doi}" if record.doi else record.url
    return MatchedWork(
        title=record.title,
        authors=list(record.authors),
        year=record.year,
        venue=record.venue,
        doi=record.doi,
        url=url,
    )


def checked(reference: CitedReference, verdict: Verdict) -> CheckedReference:
    return CheckedReference(
        input=reference.input,
        status=verdict.status,
        matched=_matched(verdict.matched),
        confidence=verdict.confidence,
        notes=verdict.notes,
    )


async def check(references: Sequence[CitedReference], team: str) -> ReferenceCheckResponse:
    """The route's body for parsed references (the MCP tool `check_references` answers the same)."""
    async with reference_checking() as checker:
        verdicts = await checker.check(references, team=team)
    return ReferenceCheckResponse(
        references=[
            checked(reference, verdict) for reference, verdict in zip(references, verdicts, strict=True)
        ]
    )


@router.post(
    "/references/check",
    response_model=ReferenceCheckResponse,
    openapi_extra={"requestBody": REQUEST_BODY},
)
async def check_references(request: Request, service: ServiceDep, team: TeamId) -> Any:
    """Each reference (formatted, a bare DOI or BibTeX; or those of an uploaded PDF or `.bib`) looked up by
    DOI at OpenAlex and Crossref, then by a bibliographic search: `verified`, `doi_title_mismatch`,
    `not_found`, `retracted` or `ambiguous`, with the matched record, a confidence and notes."""
    await service.admit(client_identity(request))
    return await check(await read_references(request), team)
