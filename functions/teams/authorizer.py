"""The API Gateway (REST) Lambda authorizer, REQUEST type: a team's token -> an IAM policy for its calls.

API Gateway calls `handler` with `{"type": "REQUEST", "methodArn": "arn:aws:execute-api:<region>:
<account>:<api_id>/<stage>/<METHOD>/<path>", "headers": {...}, ...}` (header names as the client sent
them). The token is read from `Authorization: Bearer <token>`, or, when that header is absent, from
`x-api-key` (the existing style):

- a live token (`TeamService.resolve`) -> an Allow policy on `execute-api:Invoke` for every method and
  path of the API's stage (`.../<api_id>/<stage>/*/*`: API Gateway caches the decision per token, and
  the cached policy must cover the team's other routes too), `principalId` = the team id, `context` =
  `{"team_id", "tier"}` (read downstream as `$context.authorizer.team_id`), and `usageIdentifierKey` =
  the request's API key when it sent a real one (`apiKeySource: AUTHORIZER`: usage plans still apply);
- a missing, malformed, unknown or revoked token -> `Exception("Unauthorized")`, which API Gateway
  answers with 401. An `Authorization` header that is not a bearer token is refused, with or without an
  `x-api-key`.

API keys do not map to teams yet: an `x-api-key` that is one of our tokens (`rt_...`) is resolved as a
token, any other API key alone is refused. The mapping of API keys to teams (and a team's own usage
identifier key for bearer-only calls) comes in a later slice, with the authorizer's infrastructure.
The token is never logged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from functions.common.observability import get_logger
from functions.teams import wiring
from functions.teams.models import Team
from functions.teams.tokens import TOKEN_PREFIX, bearer_token

logger = get_logger("authorizer")

UNAUTHORIZED = "Unauthorized"  # the exact message API Gateway turns into a 401


class TokenResolver(Protocol):
    def resolve(self, token: str | None) -> Team | None: ...


def stage_resource(method_arn: str) -> str:
    """`arn:aws:execute-api:r:a:api/stage/GET/x/y` -> `arn:aws:execute-api:r:a:api/stage/*/*`."""
    parts = method_arn.split(":", 5)
    if len(parts) != 6 or parts[0] != "arn" or parts[2] != "execute-api":
        raise ValueError(f"not an execute-api method ARN: {method_arn!r}")
    api_id, _, rest = parts[5].partition("/")
    stage = rest.split("/", 1)[0]
    if not api_id or not stage:
        raise ValueError(f"not an execute-api method ARN: {method_arn!r}")
    return ":".join(parts[:5]) + f":{api_id}/{stage}/*/*"


def _lowered(headers: Mapping[str, Any] | None) -> dict[str, str]:
    return {str(name).lower(): value for name, value in (headers or {}).items() if isinstance(value, str)}


def _credentials(headers: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """(the token to resolve, the request's API key to meter by); (None, ...) when there is no token."""
    lowered = _lowered(headers)
    api_key = lowered.get("x-api-key") or None
    if "authorization" in lowered:
        # An API key sent next to a bearer token is a real API key: usage plans meter it.
        return bearer_token(lowered["authorization"]), api_key
    if api_key is not None and api_key.startswith(TOKEN_PREFIX):
        return api_key, None  # one of our tokens in the API-key header: not an API Gateway key
    return None, None


def authorize(headers: Mapping[str, Any] | None, method_arn: str, service: TokenResolver) -> dict[str, Any]:
    """The authorizer's answer for a request's headers; raises Exception("Unauthorized") to refuse."""
    resource = stage_resource(method_arn)
    token, api_key = _credentials(headers)
    team = service.resolve(token) if token else None
    if team is None:
        logger.info("refused", reason="no token" if token is None else "unknown or revoked token")
        raise Exception(UNAUTHORIZED)
    answer: dict[str, Any] = {
        "principalId": team.team_id,
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": resource}],
        },
        "context": {"team_id": team.team_id, "tier": team.tier},
    }
    if api_key is not None:
        answer["usageIdentifierKey"] = api_key
    logger.info("allowed", team_id=team.team_id, tier=team.tier)
    return answer


def handler(event: Mapping[str, Any], context: object) -> dict[str, Any]:
    """The Lambda entry point; the teams are read through the composition root (DynamoDB)."""
    return authorize(event.get("headers"), str(event.get("methodArn", "")), wiring.team_service())
