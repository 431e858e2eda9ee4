"""Request-field types shared by every API's request models, and the bounded request id."""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, StrictInt


def integral_number(value: object) -> object:
    """JSON has one number type: 5.0 is the integer 5 (as JSON Schema says), "5" and true stay errors."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# an integer request field under strict validation (strings and booleans are errors, 5.0 is 5)
JsonInt = Annotated[int, BeforeValidator(integral_number)]
# the same where the model itself is not strict
JsonStrictInt = Annotated[StrictInt, BeforeValidator(integral_number)]


REQUEST_ID_MAX_CHARS = 128
_SAFE_REQUEST_ID = re.compile(rf"[\x20-\x7e]{{1,{REQUEST_ID_MAX_CHARS}}}")  # visible ASCII and space


def bounded_request_id(value: str | None) -> str:
    """A client's `X-Request-Id` when it is 1 to 128 characters of visible ASCII or spaces; anything else
    (absent, longer, control characters such as CR, LF or tab, non-ASCII) is replaced by a new UUID,
    since the id is echoed in a header, written to every log line and stored with traces."""
    if value is not None and _SAFE_REQUEST_ID.fullmatch(value):
        return value
    return str(uuid.uuid4())


# JSON bodies and fields: refused before they are used (json.loads recurses once per level, and a lone
# surrogate escape decodes to a str that no UTF-8 encoder, DynamoDB's or a tokenizer's, can write back)
MAX_JSON_DEPTH = 64
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_JSON_BRACKET = re.compile(rb"[\[\]{}]")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")  # a \ud800-\udfff escape, paired or not

Location = tuple[str | int, ...]


@dataclass(frozen=True)
class JsonProblem:
    message: str
    location: Location  # where in the document: () for the whole of it, ("query",) for a member


def json_text_problem(raw: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> JsonProblem | None:
    """Why a JSON text must be refused (nested deeper than `max_depth`, checked before it is parsed; or a
    string with a lone UTF-16 surrogate), or None, also for a text that is not JSON at all (the parser
    that comes next says so)."""
    if isinstance(raw, str):
        try:
            raw = raw.encode("utf-8")
        except UnicodeEncodeError:
            return JsonProblem(_LONE_SURROGATE, ())
    if _deeper_than(raw, max_depth):
        return JsonProblem(f"JSON must not be nested more than {max_depth} levels deep", ())
    if not _SURROGATE_ESCAPE.search(raw):
        return None
    try:
        document = json.loads(raw)  # at most `max_depth` deep, checked above
    except ValueError:
        return None
    location = _lone_surrogate_at(document)
    return JsonProblem(_LONE_SURROGATE, location) if location is not None else None


_LONE_SURROGATE = "text must not contain a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)"


def _deeper_than(raw: bytes, max_depth: int) -> bool:
    depth = 0
    for bracket in _JSON_BRACKET.finditer(_JSON_STRING.sub(b'""', raw)):
        if bracket.group() in (b"[", b"{"):
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth = max(0, depth - 1)
    return False


def _lone_surrogate_at(value: Any, location: Location = ()) -> Location | None:
    if isinstance(value, str):
        return None if _encodable(value) else location
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _lone_surrogate_at(item, (*location, index))
            if found is not None:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            if not _encodable(key):
                return (*location, key.encode("utf-8", "backslashreplace").decode("ascii"))
            found = _lone_surrogate_at(item, (*location, key))
            if found is not None:
                return found
    return None


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
