"""The knowledge-base seed's message for the first problem FastAPI/pydantic found in a request, one
function per field of the request bodies."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from functions.rag.api_models import K_MAX, K_MIN, MAX_DOCUMENT_IDS

_NOT_AN_OBJECT = ("json_invalid", "model_attributes_type", "dict_type", "model_type")


def _query(kind: str, loc: list[Any], error: Any, valid_types: Sequence[str]) -> str:
    if kind == "missing":
        return "query is required"
    if kind == "string_type":
        return "query must be a string"
    if kind == "value_error":
        return str(error.get("msg", "")).removeprefix("Value error, ")
    return "query must be at least 3 characters"


def _k(kind: str, loc: list[Any], error: Any, valid_types: Sequence[str]) -> str:
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return "k must be an integer"
    return f"k must be between {K_MIN} and {K_MAX}"


def _traverse_types(kind: str, loc: list[Any], error: Any, valid_types: Sequence[str]) -> str:
    if len(loc) >= 2 and kind == "enum":
        given = error.get("input")
        return f"traverse_types contains invalid value: '{given}'. Valid values: [{', '.join(valid_types)}]"
    if len(loc) >= 2:
        return "traverse_types values must be strings"
    return "traverse_types must be an array"


def _filters(kind: str, loc: list[Any], error: Any, valid_types: Sequence[str]) -> str:
    if len(loc) < 2:
        return "filters must be an object"
    key = str(loc[1])
    if kind == "extra_forbidden":
        return f"filter '{key}' is not supported"
    if key == "page_number":
        return "filter 'page_number' must be an integer"
    return f"filter '{key}' must be a string"


def _document_ids(kind: str, loc: list[Any], error: Any, valid_types: Sequence[str]) -> str:
    messages = {
        "missing": "document_ids is required",
        "too_short": "document_ids must contain at least 1 id",
        "too_long": f"document_ids must contain at most {MAX_DOCUMENT_IDS} ids",
    }
    if kind in messages:
        return messages[kind]
    if len(loc) >= 2:
        return "document_ids must contain only strings"
    return "document_ids must be an array of ids"


_BY_FIELD: dict[str, Callable[[str, list[Any], Any, Sequence[str]], str]] = {
    "query": _query,
    "k": _k,
    "traverse_types": _traverse_types,
    "filters": _filters,
    "document_ids": _document_ids,
}


def validation_message(errors: Sequence[Any], valid_types: Sequence[str]) -> str:
    """`valid_types`: the values the route's `traverse_types` accepts, named when one is not."""
    if not errors:
        return "request body is invalid"
    error = errors[0]
    loc = [part for part in error.get("loc", ()) if part != "body"]
    kind = str(error.get("type", ""))
    if not loc or kind in _NOT_AN_OBJECT:
        if loc and loc[0] == "filters":
            return "filters must be an object"
        return "request body must be a JSON object"
    field = str(loc[0])
    message = _BY_FIELD.get(field)
    return message(kind, loc, error, valid_types) if message is not None else f"{field} is invalid"
