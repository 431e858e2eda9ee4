"""The teams package's composition root: the DynamoDB store behind the service, API Gateway's API keys (on
AWS, when `USAGE_PLANS_PARAMETER` is set), the admin credential."""

from __future__ import annotations

from functions.common.settings import Settings, get_settings
from functions.teams.service import TeamService
from functions.teams.store import DynamoDbTeamStore
from functions.teams.usage_keys import ApiGatewayUsageKeys, NoUsageKeys, UsageKeys, ssm_plan_ids

_service: tuple[Settings, TeamService] | None = None


def team_service() -> TeamService:
    """One service per container and settings (tests and the local runtime change the settings)."""
    global _service
    settings = get_settings()
    if _service is None or _service[0] is not settings:
        _service = (settings, TeamService(DynamoDbTeamStore(), usage_keys=usage_keys(settings)))
    return _service[1]


def usage_keys(settings: Settings) -> UsageKeys:
    """API Gateway's API keys where CDK has deployed usage plans; none locally."""
    if not settings.usage_plans_parameter:
        return NoUsageKeys()
    return ApiGatewayUsageKeys(
        ssm_plan_ids(settings.usage_plans_parameter), name_prefix=settings.api_key_name_prefix
    )


def admin_token() -> str | None:
    """`ADMIN_TOKEN`, the local admin credential; None (admin routes disabled) when unset or empty."""
    secret = get_settings().admin_token
    value = secret.get_secret_value() if secret is not None else ""
    return value or None


def admin_auth() -> str:
    """`token` (check `ADMIN_TOKEN`) or `iam` (API Gateway has IAM-authorised the caller)."""
    return get_settings().admin_auth
