"""A public API face: the table that maps errors to the error body its contract documents (each face's
module holds that body's pydantic model, which its apps document with `functions.common.web.openapi`).

A table is an ordered list of rules, `(exception type, reply)`: the first rule whose type the error is an
instance of answers (`answers(...)` builds them from replies, each typed by the error it takes). A family whose seed words an error differently on a face (the extraction tool's
codes on the agent face, say) declares those rules in its composition root with `Face.with_rules`; they
are tried before the face's own. No body ever carries a traceback.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, get_type_hints

from fastapi.responses import JSONResponse


@dataclass(frozen=True)
class ErrorReply:
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)

    def response(self) -> JSONResponse:
        return JSONResponse(self.body, status_code=self.status, headers=self.headers or None)


# Each rule's reply takes the error of its own type (typed `Any`: one table holds rules of many types).
Reply = Callable[[Any], ErrorReply]
Rule = tuple[type[Exception], Reply]
# (status, code in snake case, title, message) -> the face's body for an error the gateway answers itself
Refusal = Callable[[int, str, str, str], ErrorReply]


def answers(*replies: Reply) -> tuple[Rule, ...]:
    """The rules of `replies`, in their order: each answers the error type its parameter is annotated with."""
    return tuple((_kind_answered(reply), reply) for reply in replies)


def _kind_answered(reply: Reply) -> type[Exception]:
    kind = next(hint for name, hint in get_type_hints(reply).items() if name != "return")
    if not (isinstance(kind, type) and issubclass(kind, Exception)):
        raise TypeError(f"{reply.__qualname__} must take an exception type, not {kind!r}")
    return kind


def reraise(exc: BaseException) -> ErrorReply:
    """No reply of the face's own: the server answers its bare 500."""
    raise exc


@dataclass(frozen=True)
class Face:
    name: str
    prefixes: tuple[str, ...]  # the paths it answers, for requests that match no route
    rules: tuple[Rule, ...]
    otherwise: Reply = reraise  # every other error
    refusal: Refusal | None = None  # for the local gateway's own 401 and 413
    roots: tuple[str, ...] = ()  # paths of the face besides those under its prefixes (`/v1` itself)

    def serves(self, path: str) -> bool:
        return path.startswith(self.prefixes) or path in self.roots

    def reply(self, exc: BaseException) -> ErrorReply:
        """The reply of the first rule that fits, else `otherwise`'s."""
        for kind, reply in self.rules:
            if isinstance(exc, kind):
                return reply(exc)
        return self.otherwise(exc)

    def with_rules(self, name: str, rules: Sequence[Rule], otherwise: Reply | None = None) -> Face:
        """The face as one family words it: `rules` first, then the face's own; `otherwise` for the rest."""
        return replace(self, name=name, rules=(*rules, *self.rules), otherwise=otherwise or self.otherwise)


def validation_field(error: Any, skipped: Sequence[str] = ("body", "query", "path", "header")) -> str:
    """`("body", "options", "max_sources")` -> "options.max_sources": the leading part only says where."""
    location = [str(part) for part in error.get("loc", ())]
    if location and location[0] in skipped:
        location = location[1:]
    return ".".join(location)


def retry_seconds(retry_after: float) -> int:
    """A Retry-After in whole seconds, at least one."""
    return max(1, math.ceil(retry_after))


def describe_validation_errors(errors: Any) -> str:
    """'filters.year_range.start: Value error, must be between 1900 and 2026; max_results: ...'"""
    parts = []
    for error in errors:
        location = [str(p) for p in error.get("loc", ()) if p != "body"]
        field = ".".join(location) or "body"
        message = str(error.get("msg", "invalid value"))
        if error.get("type") == "json_invalid":
            field, message = "body", "is not valid JSON"
        elif error.get("type") == "missing":
            message = "is required"
        parts.append(f"{field}: {message}")
    return "; ".join(dict.fromkeys(parts))


def storage_outage_message(outage: str) -> str:
    return f"a storage service is unavailable ({outage}); retry shortly"
