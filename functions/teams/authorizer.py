"""The API Gateway (REST) Lambda authorizer, REQUEST type: a team's credential -> an IAM policy for its calls.

API Gateway calls `handler` with `{"type": "REQUEST", "methodArn": "arn:aws:execute-api:<region>:
<account>:<api_id>/<stage>/<METHOD>/<path>", "headers": {...}, ...}` (header names as the client sent
them) for every route except the health checks and the IAM-authorised admin routes (infra/components/
api.py). A team calls in one of two styles, and both end in its team and its usage plan:

- `Authorization: Bearer <token>` (or one of our `rt_` tokens sent as `x-api-key`): a live token
  (`TeamService.resolve`) is the team; `usageIdentifierKey` is the team's own API key
  (`TeamService.usage_key`), so the usage plan of its tier throttles and meters bearer callers too. An
  `x-api-key` sent next to a bearer token is ignored: the token decides the team, and the team's own key
  is what is metered (a team cannot spend another team's quota by sending its key);
- `x-api-key: <the team's API Gateway key>` alone: the key (`TeamService.resolve_api_key`, by the SHA-256
  of its value) is the team, and the usage identifier is that key.

Allowed -> an Allow policy on `execute-api:Invoke` for every method and path of the API's stage
(`.../<api_id>/<stage>/*/*`), `principalId` = the team id, `context` = `{"team_id", "tier"}` (read
downstream as `requestContext.authorizer.team_id`; functions/common/tenancy.py). API Gateway's result cache
is off (no identity source can say "either header"; docs/teams.md), so every request is decided afresh and
a revoked token is refused from the next request on.

Refused -> `Exception("Unauthorized")`, which API Gateway answers with 401: a missing, malformed, unknown or
revoked token, an API key that is not a team's, an `Authorization` header that is not a bearer token (with
or without an `x-api-key`). A team without an API key (created before keys existed, or where there are
none) is allowed without a usage identifier; on AWS, where every method requires a key, API Gateway then
answers 403. Credentials are never logged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

from functions.common import snapstart
from functions.common.observability import get_logger
from functions.teams import wiring
from functions.teams.models import Team
from functions.teams.tokens import TOKEN_PREFIX, bearer_token

logger = get_logger("authorizer")
snapstart.prime_before_snapshot()  # the AWS SDK, imported by the first request otherwise

UNAUTHORIZED = "Unauthorized"  # the exact message API Gateway turns into a 401

Style = Literal["token", "api_key"]


class TeamResolver(Protocol):
    def resolve(self, token: str | None) -> Team | None: ...

    def resolve_api_key(self, api_key: str | None) -> Team | None: ...

    def usage_key(self, team_id: str) -> str | None: ...


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


def credential(headers: Mapping[str, Any] | None) -> tuple[Style, str | None] | None:
    """Which style the request uses and its credential (None inside: malformed); None: no credential."""
    lowered = _lowered(headers)
    if "authorization" in lowered:
        return "token", bearer_token(lowered["authorization"])
    api_key = lowered.get("x-api-key") or None
    if api_key is None:
        return None
    if api_key.startswith(TOKEN_PREFIX):
        return "token", api_key  # one of our tokens in the API-key header
    return "api_key", api_key


def authorize(headers: Mapping[str, Any] | None, method_arn: str, service: TeamResolver) -> dict[str, Any]:
    """The authorizer's answer for a request's headers; raises Exception("Unauthorized") to refuse."""
    resource = stage_resource(method_arn)
    presented = credential(headers)
    style, secret = presented if presented is not None else (None, None)
    team: Team | None = None
    usage_key: str | None = None
    if style == "token" and secret:
        team = service.resolve(secret)
        usage_key = service.usage_key(team.team_id) if team is not None else None
    elif style == "api_key" and secret:
        team = service.resolve_api_key(secret)
        usage_key = secret
    if team is None:
        reason = "no credential" if presented is None else f"unknown, revoked or malformed {style}"
        logger.info("refused", reason=reason)
        raise Exception(UNAUTHORIZED)
    answer: dict[str, Any] = {
        "principalId": team.team_id,
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": resource}],
        },
        "context": {"team_id": team.team_id, "tier": team.tier},
    }
    if usage_key is not None:
        answer["usageIdentifierKey"] = usage_key
    else:
        logger.warning("team has no API key: usage plans cannot meter it", team_id=team.team_id)
    logger.info("allowed", team_id=team.team_id, tier=team.tier, style=style)
    return answer


def handler(event: Mapping[str, Any], context: object) -> dict[str, Any]:
    """The Lambda entry point; the teams are read through the composition root (DynamoDB)."""
    return authorize(event.get("headers"), str(event.get("methodArn", "")), wiring.team_service())
