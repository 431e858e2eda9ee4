"""The REST API: every route of the function apps, behind the team authorizer (or IAM for the admin routes),
usage plans per tier metering each team's API key, the SSM parameter of the plan ids.

Who may call what (docs/teams.md):

| routes | authorization | API key |
|---|---|---|
| the health checks (`OPEN_PATHS`) | none | not required |
| the admin function's (`/admin/...`) | `AWS_IAM`: SigV4-signed principals with `execute-api:Invoke` | not required |
| every other route | the team authorizer (REQUEST, Lambda): a bearer token or a team API key | required |

`apiKeySource: AUTHORIZER`: API Gateway takes the API key of a request from the authorizer's
`usageIdentifierKey` (the team's key, whichever style the team called with), so the usage plan of the
team's tier throttles and meters both styles. The authorizer has no identity source and API Gateway's
result cache is off: an identity source makes its header mandatory (API Gateway answers 401 without
calling the authorizer when it is missing), and a team sends either `Authorization` or `x-api-key`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_ssm as ssm
from constructs import Construct

from infra.components.functions import retention
from infra.components.waf import ApiFirewall
from infra.config import OPEN_PATHS, Authorization, StackOptions, UsageTier, usage_plans_parameter
from infra.nag import suppress
from infra.routes import Route

STAGE = "prod"
# API Gateway refuses bodies over 10 MB and Lambda over 6 MB (base64 counts). Bodies of these types
# travel base64-encoded between API Gateway and Mangum: PDF uploads and non-text artifact downloads
# (PDF, BibTeX, RIS, CSL-JSON, SVG, archives: types Mangum does not take for text). Not `*/*`: that
# breaks the MOCK integration of the CORS preflight.
BINARY_MEDIA_TYPES = (
    "multipart/form-data",
    "application/pdf",
    "application/octet-stream",
    "application/x-bibtex",
    "application/x-research-info-systems",
    "application/vnd.citationstyles.csl+json",
    "image/svg+xml",
    "application/zip",
)
# A buffered integration may not take longer (without a quota increase); a streamed one may take up to
# 15 minutes (API Gateway developer guide, "Stream the integration response for your proxy integrations").
BUFFERED_TIMEOUT = Duration.seconds(29)
_QUOTA_PERIODS = {"DAY": apigw.Period.DAY, "WEEK": apigw.Period.WEEK, "MONTH": apigw.Period.MONTH}


class Api(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        routes: Sequence[Route],
        functions: Mapping[str, lambda_.IFunction],
        authorizer_function: lambda_.IFunction,
        options: StackOptions,
        streamed: Mapping[str, Duration] | None = None,
        authorization: Mapping[str, Authorization] | None = None,
    ) -> None:
        """`streamed`: the families whose function answers as a response stream (Lambda Web Adapter in
        response_stream mode), with their integration timeout. Every route of such a function is a STREAM
        integration (InvokeWithResponseStream): a buffered Invoke would hand API Gateway the stream's
        prelude and body where it expects the proxy JSON. `authorization`: each family's (default "team")."""
        super().__init__(scope, construct_id)
        stack_name = Stack.of(self).stack_name
        self.rest_api = _rest_api(self, stack_name, options)
        self.validator = self.rest_api.add_request_validator(
            "RequestValidator", validate_request_parameters=True, validate_request_body=True
        )
        add_gateway_responses(self.rest_api, options.cors_origins)
        self.authorizer = self._team_authorizer(stack_name, authorizer_function)
        integrations = _integrations(functions, streamed or {})
        self.methods: dict[tuple[str, str], apigw.Method] = {
            (route.path, route.method): self._add_method(
                route, integrations[route.family], (authorization or {}).get(route.family, "team")
            )
            for route in routes
        }
        self.usage_plans: dict[str, apigw.UsagePlan] = {
            tier.name: self._usage_plan(tier) for tier in options.tiers
        }
        self.usage_plans_parameter = ssm.StringParameter(
            self,
            "UsagePlanIds",
            parameter_name=usage_plans_parameter(stack_name),
            description="Usage plan id of each tier (JSON): the admin function adds each new team's API key",
            string_value=Stack.of(self).to_json_string(
                {tier: plan.usage_plan_id for tier, plan in self.usage_plans.items()}
            ),
        )
        self._suppress_findings(options)

    def _team_authorizer(self, stack_name: str, function: lambda_.IFunction) -> apigw.RequestAuthorizer:
        authorizer = apigw.RequestAuthorizer(
            self,
            "TeamAuthorizer",
            authorizer_name=f"{stack_name}-teams",
            handler=function,
            identity_sources=[],  # either header may carry the credential: none can be mandatory
            results_cache_ttl=Duration.seconds(0),  # so a revoked token is refused from the next request
        )
        # CDK writes the empty list as IdentitySource "": leave the property out (optional without caching)
        authorizer_resource = authorizer.node.default_child
        assert isinstance(authorizer_resource, apigw.CfnAuthorizer)
        authorizer_resource.add_property_deletion_override("IdentitySource")
        return authorizer

    def _add_method(
        self, route: Route, integration: apigw.Integration, authorization: Authorization
    ) -> apigw.Method:
        resource = self.rest_api.root.resource_for_path(route.path)
        parameters = {
            f"method.request.path.{segment.strip('{}+')}": True
            for segment in route.path.split("/")
            if segment.startswith("{")
        }
        authorizer, authorization_type, key_required = self._access(route, authorization)
        return resource.add_method(
            route.method,
            integration,
            authorizer=authorizer,
            authorization_type=authorization_type,
            api_key_required=key_required,
            request_validator=self.validator,
            request_parameters=parameters or None,
        )

    def _suppress_findings(self, options: StackOptions) -> None:
        suppress(
            self.rest_api,
            "APIG4",
            "Every route is authorised except the health checks, which hold no team data: team routes by the "
            "team Lambda authorizer (bearer token or team API key), the admin routes by IAM (SigV4).",
        )
        suppress(
            self.rest_api,
            "COG4",
            "No end-user identity: callers are teams (the Lambda authorizer resolves their tokens and API "
            "keys) and the platform team's IAM principals (admin routes).",
        )
        suppress(
            self.rest_api,
            "IAM4",
            "AmazonAPIGatewayPushToCloudWatchLogs is the account-level role API Gateway needs to write logs.",
        )
        if options.waf:
            ApiFirewall(self, "Firewall", stage=self.rest_api.deployment_stage)
        else:
            suppress(
                self.rest_api,
                "APIG3",
                "WAF is a per-deployment choice (context waf=true; a web ACL costs a monthly fee); the stage "
                "has throttling and usage-plan quotas, and API Gateway caps request bodies at 10 MB.",
            )

    def _usage_plan(self, tier: UsageTier) -> apigw.UsagePlan:
        return self.rest_api.add_usage_plan(
            f"{tier.name.capitalize()}UsagePlan",
            name=f"{Stack.of(self).stack_name}-{tier.name}",
            description=f"{tier.name}: {tier.rate_limit} req/s (burst {tier.burst_limit}), "
            f"{tier.quota} requests per {tier.quota_period.lower()}",
            throttle=apigw.ThrottleSettings(rate_limit=tier.rate_limit, burst_limit=tier.burst_limit),
            quota=apigw.QuotaSettings(limit=tier.quota, period=_QUOTA_PERIODS[tier.quota_period]),
            api_stages=[apigw.UsagePlanPerApiStage(api=self.rest_api, stage=self.rest_api.deployment_stage)],
        )

    def _access(
        self, route: Route, authorization: Authorization
    ) -> tuple[apigw.IAuthorizer | None, apigw.AuthorizationType, bool]:
        """(authorizer, authorization type, API key required) of a route (see the module's table)."""
        if route.path in OPEN_PATHS:
            return None, apigw.AuthorizationType.NONE, False
        if authorization == "iam":
            return None, apigw.AuthorizationType.IAM, False
        return self.authorizer, apigw.AuthorizationType.CUSTOM, True

    def api_keys_arn(self, path: str = "") -> str:
        """`arn:<partition>:apigateway:<region>::/apikeys<path>` (API Gateway's control-plane resources)."""
        return Stack.of(self).format_arn(service="apigateway", account="", resource=f"/apikeys{path}")

    def grant_read_api_keys(self, function: lambda_.IFunction) -> None:
        """The authorizer reads a team's key value by its id (GetApiKey includeValue) for bearer callers."""
        assert function.role is not None
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["apigateway:GET"], resources=[self.api_keys_arn("/*")])
        )
        suppress(
            function.role,
            "IAM5",
            "A team's API key id is created at run time (POST /admin/teams), so reading its value "
            "(apigateway:GET, GetApiKey) can only be granted on /apikeys/*.",
            [{"regex": "/^Resource::arn:.*:apigateway:.*::/apikeys/\\*$/g"}],
        )

    def grant_create_team_keys(self, function: lambda_.IFunction) -> iam.Policy:
        """The admin function creates a team's API key (POST /apikeys), adds it to the usage plan of the
        team's tier (POST /usageplans/<id>/keys, on exactly this API's plans), deletes it again when the team
        cannot be stored (DELETE /apikeys/<id>), and reads the plan ids (ssm:GetParameter).

        A policy of its own, not the role's default policy: the function waits for its default policy,
        and naming the plans there would close a cycle (plan -> stage -> deployment -> admin methods ->
        admin function -> default policy -> plan)."""
        assert function.role is not None
        policy = iam.Policy(
            self,
            "AdminTeamKeysPolicy",
            roles=[function.role],
            statements=[
                iam.PolicyStatement(actions=["apigateway:POST"], resources=[self.api_keys_arn()]),
                iam.PolicyStatement(
                    actions=["apigateway:POST"],
                    resources=[
                        Stack.of(self).format_arn(
                            service="apigateway",
                            account="",
                            resource=f"/usageplans/{plan.usage_plan_id}/keys",
                        )
                        for plan in self.usage_plans.values()
                    ],
                ),
                iam.PolicyStatement(actions=["apigateway:DELETE"], resources=[self.api_keys_arn("/*")]),
                iam.PolicyStatement(
                    actions=["ssm:GetParameter"], resources=[self.usage_plans_parameter.parameter_arn]
                ),
            ],
        )
        suppress(
            policy,
            "IAM5",
            "A team's API key id is created at run time, so deleting the key of a team that could not be "
            "stored (apigateway:DELETE) can only be granted on /apikeys/*; a key that maps to no team opens "
            "nothing.",
            [{"regex": "/^Resource::arn:.*:apigateway:.*::/apikeys/\\*$/g"}],
        )
        return policy


