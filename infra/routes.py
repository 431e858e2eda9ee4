"""The route table of the API Gateway, read from the functions' own FastAPI apps.

Every (method, path) that a function app declares becomes one API Gateway method on that path,
integrated with that function, so the deployed routes are exactly the apps' routes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute

ROUTED_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
_CONVERTER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::([a-z]+))?\}")


class RouteConflict(ValueError):
    pass


@dataclass(frozen=True, order=True)
class Route:
    path: str  # API Gateway form: `{id}` parameters, `{name+}` for a FastAPI `{name:path}`
    method: str
    family: str


def gateway_path(fastapi_path: str) -> str:
    def convert(match: re.Match[str]) -> str:
        name, converter = match.group(1), match.group(2)
        return "{" + name + ("+" if converter == "path" else "") + "}"

    return _CONVERTER.sub(convert, fastapi_path)


def routes_of(apps: Mapping[str, FastAPI]) -> list[Route]:
    owner: dict[tuple[str, str], str] = {}
    for family, app in apps.items():
        for fastapi_path, methods in _api_routes(app.routes, ""):
            path = gateway_path(fastapi_path)
            for method in sorted(methods & ROUTED_METHODS):
                key = (path, method)
                if key in owner and owner[key] != family:
                    raise RouteConflict(f"{method} {path} is declared by both {owner[key]} and {family}")
                owner[key] = family
    routes = sorted(Route(path, method, family) for (path, method), family in owner.items())
    _check_parameter_names(routes)
    return routes


def _api_routes(routes: Sequence[BaseRoute], prefix: str) -> Iterator[tuple[str, set[str]]]:
    """(path, methods) of every APIRoute, descending into included routers (FastAPI >= 0.16x keeps an
    `include_router` as one lazy route that holds the original router and the prefix it was given)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield prefix + route.path, set(route.methods or ())
            continue
        included = getattr(route, "original_router", None)
        if included is not None:
            context = getattr(route, "include_context", None)
            yield from _api_routes(included.routes, prefix + str(getattr(context, "prefix", "") or ""))


def _check_parameter_names(routes: list[Route]) -> None:
    """API Gateway allows one `{parameter}` child per resource: `/x/{id}` and `/x/{key}` cannot coexist."""
    variable_child: dict[str, str] = {}
    for route in routes:
        segments = [segment for segment in route.path.split("/") if segment]
        for depth, segment in enumerate(segments):
            if segment.startswith("{"):
                parent = "/" + "/".join(segments[:depth])
                existing = variable_child.setdefault(parent, segment)
                if existing != segment:
                    raise RouteConflict(f"{parent} has two parameter children: {existing} and {segment}")
