"""Which team a request belongs to, decided in one place.

Every stored thing (jobs, uploaded documents, schedules, traces, artifacts, usage) is keyed by its
team. A request's team is never taken from the client:
- on AWS (`TEAM_SOURCE=authorizer`, set by CDK on every function) it is the `team_id` the Lambda
  authorizer put in the request context (Mangum passes the event as `scope["aws.event"]`; the Lambda
  Web Adapter passes the context as the `x-amzn-request-context` header, which it writes itself);
- locally (`TEAM_SOURCE=gateway`, the default) it is the `x-team-id` header that the local gateway sets
  after checking the token (it drops any client-sent one); without `AUTH=required` a request with no
  token belongs to the default team.
A request without a team on AWS is refused (the authorizer is missing), never given a shared team.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from functions.common.errors import InvalidInput, Unauthorized
from functions.common.settings import get_settings

DEFAULT_TEAM = "team-default"
TEAM_HEADER = "x-team-id"
LWA_CONTEXT_HEADER = "x-amzn-request-context"
TEAM_ID_PATTERN = re.compile(r"^team-[a-z0-9][a-z0-9-]{0,39}$")


class MissingTeam(Unauthorized):
    """No authorizer context on a request that must have one (a deployment error, answered 401)."""


def valid_team_id(team_id: str) -> bool:
    return bool(TEAM_ID_PATTERN.match(team_id))


def checked_team(team_id: str) -> str:
    """A team id from a trusted source, checked before it becomes part of a storage key."""
    if not valid_team_id(team_id):
        raise InvalidInput("invalid team id", field="team_id")
    return team_id


def _authorizer_team(scope: Mapping[str, Any], headers: Mapping[str, str]) -> str | None:
    event = scope.get("aws.event")
    if isinstance(event, Mapping):
        authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
        found = authorizer.get("team_id") or (authorizer.get("lambda") or {}).get("team_id")
        return str(found) if found else None
    raw = headers.get(LWA_CONTEXT_HEADER)
    if raw:
        try:
            context = json.loads(raw)
        except ValueError:
            return None
        found = ((context or {}).get("authorizer") or {}).get("team_id")
        return str(found) if found else None
    return None


def team_for(scope: Mapping[str, Any], headers: Mapping[str, str]) -> str:
    """The team of an ASGI request (`scope`, lower-case `headers`); raises MissingTeam."""
    if get_settings().team_source == "authorizer":
        team = _authorizer_team(scope, headers)
        if team is None:
            raise MissingTeam("the request carries no authorizer context")
        return checked_team(team)
    return checked_team(headers.get(TEAM_HEADER) or DEFAULT_TEAM)
