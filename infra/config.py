"""What the stack deploys besides the registry: the API functions, usage tiers, and deploy-time options.

Options come from CDK context (`cdk.json` or `-c key=value`) so a deploy can change them without code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from functions.common import resources
from functions.common.web.web_adapter import RESTORE_PATH
from functions.local_runtime.gateway import EXEMPT_PATHS
from functions.teams.models import TIERS
from infra.bundling import BundlingMode

# How API Gateway admits a caller of a function's routes: "team" = the team authorizer (a bearer token or
# the team's API key) and `apiKeyRequired` (usage plans); "iam" = SigV4-signed AWS principals only.
Authorization = Literal["team", "iam"]
# Routes that take no credential at all, as in the local gateway: the health checks.
OPEN_PATHS: frozenset[str] = EXEMPT_PATHS


@dataclass(frozen=True)
class ApiFunctionSpec:
    logical_id: str
    family: str  # functions/<family>/ holds app.py (and handler.py unless it streams)
    memory_mb: int
    timeout_seconds: int  # a buffered integration ends at 29 s (API Gateway); a streamed one at 15 min
    reserved_concurrency: int | None = None  # protects the upstream scholarly APIs from a burst
    # True: the app runs under the Lambda Web Adapter in response_stream mode (uvicorn on a port instead
    # of Mangum) and every route of it is integrated with ResponseTransferMode STREAM (docs/infra.md).
    streams: bool = False
    authorization: Authorization = "team"
    uses: resources.Uses = field(default_factory=resources.Uses)  # what its routes reach: its grants

    @property
    def entry(self) -> str:
        """What the function's asset is built from: the Mangum handler, or the ASGI app uvicorn serves
        (`web_adapter.py`: the app plus the adapter's SnapStart restore hook)."""
        return (
            f"functions.{self.family}.web_adapter.app"
            if self.streams
            else f"functions.{self.family}.handler.handler"
        )

    @property
    def asgi_app(self) -> str:
        """uvicorn's `module:attribute` form of what it serves."""
        return f"functions.{self.family}.web_adapter:app"


# Every API function but the MCP server meters its requests (usage table) and reads its team's record
# (teams table).
API_FUNCTIONS: tuple[ApiFunctionSpec, ...] = (
    # Searching: response cache, token buckets, the library connector's uploaded documents, the teams'
    # own upstream keys.
    ApiFunctionSpec(
        "SearchFunction",
        "search",
        memory_mb=1024,
        timeout_seconds=29,
        reserved_concurrency=20,
        uses=resources.Uses(
            read_write=("cache_table", "rate_limit_table", "documents_table", "usage_table", "data_bucket"),
            read=("teams_table",),
            decrypts=("upstream-key",),
        ),
    ),
    # Extraction and uploads: the PDF and parse cache in the data bucket, the documents' records.
    ApiFunctionSpec(
        "ExtractFunction",
        "extract",
        memory_mb=2048,
        timeout_seconds=29,
        reserved_concurrency=20,
        uses=resources.Uses(
            read_write=(
                "cache_table",
                "rate_limit_table",
                "documents_table",
                "teams_table",
                "usage_table",
                "data_bucket",
            ),
            decrypts=("upstream-key",),
        ),
    ),
    # Jobs, schedules, webhooks' delivery log and the job's artifacts; the search a job's plan reads (cache,
    # turns, documents), budgets and usage. A job's trace is written by its steps, not by this API.
    ApiFunctionSpec(
        "OrchestrateFunction",
        "orchestrate",
        memory_mb=512,
        timeout_seconds=29,
        uses=resources.Uses(
            read_write=(
                *(table.setting for table in resources.TABLES if table.setting != "traces_table"),
                *(bucket.setting for bucket in resources.BUCKETS),
            ),
            events=True,
            decrypts=("upstream-key", "webhook-secret"),
        ),
    ),
    # The knowledge base only reads its index in the data bucket.
    ApiFunctionSpec(
        "RagFunction",
        "rag",
        memory_mb=1536,
        timeout_seconds=29,
        uses=resources.Uses(read_write=("cache_table", "teams_table", "usage_table"), read=("data_bucket",)),
    ),
    # Both answer faces: embeds with MiniLM and parses PDFs (2 GB buys about 1.2 vCPU). Streamed, so the
    # gateway does not cut it at 29 s; 60 s bounds a whole `/v1/query/stream` answer as well as a
    # buffered `/v1/query`. Stores and serves traces; reads uploaded documents (uploading is the extract
    # function's route) and the teams' own upstream keys.
    ApiFunctionSpec(
        "AnswerFunction",
        "answer",
        memory_mb=2048,
        timeout_seconds=60,
        streams=True,
        uses=resources.Uses(
            read_write=("cache_table", "rate_limit_table", "traces_table", "usage_table", "data_bucket"),
            read=("documents_table", "teams_table"),
            decrypts=("upstream-key",),
        ),
    ),
    # The MCP server at `/mcp` (functions/mcp/): each tool call is a call of the REST route it mirrors, made
    # over HTTPS to this API with the caller's token (MCP_API_BASE_URL, set by the stack), so it reaches
    # no table or bucket itself and meters nothing (the route does). Streamed (SSE answers and progress);
    # 60 s as the answer function, whose `/v1/query` its `ask` tool waits for.
    ApiFunctionSpec("McpFunction", "mcp", memory_mb=512, timeout_seconds=60, streams=True),
    # Team and token management (`/admin/...`): IAM-authorised, no team, no API key (docs/teams.md). Seals
    # the teams' webhook secrets and own upstream keys.
    ApiFunctionSpec(
        "AdminFunction",
        "admin",
        memory_mb=512,
        timeout_seconds=29,
        authorization="iam",
        # no usage table: admin routes are not metered (functions/admin/app.py hands in no UsageMiddleware)
        uses=resources.Uses(read_write=("teams_table",), encrypts=("upstream-key", "webhook-secret")),
    ),
)


@dataclass(frozen=True)
class AuthorizerSpec:
    """The REQUEST authorizer in front of every team route: a bearer token or a team API key -> the team."""

    logical_id: str
    handler: str
    memory_mb: int
    timeout_seconds: int
    uses: resources.Uses


# On the path of every request (API Gateway's result cache is off, docs/teams.md): 512 MB for a short cold
# start (boto3 + one DynamoDB read); a warm decision takes a few milliseconds.
TEAM_AUTHORIZER = AuthorizerSpec(
    "TeamAuthorizerFunction",
    "functions.teams.authorizer.handler",
    memory_mb=512,
    timeout_seconds=10,
    uses=resources.Uses(read=("teams_table",)),  # only reads, whatever a module it imports one day names
)


def usage_plans_parameter(stack_name: str) -> str:
    """The SSM parameter holding each tier's usage plan id (JSON), read by the admin function."""
    return f"/{stack_name}/usage-plan-ids"


@dataclass(frozen=True)
class WebAdapter:
    """The AWS Lambda Web Adapter layer (github.com/awslabs/aws-lambda-web-adapter, README "Zip Packages"):
    its `/opt/bootstrap` exec wrapper starts `$LAMBDA_TASK_ROOT/$_HANDLER` (our `run.sh`: uvicorn), and
    its extension relays each invocation to that server as HTTP, streaming the answer back.

    Layer version 30 is v1.1.0 (aws/aws-lambda-web-adapter PR #871; 29 was a withdrawn release), the
    first that relays SnapStart's after-restore to the app: `POST after_restore_path` before any traffic
    (functions/common/web/web_adapter.py; docs/infra.md, "Cold starts and SnapStart")."""

    account: str = "753240598075"
    layer_name: str = "LambdaAdapterLayerArm64"  # the functions run on arm64
    version: int = 30
    port: int = 8000
    invoke_mode: str = "response_stream"
    entry_script: str = "run.sh"
    server_distribution: str = "uvicorn"  # what `run.sh` starts; bundled although no import names it
    after_restore_path: str = RESTORE_PATH

    def environment(self) -> dict[str, str]:
        return {
            "AWS_LAMBDA_EXEC_WRAPPER": "/opt/bootstrap",
            "AWS_LWA_INVOKE_MODE": self.invoke_mode,
            "AWS_LWA_PORT": str(self.port),
            "AWS_LWA_SNAPSTART_AFTER_RESTORE_PATH": self.after_restore_path,
        }


WEB_ADAPTER = WebAdapter()


@dataclass(frozen=True)
class IngestFunctionSpec:
    """The knowledge-base ingest: S3 uploads under `prefix` of the data bucket trigger it."""

    logical_id: str
    handler: str
    prefix: str
    memory_mb: int
    timeout_seconds: int
    uses: resources.Uses


KB_INGEST = IngestFunctionSpec(
    "RagIngestFunction",
    "functions.rag.ingest.handler",
    prefix="kb-source/",
    memory_mb=3008,
    timeout_seconds=600,
    uses=resources.Uses(read_write=("cache_table", "data_bucket")),  # the sources and the index it builds
)


@dataclass(frozen=True)
class UsageTier:
    """One usage plan: steady rate and burst (requests per second) and a request quota per period."""

    name: str
    rate_limit: float
    burst_limit: int
    quota: int
    quota_period: str = "DAY"  # DAY | WEEK | MONTH


DEFAULT_TIERS: tuple[UsageTier, ...] = (
    UsageTier("basic", rate_limit=2, burst_limit=5, quota=1_000),
    UsageTier("standard", rate_limit=10, burst_limit=20, quota=10_000),
    UsageTier("premium", rate_limit=50, burst_limit=100, quota=100_000),
)


@dataclass(frozen=True)
class Registry:
    """The resources of `functions/common/resources.py`, read when the stack is built (never cached)."""

    tables: tuple[resources.TableSpec, ...]
    buckets: tuple[resources.BucketSpec, ...]
    step_functions: tuple[resources.StepFunctionSpec, ...]
    state_machines: tuple[resources.StateMachineSpec, ...]

    @classmethod
    def current(cls) -> Registry:
        return cls(
            tables=tuple(resources.TABLES),
            buckets=tuple(resources.BUCKETS),
            step_functions=tuple(resources.STEP_FUNCTIONS),
            state_machines=tuple(resources.STATE_MACHINES),
        )

    def research_machine(self) -> resources.StateMachineSpec | None:
        """The machine that research jobs (and schedules) start: `research.asl.json`, else the only one."""
        for machine in self.state_machines:
            if machine.definition_file == "research.asl.json":
                return machine
        return self.state_machines[0] if len(self.state_machines) == 1 else None


@dataclass(frozen=True)
class StackOptions:
    bundling: BundlingMode = "full"
    tiers: tuple[UsageTier, ...] = DEFAULT_TIERS
    cors_origins: tuple[str, ...] = ("*",)
    reserved_concurrency: bool = True
    retain_data: bool = True  # DESTROY only for throw-away stacks (LocalStack, previews)
    alarm_email: str | None = None
    log_retention_days: int = 30
    llm_provider: str = "none"
    waf: bool = False  # a web ACL has a monthly fee
    console: bool = True  # the research console on CloudFront (LocalStack's free edition has none)
    extra_environment: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_context(cls, get: Any) -> StackOptions:
        """`get` is `node.try_get_context`; values given with `-c` arrive as strings."""

        def parsed(key: str) -> Any:
            value = get(key)
            if isinstance(value, str) and value[:1] in "[{":
                return json.loads(value)
            return value

        def flag(key: str, default: bool) -> bool:
            value = parsed(key)
            if value is None:
                return default
            return value if isinstance(value, bool) else str(value).lower() in {"1", "true", "yes", "on"}

        requested = parsed("bundling") or os.environ.get("LAMBDA_BUNDLING") or "full"
        if requested not in ("full", "source"):
            raise ValueError(f"bundling must be 'full' or 'source', not {requested!r}")
        bundling: BundlingMode = "source" if requested == "source" else "full"
        tiers = tuple(UsageTier(**tier) for tier in parsed("usageTiers") or ()) or DEFAULT_TIERS
        missing = sorted(set(TIERS) - {tier.name for tier in tiers})
        if missing:
            raise ValueError(f"usageTiers must have a plan for every team tier; missing: {missing}")
        if parsed("teams"):
            raise ValueError(
                "the `teams` context is gone: a team and its API key are created with POST /admin/teams "
                "(docs/teams.md), so that both map to the team in the authorizer"
            )
        origins = parsed("corsOrigins") or ["*"]
        return cls(
            bundling=bundling,
            tiers=tiers,
            cors_origins=tuple(
                origins if isinstance(origins, Sequence) and not isinstance(origins, str) else [origins]
            ),
            reserved_concurrency=flag("reservedConcurrency", True),
            retain_data=flag("retainData", True),
            alarm_email=parsed("alarmEmail") or None,
            log_retention_days=int(parsed("logRetentionDays") or 30),
            llm_provider=str(parsed("llmProvider") or "none"),
            waf=flag("waf", False),
            console=flag("console", True),
            extra_environment=dict(parsed("functionEnvironment") or {}),
        )
