"""The API functions (FastAPI via Mangum, or under the Lambda Web Adapter when they stream), the team
authorizer, the step Lambdas of the registry, the knowledge-base ingest.

Python 3.13 on arm64, X-Ray tracing, Powertools settings, their own log groups, and grants that follow
what each function declares it uses (`uses` on its spec: infra/config.py, functions/common/resources.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from aws_cdk import ArnFormat, CfnResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from constructs import Construct

from functions.common import resources
from functions.common.observability import NAMESPACE
from infra import bundling
from infra.config import API_FUNCTIONS, KB_INGEST, TEAM_AUTHORIZER, WEB_ADAPTER, ApiFunctionSpec, StackOptions
from infra.nag import suppress, suppress_function_role

# The purposes (KMS encryption contexts) under which the teams' secret key seals values: webhook signing
# secrets and the teams' own upstream API keys (functions/common/secrets.py).
KEY_PURPOSES = ("webhook-secret", "upstream-key")
# numpy's BLAS threads only contend on Lambda's vCPUs for the knowledge base's small products
# The alias every invoker names (a published version: what SnapStart snapshots).
LIVE_ALIAS = "live"
SINGLE_THREADED_BLAS = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


@dataclass(frozen=True)
class DeployedFunction:
    function: lambda_.Function
    family: str  # an API family ("search", ... "admin"), "authorizer", "steps" or "ingest"
    sources: bundling.FunctionSources
    # The "live" alias on the version published with each deploy: SnapStart snapshots published versions
    # only, so everything that invokes the function (API Gateway, the authorizer, the state machine, the
    # upload rule) names this alias, never the unpublished $LATEST.
    alias: lambda_.Alias
    streams: bool = False  # under the Lambda Web Adapter in response_stream mode
    uses: resources.Uses = field(default_factory=resources.Uses)  # what it is granted


@dataclass(frozen=True)
class DataStores:
    """The registry's tables and buckets (by setting name) and the job events' bus: what the functions
    are told the names of and granted, and what the state machines' definitions name."""

    tables: Mapping[str, dynamodb.ITable]
    buckets: Mapping[str, s3.IBucket]
    event_bus: events.IEventBus


class FunctionSpec(Protocol):
    """What every kind of function declaration gives: its id, its size and time-out, what it is granted."""

    @property
    def logical_id(self) -> str: ...
    @property
    def memory_mb(self) -> int: ...
    @property
    def timeout_seconds(self) -> int: ...
    @property
    def uses(self) -> resources.Uses: ...


