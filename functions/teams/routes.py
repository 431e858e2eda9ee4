"""The admin routes: create teams, issue and revoke their tokens (served by the admin app).

    POST   /admin/teams                               {"name", "tier"} -> 201 {"team_id", "token_id", "token"}
                                                      (+ "api_key" on AWS: the team's API Gateway key)
    POST   /admin/teams/{team_id}/tokens              -> 201 {"token_id", "token"}
    DELETE /admin/teams/{team_id}/tokens/{token_id}   -> 204
    PATCH  /admin/teams/{team_id}                     {"monthly_budget_usd": number|null} -> 200 the team
    POST   /admin/teams/{team_id}/webhook-secret      -> 201 {"webhook_secret"} (new, or rotated)
    PUT    /admin/teams/{team_id}/upstream-keys/{provider}  {"api_key"} -> 204 (the team's own key)
    DELETE /admin/teams/{team_id}/upstream-keys/{provider}  -> 204
    GET    /admin/teams/{team_id}/upstream-keys       -> 200 {"providers": [...]} (never the keys)

Every route needs the admin credential. Locally (`ADMIN_AUTH=token`, the default) that is
`Authorization: Bearer <ADMIN_TOKEN>`; with ADMIN_TOKEN unset the routes are disabled (503). On AWS
(`ADMIN_AUTH=iam`) API Gateway IAM-authorises the caller before the function runs, so the app trusts it.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Coroutine
from typing import Annotated, Any, cast

from fastapi import APIRouter, Depends, Request, Response
from fastapi.routing import APIRoute
from fastapi.security import HTTPBearer
from pydantic import AfterValidator, BaseModel, Field

from functions.common.errors import DomainError
from functions.teams.models import NAME_MAX_CHARS, UPSTREAM_KEY_MAX_CHARS, Tier, UpstreamKeyProvider
from functions.teams.service import TeamService
from functions.teams.tokens import bearer_token
from functions.teams.wiring import admin_auth, admin_token, team_service

MAX_BUDGET_USD = 1_000_000_000.0  # a monthly budget: at most a billion dollars


class Unauthorized(DomainError):
    """Missing or wrong admin credential (401)."""

    code = "unauthorized"


class AdminDisabled(DomainError):
    """No admin credential is configured, so nobody may use the admin routes (503)."""

    code = "admin_disabled"


def require_admin(authorization: str | None) -> None:
    """Raise unless `authorization` carries the admin credential (or API Gateway already checked it)."""
    if admin_auth() == "iam":
        return
    expected = admin_token()
    if expected is None:
        raise AdminDisabled("the admin routes are disabled: ADMIN_TOKEN is not set")
    presented = bearer_token(authorization)
    if presented is None or not hmac.compare_digest(presented.encode(), expected.encode()):
        raise Unauthorized("a valid admin token is required (Authorization: Bearer <ADMIN_TOKEN>)")


class AdminRoute(APIRoute):
    """Checks the admin credential before anything else, the request body included (a dependency would
    run only after FastAPI has parsed the body, so a stranger's malformed body would answer 400)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            require_admin(request.headers.get("authorization"))
            return await handler(request)

        return guarded


# Only declares the scheme in the OpenAPI document (the docs' "Authorize" button); AdminRoute checks it.
_admin_bearer = HTTPBearer(auto_error=False, scheme_name="AdminToken", description="ADMIN_TOKEN")


def get_team_service() -> TeamService:
    return team_service()


Service = Annotated[TeamService, Depends(get_team_service)]

router = APIRouter(
    prefix="/admin/teams", tags=["admin"], route_class=AdminRoute, dependencies=[Depends(_admin_bearer)]
)


class CreateTeamRequest(BaseModel):
    name: str = Field(
        max_length=NAME_MAX_CHARS,
        description="the team's display name (not empty)",
        json_schema_extra={"pattern": r"\S"},
    )
    tier: Tier = Field(description="usage tier: basic, standard or premium")


class CreatedTeam(BaseModel):
    team_id: str
    token_id: str
    token: str = Field(description="the team's first bearer token; shown once, stored only as a hash")
    api_key: str | None = Field(
        default=None,
        description="on AWS only: the team's API key (x-api-key), in its tier's usage plan; shown once",
    )


class IssuedToken(BaseModel):
    token_id: str
    token: str = Field(description="a bearer token of the team; shown once, stored only as a hash")


@router.post(
    "",
    status_code=201,
    response_model=CreatedTeam,
    response_model_exclude_none=True,  # `api_key` only when one was created (on AWS)
    summary="Create a team with its first token",
)
def create_team(body: CreateTeamRequest, service: Service) -> CreatedTeam:
    created = service.onboard(body.name, body.tier)
    return CreatedTeam(
        team_id=created.team.team_id, token_id=created.token_id, token=created.token, api_key=created.api_key
    )


class TeamPatch(BaseModel):
    # bounded so that DynamoDB can store it (numbers over 1e125 overflow there: it was a 500), and kept
    # to the micro-dollar (smaller fractions underflow there)
    monthly_budget_usd: (
        Annotated[
            float,
            Field(ge=0, le=MAX_BUDGET_USD, allow_inf_nan=False),
            AfterValidator(lambda usd: round(usd, 6)),
        ]
        | None
    ) = Field(
        description="what the team may spend a month, in USD (docs/usage.md); null removes the budget",
    )


class TeamView(BaseModel):
    team_id: str
    name: str
    tier: Tier
    created_at: str
    monthly_budget_usd: float | None


@router.patch("/{team_id}", response_model=TeamView, summary="Set or remove the team's monthly budget")
def patch_team(team_id: str, body: TeamPatch, service: Service) -> TeamView:
    team = service.set_monthly_budget(team_id, body.monthly_budget_usd)
    return TeamView.model_validate(team, from_attributes=True)


@router.post("/{team_id}/tokens", status_code=201, response_model=IssuedToken, summary="Issue a new token")
def issue_token(team_id: str, service: Service) -> IssuedToken:
    token_id, token = service.issue_token(team_id)
    return IssuedToken(token_id=token_id, token=token)


@router.delete("/{team_id}/tokens/{token_id}", status_code=204, summary="Revoke a token")
def revoke_token(team_id: str, token_id: str, service: Service) -> Response:
    service.revoke_token(team_id, token_id)
    return Response(status_code=204)


class WebhookSecret(BaseModel):
    webhook_secret: str = Field(
        description="the key that signs the team's webhooks (X-Research-Signature); replaces any earlier one"
    )


@router.post(
    "/{team_id}/webhook-secret",
    status_code=201,
    response_model=WebhookSecret,
    summary="Create or rotate the team's webhook signing secret",
)
def rotate_webhook_secret(team_id: str, service: Service) -> WebhookSecret:
    return WebhookSecret(webhook_secret=service.rotate_webhook_secret(team_id))


class UpstreamKey(BaseModel):
    api_key: str = Field(
        min_length=1,
        max_length=UPSTREAM_KEY_MAX_CHARS,
        pattern=r"^[!-~]+$",
        description="the team's own API key at the provider (printable ASCII, no spaces); never shown again",
    )


class UpstreamKeyProviders(BaseModel):
    providers: list[UpstreamKeyProvider] = Field(description="where the team has a key of its own")


@router.put(
    "/{team_id}/upstream-keys/{provider}",
    status_code=204,
    summary="Set the team's own API key at an upstream (its own budget there)",
)
def put_upstream_key(
    team_id: str, provider: UpstreamKeyProvider, body: UpstreamKey, service: Service
) -> Response:
    service.set_upstream_key(team_id, provider, body.api_key)
    return Response(status_code=204)


@router.delete(
    "/{team_id}/upstream-keys/{provider}",
    status_code=204,
    summary="Remove the team's own API key at an upstream",
)
def delete_upstream_key(team_id: str, provider: UpstreamKeyProvider, service: Service) -> Response:
    service.remove_upstream_key(team_id, provider)
    return Response(status_code=204)


@router.get(
    "/{team_id}/upstream-keys",
    response_model=UpstreamKeyProviders,
    summary="The upstreams where the team has its own API key",
)
def list_upstream_keys(team_id: str, service: Service) -> UpstreamKeyProviders:
    providers = cast(list[UpstreamKeyProvider], service.upstream_key_providers(team_id))
    return UpstreamKeyProviders(providers=providers)
