"""Each app's OpenAPI document states every status code an operation can answer, with its error body.

`document_errors(app, operations)` replaces FastAPI's generated 422 (every app answers 400 for a request
that fails validation, in its seed's format) by the statuses listed per operation, each with the body
schema of the face's error model (a pydantic model in `functions/common/faces/`). Every operation must
be listed: an unlisted one fails the document, so a new route cannot ship with an undocumented contract.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

DESCRIPTIONS = {
    400: "Invalid request: the body, query or path failed validation",
    401: "Missing or invalid bearer token (when the gateway enforces team tokens, `AUTH=required`)",
    402: "The team's budget is exhausted",
    404: "Not found",
    409: "Conflict with the resource's current state",
    413: "Payload too large",
    415: "Unsupported media type: the upload is of a kind the route does not read",
    422: "The document could not be processed",
    429: "Rate limit exceeded (see Retry-After)",
    500: "Internal error",
    502: "An upstream service answered badly",
    503: "A service this route depends on is unavailable",
    504: "An upstream service timed out",
}

# statuses every routed operation can answer: the gateway's 401 under AUTH=required, the catch-all 500
ALWAYS = (401, 500)

ErrorDocs = tuple[type[BaseModel], Iterable[int]]


def _component(schemas: dict[str, Any], model: type[BaseModel]) -> str:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, definition in schema.pop("$defs", {}).items():
        schemas.setdefault(name, definition)
    schemas[model.__name__] = schema
    return f"#/components/schemas/{model.__name__}"


def _referenced(spec: Any) -> set[str]:
    refs: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                refs.add(ref.rsplit("/", 1)[-1])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return refs


def document_errors(app: FastAPI, operations: Mapping[str, ErrorDocs]) -> Callable[[], dict[str, Any]]:
    """Install an `app.openapi` that documents each "METHOD /path" operation's error statuses."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        spec = get_openapi(
            title=app.title, version=app.version, description=app.description, routes=app.routes
        )
        schemas: dict[str, Any] = spec.setdefault("components", {}).setdefault("schemas", {})
        for path, item in spec.get("paths", {}).items():
            for method, operation in item.items():
                key = f"{method.upper()} {path}"
                if key not in operations:
                    raise KeyError(f"{app.title}: {key} does not document its error statuses")
                model, statuses = operations[key]
                responses: dict[str, Any] = operation.setdefault("responses", {})
                responses.pop("422", None)  # validation failures are 400s in every family's format
                ref = _component(schemas, model)
                for status in sorted({*statuses, *ALWAYS}):
                    responses[str(status)] = {
                        "description": DESCRIPTIONS[status],
                        "content": {"application/json": {"schema": {"$ref": ref}}},
                    }
        used = _referenced(spec.get("paths", {}))
        for name in ("HTTPValidationError", "ValidationError"):
            if name not in used and name not in _referenced({k: v for k, v in schemas.items() if k != name}):
                schemas.pop(name, None)
        app.openapi_schema = spec
        return spec

    app.openapi = openapi  # type: ignore[method-assign]
    return openapi


def error_responses(model: type[BaseModel], statuses: Iterable[int]) -> dict[int | str, dict[str, Any]]:
    """A route's `responses` entries for its error statuses, in order. `document_errors` rewrites each
    with its DESCRIPTIONS text and the face's error body; the route's entries set only the statuses'
    order in the document and keep `model` among its schemas."""
    return {status: {"model": model, "description": DESCRIPTIONS[status]} for status in statuses}