class Functions(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        step_functions: tuple[resources.StepFunctionSpec, ...],
        stores: DataStores,
        options: StackOptions,
        usage_plans_parameter: str,
    ) -> None:
        """`usage_plans_parameter`: the SSM parameter name of the usage plan ids (written by the Api)."""
        super().__init__(scope, construct_id)
        self._options = options
        self._locked = bundling.LockedDependencies()
        environment = _shared_environment(stores, options)
        # The functions that make (admin) and read (authorizer) the teams' API Gateway keys.
        team_keys = {
            "USAGE_PLANS_PARAMETER": usage_plans_parameter,
            "API_KEY_NAME_PREFIX": Stack.of(self).stack_name,
        }
        self.api: dict[str, DeployedFunction] = {  # by family
            spec.family: self._api_function(spec, environment, team_keys) for spec in API_FUNCTIONS
        }
        self.authorizer = self._authorizer({**environment, **team_keys})
        self.ingest = self._ingest(environment)  # the knowledge-base ingest, when the rag family has one
        self.steps: dict[str, DeployedFunction] = {  # by logical id (`${<id>Arn}` in ASL)
            spec.logical_id: self._step_function(spec, environment) for spec in step_functions
        }
        self.webhook_secret_key = kms.Key(
            self,
            "WebhookSecretKey",
            description="Seals the teams' webhook signing secrets and own upstream API keys in the teams table",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,  # deleting it would make every stored secret unreadable
        )
        for deployed in self.all():
            self._grant_secret_key(deployed)
        for deployed in self.all():
            _grant_declared(deployed, stores)

    def _authorizer(self, environment: Mapping[str, str]) -> DeployedFunction:
        return self._function(
            TEAM_AUTHORIZER, handler=TEAM_AUTHORIZER.handler, family="authorizer", environment=environment
        )

    def _ingest(self, environment: Mapping[str, str]) -> DeployedFunction | None:
        if not module_exists(KB_INGEST.handler):
            return None
        return self._function(
            KB_INGEST,
            handler=KB_INGEST.handler,
            family="ingest",
            environment={**environment, "RAG_SOURCE_PREFIX": KB_INGEST.prefix},
        )

    def _api_function(
        self, spec: ApiFunctionSpec, environment: Mapping[str, str], team_keys: Mapping[str, str]
    ) -> DeployedFunction:
        if spec.streams:
            return self._web_adapter_function(spec, environment)
        own = {"ADMIN_AUTH": "iam", **team_keys} if spec.authorization == "iam" else {}
        return self._function(
            spec,
            handler=spec.entry,
            family=spec.family,
            reserved=spec.reserved_concurrency,
            environment={**environment, **own},
        )

    def _step_function(
        self, spec: resources.StepFunctionSpec, environment: Mapping[str, str]
    ) -> DeployedFunction:
        return self._function(spec, handler=spec.handler, family="steps", environment=environment)

    def _grant_secret_key(self, deployed: DeployedFunction) -> None:
        """Per purpose (the encryption context), only the actions the function declares."""
        granted = False
        for purpose in KEY_PURPOSES:
            actions = [
                *(["kms:Encrypt"] if purpose in deployed.uses.encrypts else []),
                *(["kms:Decrypt"] if purpose in deployed.uses.decrypts else []),
            ]
            if not actions:
                continue
            granted = True
            deployed.function.add_to_role_policy(
                iam.PolicyStatement(
                    actions=actions,
                    resources=[self.webhook_secret_key.key_arn],
                    conditions={"StringEquals": {"kms:EncryptionContext:purpose": purpose}},
                )
            )
        if granted:
            deployed.function.add_environment("WEBHOOK_SECRET_KEY_ID", self.webhook_secret_key.key_arn)

    def all(self) -> list[DeployedFunction]:
        return [
            *self.api.values(),
            self.authorizer,
            *self.steps.values(),
            *([self.ingest] if self.ingest else []),
        ]

    def drop_redundant_role_dependencies(self) -> None:
        """Call after every grant (see `depend_only_on_role_policy`)."""
        for deployed in self.all():
            assert deployed.function.role is not None
            depend_only_on_role_policy(deployed.function, deployed.function.role)

    def _web_adapter_function(
        self, spec: ApiFunctionSpec, environment: Mapping[str, str]
    ) -> DeployedFunction:
        """An app served by uvicorn behind the Lambda Web Adapter layer, which answers each invocation as
        a response stream (the format API Gateway's STREAM integrations read), so its SSE routes stream."""
        sources = bundling.analyse(
            spec.entry, locked=self._locked, extra_distributions=(WEB_ADAPTER.server_distribution,)
        )
        start_script = bundling.web_adapter_start_script(spec.asgi_app)
        layer_arn = Stack.of(self).format_arn(
            service="lambda",
            account=WEB_ADAPTER.account,
            resource="layer",
            resource_name=f"{WEB_ADAPTER.layer_name}:{WEB_ADAPTER.version}",
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        layer = lambda_.LayerVersion.from_layer_version_arn(self, f"{spec.logical_id}WebAdapter", layer_arn)
        deployed = self._function(
            spec,
            handler=WEB_ADAPTER.entry_script,
            family=spec.family,
            reserved=spec.reserved_concurrency,
            environment={**environment, **WEB_ADAPTER.environment()},
            sources=sources,
            executables={WEB_ADAPTER.entry_script: start_script},
            layers=[layer],
            description=f"{spec.asgi_app} under the Lambda Web Adapter ({spec.family})",
        )
        return DeployedFunction(
            function=deployed.function,
            family=spec.family,
            sources=sources,
            alias=deployed.alias,
            streams=True,
            uses=spec.uses,
        )

    def _function(
        self,
        spec: FunctionSpec,
        *,
        handler: str,
        family: str,
        environment: Mapping[str, str],
        reserved: int | None = None,
        sources: bundling.FunctionSources | None = None,
        executables: Mapping[str, str] | None = None,
        layers: list[lambda_.ILayerVersion] | None = None,
        description: str | None = None,
    ) -> DeployedFunction:
        sources = sources or bundling.analyse(handler, locked=self._locked)
        asset = bundling.build_asset(sources, self._options.bundling, executables=executables)
        log_group = logs.LogGroup(
            self,
            f"{spec.logical_id}Logs",
            retention=retention(self._options.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        service = sources.handler.split(".")[1]
        if service == "rag":  # the knowledge base's API and its ingest
            environment = {**environment, **SINGLE_THREADED_BLAS}
        function = lambda_.Function(
            self,
            spec.logical_id,
            runtime=lambda_.Runtime.PYTHON_3_13,
            architecture=lambda_.Architecture.ARM_64,
            handler=handler,
            code=lambda_.Code.from_asset(str(asset)),
            memory_size=spec.memory_mb,
            timeout=Duration.seconds(spec.timeout_seconds),
            tracing=lambda_.Tracing.ACTIVE,
            log_group=log_group,
            reserved_concurrent_executions=reserved if self._options.reserved_concurrency else None,
            environment={**environment, "POWERTOOLS_SERVICE_NAME": service},
            layers=layers,
            description=description or f"{handler} ({family})",
            # Init (imports, settings, app) runs once when a version is published; cold starts resume
            # that snapshot. Restore hooks: functions/common/snapstart.py (docs/infra.md, "SnapStart").
            snap_start=lambda_.SnapStartConf.ON_PUBLISHED_VERSIONS,
        )
        alias = lambda_.Alias(
            self, f"{spec.logical_id}Live", alias_name=LIVE_ALIAS, version=function.current_version
        )
        suppress(
            function,
            "L1",
            "The design fixes Python 3.13 (the version the code and its wheels are built and tested for); "
            "moving to a newer runtime is a deliberate upgrade, not a deploy-time drift.",
        )
        assert function.role is not None
        suppress_function_role(function.role)
        return DeployedFunction(
            function=function, family=family, sources=sources, alias=alias, uses=spec.uses
        )


_RETENTION = {
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
}


def retention(days: int) -> logs.RetentionDays:
    if days not in _RETENTION:
        raise ValueError(f"logRetentionDays must be one of {sorted(_RETENTION)}, not {days}")
    return _RETENTION[days]


def depend_only_on_role_policy(owner: Construct, role: iam.IRole) -> None:
    """CDK makes a function or state machine DependsOn its role, which its `GetAtt Role.Arn` already
    implies (cfn-lint W3005); keep only the dependency on the role's policy, which nothing else implies."""
    resource = owner.node.default_child
    assert isinstance(resource, CfnResource)
    policy = role.node.try_find_child("DefaultPolicy")
    policy_resource = policy.node.default_child if policy is not None else None
    depends_on = (
        [Stack.of(owner).get_logical_id(policy_resource)] if isinstance(policy_resource, CfnResource) else []
    )
    resource.add_override("DependsOn", depends_on)


def _shared_environment(stores: DataStores, options: StackOptions) -> dict[str, str]:
    """What every function learns: the registry's names, the LLM provider, Powertools' settings."""
    environment = {setting.upper(): table.table_name for setting, table in stores.tables.items()}
    environment.update({setting.upper(): bucket.bucket_name for setting, bucket in stores.buckets.items()})
    environment.update(
        {
            "EVENT_BUS_NAME": stores.event_bus.event_bus_name,
            "LLM_PROVIDER": options.llm_provider,
            "POWERTOOLS_METRICS_NAMESPACE": NAMESPACE,
            "POWERTOOLS_LOG_LEVEL": "INFO",
            "POWERTOOLS_LOGGER_LOG_EVENT": "false",
            # the research console calls the API from its CloudFront origin (functions/common/web/api.py)
            "CORS_ORIGINS": ",".join(options.cors_origins),
            **options.extra_environment,
        }
    )
    # Every function learns its team from the authorizer's context (functions/common/tenancy.py).
    environment["TEAM_SOURCE"] = "authorizer"
    return environment


def _grant_declared(deployed: DeployedFunction, stores: DataStores) -> None:
    """Exactly what the function declares of the registry: read or read/write, and putting events."""
    function, uses = deployed.function, deployed.uses
    for setting, table in stores.tables.items():
        _grant(function, uses.access(setting), table.grant_read_data, table.grant_read_write_data)
    for setting, bucket in stores.buckets.items():
        _grant(function, uses.access(setting), bucket.grant_read, bucket.grant_read_write)
    if uses.events:
        stores.event_bus.grant_put_events_to(function)


def _grant(
    grantee: iam.IGrantable,
    access: resources.Access | None,
    grant_read: Callable[[iam.IGrantable], iam.Grant],
    grant_read_write: Callable[[iam.IGrantable], iam.Grant],
) -> None:
    if access == "read":
        grant_read(grantee)
    elif access == "read_write":
        grant_read_write(grantee)


def module_exists(handler: str) -> bool:
    module = handler.rpartition(".")[0]
    return bundling.REPO_ROOT.joinpath(*module.split(".")).with_suffix(".py").is_file()
