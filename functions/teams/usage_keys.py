"""Per-team API Gateway API keys: the port, the API Gateway adapter, and the local no-op.

On AWS every team gets one API Gateway API key, in the usage plan of its tier, so the plan's throttle and
quota apply to the team whichever way it calls (docs/teams.md, "API keys and usage plans"):

- `create` makes the key (`apigateway:CreateApiKey`) and adds it to the tier's plan
  (`CreateUsagePlanKey`); its value is shown once, in the create-team response, and stored nowhere by us
  (the teams table keeps its id and the SHA-256 of its value);
- `value` reads a key's value back by id (`GetApiKey includeValue`): the authorizer returns it as the
  `usageIdentifierKey` of a bearer-token caller. A key's value never changes for its id, so values are
  cached for the life of the container (bounded), and API Gateway's control plane is asked once per team
  and container, not per request;
- `delete` undoes a `create` whose team could not be stored.

The usage plan ids reach the function through an SSM parameter (`USAGE_PLANS_PARAMETER`, JSON
`{"basic": "<plan id>", ...}`, written by CDK), read once when the first key is created: an environment
variable cannot carry them, because the usage plans depend on the API's stage, the stage on the methods,
and the admin methods on the admin function (a CloudFormation cycle).

Locally (`USAGE_PLANS_PARAMETER` unset) there are no API keys: `NoUsageKeys` creates none, and teams call
with bearer tokens only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from botocore.exceptions import BotoCoreError, ClientError

from functions.common.aws import generic_client
from functions.common.errors import UpstreamError
from functions.common.observability import get_logger

if TYPE_CHECKING:
    from mypy_boto3_apigateway.client import APIGatewayClient
    from mypy_boto3_ssm.client import SSMClient

logger = get_logger("teams")

KEY_NAME_MAX_CHARS = 128  # API Gateway's limit on an API key's name
VALUE_CACHE_MAX_ENTRIES = 4096


@dataclass(frozen=True)
class IssuedKey:
    api_key_id: str
    value: str  # shown once to the platform team; never stored by us


class UsageKeys(Protocol):
    def create(self, team_id: str, team_name: str, tier: str) -> IssuedKey | None:
        """A new key of the team in its tier's usage plan; None where there are no API keys (locally)."""
        ...

    def value(self, api_key_id: str) -> str | None:
        """The value of a key by its id; None where there are no API keys."""
        ...

    def delete(self, api_key_id: str) -> None: ...


class NoUsageKeys:
    """The local runtime and tests: no API Gateway, so no API keys and no usage plans."""

    def create(self, team_id: str, team_name: str, tier: str) -> IssuedKey | None:
        return None

    def value(self, api_key_id: str) -> str | None:
        return None

    def delete(self, api_key_id: str) -> None:
        return None


PlanIds = Mapping[str, str]  # tier -> usage plan id


def ssm_plan_ids(parameter: str, client: SSMClient | None = None) -> Callable[[], PlanIds]:
    """A loader of the tier -> usage plan id map from the SSM parameter CDK writes (read when first used)."""

    def load() -> PlanIds:
        ssm = client or cast("SSMClient", generic_client("ssm"))
        try:
            raw = ssm.get_parameter(Name=parameter)["Parameter"].get("Value", "")
        except (ClientError, BotoCoreError) as exc:
            raise UpstreamError(f"cannot read the usage plans ({parameter})") from exc
        plans = json.loads(raw) if raw else {}
        if not isinstance(plans, dict) or not all(isinstance(v, str) for v in plans.values()):
            raise UpstreamError(f"{parameter} is not a JSON object of usage plan ids")
        return {str(tier): plan for tier, plan in plans.items()}

    return load


class ApiGatewayUsageKeys:
    """API keys of API Gateway (REST), one per team, each in its tier's usage plan."""

    def __init__(
        self,
        plan_ids: PlanIds | Callable[[], PlanIds],
        *,
        name_prefix: str,
        client: APIGatewayClient | None = None,
        cache_max_entries: int = VALUE_CACHE_MAX_ENTRIES,
    ) -> None:
        self._plan_source = plan_ids
        self._plans: PlanIds | None = None
        self._name_prefix = name_prefix
        self._client = client
        self._values: dict[str, str] = {}  # api key id -> value (immutable for the id)
        self._cache_max_entries = cache_max_entries
        self._lock = threading.Lock()

    @property
    def client(self) -> APIGatewayClient:
        return self._client or cast("APIGatewayClient", generic_client("apigateway"))

    def plan_for(self, tier: str) -> str:
        if self._plans is None:
            source = self._plan_source
            self._plans = dict(source() if callable(source) else source)
        plan = self._plans.get(tier)
        if not plan:
            raise UpstreamError(f"no usage plan is deployed for tier {tier!r}")
        return plan

    def create(self, team_id: str, team_name: str, tier: str) -> IssuedKey | None:
        plan = self.plan_for(tier)  # before creating anything: an unknown tier leaves no key behind
        name = f"{self._name_prefix}-{team_id}"[:KEY_NAME_MAX_CHARS]
        try:
            created = self.client.create_api_key(
                name=name, description=f"{team_name} ({tier}): {team_id}"[:512], enabled=True
            )
        except (ClientError, BotoCoreError) as exc:
            raise UpstreamError("API Gateway did not create the team's API key") from exc
        issued = IssuedKey(api_key_id=str(created["id"]), value=str(created["value"]))
        try:
            self.client.create_usage_plan_key(usagePlanId=plan, keyId=issued.api_key_id, keyType="API_KEY")
        except (ClientError, BotoCoreError) as exc:
            self.delete(issued.api_key_id)
            raise UpstreamError("API Gateway did not add the team's API key to its usage plan") from exc
        self._remember(issued.api_key_id, issued.value)
        logger.info("api key created", team_id=team_id, tier=tier, api_key_id=issued.api_key_id)
        return issued

    def value(self, api_key_id: str) -> str | None:
        with self._lock:
            cached = self._values.get(api_key_id)
        if cached is not None:
            return cached
        try:
            found = self.client.get_api_key(apiKey=api_key_id, includeValue=True)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "NotFoundException":
                return None  # deleted out of band: the caller has no usage identifier
            raise
        value = found.get("value")
        if not value:
            return None
        self._remember(api_key_id, str(value))
        return str(value)

    def delete(self, api_key_id: str) -> None:
        """Best effort: a key that cannot be deleted maps to no team, so it opens nothing."""
        with self._lock:
            self._values.pop(api_key_id, None)
        try:
            self.client.delete_api_key(apiKey=api_key_id)
        except (ClientError, BotoCoreError):
            logger.warning("api key not deleted", api_key_id=api_key_id)

    def _remember(self, api_key_id: str, value: str) -> None:
        with self._lock:
            if len(self._values) >= self._cache_max_entries:
                self._values.clear()
            self._values[api_key_id] = value