def add_gateway_responses(rest_api: apigw.RestApi, origins: Sequence[str]) -> None:
    """CORS headers on every error API Gateway answers itself, and JSON bodies in the API's error form."""
    origin = "'*'" if "*" in origins else f"'{origins[0]}'"
    headers = {"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Headers": "'*'"}
    for name, response_type in (
        ("Default4xx", apigw.ResponseType.DEFAULT_4_XX),
        ("Default5xx", apigw.ResponseType.DEFAULT_5_XX),
    ):
        rest_api.add_gateway_response(name, type=response_type, response_headers=headers)
    json_errors = (
        (
            "MissingKeyOrRoute",
            apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN,
            "403",
            '{"error": "FORBIDDEN", "message": "Unknown route, or an admin route called without an '
            'IAM (SigV4) signature."}',
        ),
        (
            "InvalidKey",
            apigw.ResponseType.INVALID_API_KEY,
            "403",
            '{"error": "FORBIDDEN", "message": "The team has no API key in a usage plan; ask the '
            'platform team."}',
        ),
        (
            "QuotaExceeded",
            apigw.ResponseType.QUOTA_EXCEEDED,
            "429",
            '{"error": "Rate limit exceeded", "message": "The usage-plan quota of this API key is used up."}',
        ),
        (
            "Throttled",
            apigw.ResponseType.THROTTLED,
            "429",
            '{"error": "Rate limit exceeded", "retry_after": 1}',
        ),
    )
    for name, response_type, status, body in json_errors:
        rest_api.add_gateway_response(
            name,
            type=response_type,
            status_code=status,
            response_headers=headers,
            templates={"application/json": body},
        )
    # The team authorizer refused the credential (missing, unknown, revoked or malformed): RFC 6750.
    rest_api.add_gateway_response(
        "Unauthorized",
        type=apigw.ResponseType.UNAUTHORIZED,
        status_code="401",
        response_headers={**headers, "WWW-Authenticate": "'Bearer'"},
        templates={
            "application/json": '{"error": "UNAUTHORIZED", "message": "A valid team credential is '
            'required: Authorization: Bearer <token>, or the team API key in x-api-key."}'
        },
    )


