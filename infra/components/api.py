"""The REST API: every route of the function apps, API keys on all of them, usage plans per tier."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.components.functions import retention
from infra.components.waf import ApiFirewall
from infra.config import StackOptions, Team, UsageTier
from infra.nag import suppress
from infra.routes import Route

STAGE = "prod"
# API Gateway refuses bodies over 10 MB and Lambda over 6 MB (base64 counts). Bodies of these types
# travel base64-encoded between API Gateway and Mangum: PDF uploads and non-text artifact downloads
# (PDF, BibTeX, archives). Not `*/*`: that breaks the MOCK integration of the CORS preflight.
BINARY_MEDIA_TYPES = (
    "multipart/form-data",
    "application/pdf",
    "application/octet-stream",
    "application/x-bibtex",
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
        options: StackOptions,
        streamed: Mapping[str, Duration] | None = None,
    ) -> None:
        """`streamed`: the families whose function answers as a response stream (Lambda Web Adapter in
        response_stream mode), with their integration timeout. Every route of such a function is a STREAM
        integration (InvokeWithResponseStream): a buffered Invoke would hand API Gateway the stream's
        prelude and body where it expects the proxy JSON."""
        super().__init__(scope, construct_id)
        stack_name = Stack.of(self).stack_name
        access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=retention(options.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            rest_api_name=f"{stack_name}-research-api",
            description="Evidence-grounded research API: search, extract, agent jobs, answers, knowledge base",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            api_key_source_type=apigw.ApiKeySourceType.HEADER,
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
        self.validator = self.rest_api.add_request_validator(
            "RequestValidator", validate_request_parameters=True, validate_request_body=True
        )
        self._add_gateway_responses(options.cors_origins)

        streamed = streamed or {}
        integrations = {
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
        self.methods: dict[tuple[str, str], apigw.Method] = {}
        for route in routes:
            resource = self.rest_api.root.resource_for_path(route.path)
            parameters = {
                f"method.request.path.{segment.strip('{}+')}": True
                for segment in route.path.split("/")
                if segment.startswith("{")
            }
            self.methods[(route.path, route.method)] = resource.add_method(
                route.method,
                integrations[route.family],
                api_key_required=True,
                request_validator=self.validator,
                request_parameters=parameters or None,
            )

        self.usage_plans: dict[str, apigw.UsagePlan] = {
            tier.name: self._usage_plan(tier) for tier in options.tiers
        }
        self.team_keys: dict[str, apigw.IApiKey] = {}
        for team in options.teams:
            self.team_keys[team.name] = self._team_key(team, stack_name)

        suppress(
            self.rest_api,
            "APIG4",
            "Access is by API key with a usage plan per team (the pay-per-use model of the design); "
            "the functions do their own per-key rate limiting. No end-user identity is involved.",
        )
        suppress(
            self.rest_api, "COG4", "No end-user identity: callers are teams and services holding API keys."
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

    def _team_key(self, team: Team, stack_name: str) -> apigw.IApiKey:
        key = self.rest_api.add_api_key(
            f"{team.name.replace('-', ' ').title().replace(' ', '')}ApiKey",
            api_key_name=f"{stack_name}-{team.name}",
            description=f"API key of team {team.name} ({team.tier} tier)",
        )
        self.usage_plans[team.tier].add_api_key(key)
        return key

    def _add_gateway_responses(self, origins: Sequence[str]) -> None:
        origin = "'*'" if "*" in origins else f"'{origins[0]}'"
        headers = {"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Headers": "'*'"}
        for name, response_type in (
            ("Default4xx", apigw.ResponseType.DEFAULT_4_XX),
            ("Default5xx", apigw.ResponseType.DEFAULT_5_XX),
        ):
            self.rest_api.add_gateway_response(name, type=response_type, response_headers=headers)
        json_errors = (
            (
                "MissingKeyOrRoute",
                apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN,
                "403",
                '{"error": "FORBIDDEN", "message": "Unknown route, or the x-api-key header is missing. '
                'Every route needs an API key."}',
            ),
            (
                "InvalidKey",
                apigw.ResponseType.INVALID_API_KEY,
                "403",
                '{"error": "FORBIDDEN", "message": "Missing or invalid API key."}',
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
            self.rest_api.add_gateway_response(
                name,
                type=response_type,
                status_code=status,
                response_headers=headers,
                templates={"application/json": body},
            )
