"""Typed settings read from the environment once per cold start (DESIGN.md §4)."""

from __future__ import annotations

import os
from functools import lru_cache
from typing import Literal, Protocol, TypeVar

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# Why an outbound request is made, which decides the private hosts it may reach (`private_hosts_for`).
FetchPurpose = Literal["fetch", "extract", "webhook", "llm"]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=False, extra="ignore")

    # Upstream scholarly APIs (configurable so tests and air-gapped installs can point them elsewhere).
    arxiv_api_url: str = "https://export.arxiv.org/api/query"
    semantic_scholar_api_url: str = "https://api.semanticscholar.org/graph/v1"
    openalex_api_url: str = "https://api.openalex.org"
    crossref_api_url: str = "https://api.crossref.org"
    unpaywall_api_url: str = "https://api.unpaywall.org/v2"
    semantic_scholar_api_key: SecretStr | None = None
    openalex_api_key: SecretStr | None = None
    contact_email: str | None = None
    # Hosts the extractor fetches papers from (configurable for tests and mirrors).
    arxiv_pdf_base_url: str = "https://arxiv.org"
    doi_resolver_url: str = "https://doi.org"

    # Outbound fetch policy. Private (loopback, private, link-local, reserved) hosts are refused unless a
    # purpose's own allow-list names them (comma-separated `host` or `host:port`; each empty by default):
    # FETCH_ for the scholarly connectors and the papers they point at, EXTRACT_ for a team's own
    # `source_url`, WEBHOOK_ for callback URLs, LLM_ for the model endpoint (docs/extract.md, "SSRF").
    fetch_allow_private_hosts: str = ""
    extract_allow_private_hosts: str = ""
    webhook_allow_private_hosts: str = ""
    llm_allow_private_hosts: str = ""
    fetch_timeout_seconds: float = 20.0
    fetch_max_bytes: int = 50 * 1024 * 1024
    fetch_max_redirects: int = 5
    # Document upload (POST /v1/documents).
    upload_max_bytes: int = 25 * 1024 * 1024
    # Total time one extraction may take (inside the 45 s API/step limit).
    extract_budget_seconds: float = 40.0
    # Part of that budget for authoritative metadata lookups (Crossref, OpenAlex, arXiv, S2).
    extract_metadata_budget_seconds: float = 4.0

    # LLM provider (optional).
    llm_provider: Literal["none", "bedrock", "openai"] = "none"
    llm_model: str | None = None
    openai_base_url: str | None = None
    openai_api_key: SecretStr | None = None
    # Budget of one model call, first byte to last (a streamed answer included).
    llm_timeout_seconds: float = 60.0

    # AWS resources; names are given by CDK on AWS and by the local runtime locally.
    aws_endpoint_url: str | None = None
    aws_region: str = Field(default="us-east-1", validation_alias="AWS_DEFAULT_REGION")
    jobs_table: str = "research-jobs"
    cache_table: str = "research-cache"
    rate_limit_table: str = "research-rate-limits"
    documents_table: str = "research-documents"
    traces_table: str = "research-traces"
    teams_table: str = "research-teams"
    # Metered usage per team and month, and each job's cost ledger (functions/metering).
    usage_table: str = "research-usage"
    data_bucket: str = "research-data"
    artifacts_bucket: str = "research-artifacts"
    state_machine_arn: str | None = None
    event_bus_name: str = "default"
    # The KMS key that seals teams' webhook secrets (functions/common/secrets.py; CDK sets it).
    # Unset off AWS: a local AES-GCM key in LOCAL_STATE_DIR (or of the process, when state is in memory).
    webhook_secret_key_id: str | None = None
    local_state_dir: str = ""
    # Agent traces (GET /v1/traces/{trace_id}) expire this many days after their last event.
    trace_ttl_days: int = 30

    # The admin routes (`/admin/teams...`): "token" checks `Authorization: Bearer <ADMIN_TOKEN>` (unset:
    # the routes answer 503); "iam" trusts API Gateway, which IAM-authorises them on AWS.
    admin_token: SecretStr | None = None
    admin_auth: Literal["token", "iam"] = "token"
    # Where a request's team comes from (functions/common/tenancy.py): "authorizer" on AWS (the Lambda
    # authorizer's context), "gateway" locally (the x-team-id the local gateway sets).
    team_source: Literal["gateway", "authorizer"] = "gateway"
    # Per-team API Gateway API keys (functions/teams/usage_keys.py), AWS only: the SSM parameter holding
    # each tier's usage plan id (JSON, written by CDK), and the prefix of the keys' names. Unset: no keys.
    usage_plans_parameter: str | None = None
    api_key_name_prefix: str = "research"

    # Metering (docs/usage.md): `USAGE_METERING=false` stops recording requests and job usage; the price
    # table's defaults (public us-east-1 prices) are overridden by a JSON object in PRICE_TABLE_JSON.
    usage_metering: bool = True
    price_table_json: str | None = None

    # Our own per-client rate limit on the public search API.
    client_rate_limit_per_minute: int = 100

    # Browser origins allowed to read the APIs' answers (comma-separated, or "*"): on AWS the research
    # console on CloudFront calls the API cross-origin (CDK sets it from the `corsOrigins` context). Empty:
    # no CORS headers, as `make run` serves the console from the API's own origin.
    cors_origins: str = ""

    @field_validator("llm_provider", "admin_auth", "team_source", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @property
    def cors_origin_list(self) -> list[str]:
        return [item.strip() for item in self.cors_origins.split(",") if item.strip()]

    def private_hosts_for(self, purpose: FetchPurpose) -> frozenset[str]:
        """The private hosts `purpose` may reach: `host` or `host:port` entries, lower-cased."""
        raw = {
            "fetch": self.fetch_allow_private_hosts,
            "extract": self.extract_allow_private_hosts,
            "webhook": self.webhook_allow_private_hosts,
            "llm": self.llm_allow_private_hosts,
        }[purpose]
        return frozenset(item.strip().lower() for item in raw.split(",") if item.strip())

    @property
    def private_host_allowlist(self) -> frozenset[str]:
        """The connectors' allow-list (FETCH_ALLOW_PRIVATE_HOSTS); other purposes: `private_hosts_for`."""
        return self.private_hosts_for("fetch")


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


class _Cache(Protocol):
    def cache_clear(self) -> None: ...


_CacheT = TypeVar("_CacheT", bound=_Cache)
_built_from_settings: list[_Cache] = []


def built_from_settings(cached: _CacheT) -> _CacheT:
    """Marks a per-container cache (an `lru_cache`d builder) whose value the settings configure: a
    settings reset drops it too, so what is built next follows the new environment."""
    _built_from_settings.append(cached)
    return cached


def reset_settings_cache() -> None:
    """For tests and the local runtime, which change the environment after import: the settings and what
    was built from them (`built_from_settings`)."""
    get_settings.cache_clear()
    for cached in _built_from_settings:
        cached.cache_clear()


def on_lambda() -> bool:
    """Whether this process is a Lambda execution environment (the runtime sets the function's name)."""
    return bool(os.environ.get("AWS_LAMBDA_FUNCTION_NAME"))