def _rest_api(scope: Construct, stack_name: str, options: StackOptions) -> apigw.RestApi:
    """The regional REST API and its `prod` stage: access logs, tracing, throttling, CORS preflight."""
    access_logs = logs.LogGroup(
        scope,
        "AccessLogs",
        retention=retention(options.log_retention_days),
        removal_policy=RemovalPolicy.DESTROY,
    )
    return apigw.RestApi(
        scope,
        "RestApi",
        rest_api_name=f"{stack_name}-research-api",
        description="Evidence-grounded research API: search, extract, agent jobs, answers, knowledge base",
        endpoint_types=[apigw.EndpointType.REGIONAL],
        api_key_source_type=apigw.ApiKeySourceType.AUTHORIZER,
        binary_media_types=list(BINARY_MEDIA_TYPES),
        cloud_watch_role=True,
        cloud_watch_role_removal_policy=RemovalPolicy.DESTROY,
        default_method_options=apigw.MethodOptions(api_key_required=True),
        default_cors_preflight_options=apigw.CorsOptions(
            allow_origins=list(options.cors_origins),
            allow_methods=apigw.Cors.ALL_METHODS,
            allow_headers=[*apigw.Cors.DEFAULT_HEADERS, "X-Request-Id"],
            expose_headers=["X-Request-Id", "Retry-After"],
            max_age=Duration.hours(1),
        ),
        deploy_options=apigw.StageOptions(
            stage_name=STAGE,
            access_log_destination=apigw.LogGroupLogDestination(access_logs),
            access_log_format=apigw.AccessLogFormat.json_with_standard_fields(
                caller=True,
                http_method=True,
                ip=True,
                protocol=True,
                request_time=True,
                resource_path=True,
                response_length=True,
                status=True,
                user=True,
            ),
            logging_level=apigw.MethodLoggingLevel.ERROR,
            data_trace_enabled=False,  # bodies may hold uploaded documents
            metrics_enabled=True,
            tracing_enabled=True,
            throttling_rate_limit=100,
            throttling_burst_limit=200,
        ),
    )


def _integrations(
    functions: Mapping[str, lambda_.IFunction], streamed: Mapping[str, Duration]
) -> dict[str, apigw.LambdaIntegration]:
    """One proxy integration per family: a STREAM one (with its timeout) for a streamed family."""
    return {
        family: apigw.LambdaIntegration(
            function,
            allow_test_invoke=False,
            timeout=streamed.get(family, BUFFERED_TIMEOUT),
            response_transfer_mode=apigw.ResponseTransferMode.STREAM
            if family in streamed
            else apigw.ResponseTransferMode.BUFFERED,
        )
        for family, function in functions.items()
    }
