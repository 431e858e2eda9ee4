"""The REST API: exactly the function apps' routes, each admitted as its family says (team authorizer and
API key, IAM for the admin routes, nothing for health checks); usage plans, CORS, logs."""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute

from functions.local_runtime.gateway import load_function_apps
from infra.components.api import STAGE
from infra.config import API_FUNCTIONS, DEFAULT_TIERS, OPEN_PATHS
from infra.routes import Route, gateway_path, routes_of
from tests.infra.conftest import Synthesized, probe_apps
from tests.infra.template_facts import integrated_function, methods


def _openapi_routes(apps: dict[str, FastAPI]) -> set[tuple[str, str]]:
    """Every (path, method) the apps document, read independently of infra.routes."""
    declared: set[tuple[str, str]] = set()
    for app in apps.values():
        for path, item in app.openapi().get("paths", {}).items():
            declared.update((gateway_path(path), method.upper()) for method in item if method != "parameters")
    return declared


def _assert_routed_and_protected(synthesized: Synthesized, apps: dict[str, FastAPI]) -> list[Route]:
    routes = routes_of(apps)
    assert routes, "the function apps declare no routes"
    deployed = methods(synthesized.template_json)
    function_ids = {
        family: synthesized.logical_id(deployed_function.alias)
        for family, deployed_function in synthesized.stack.functions.api.items()
    }
    (authorizer_id,) = synthesized.resources("AWS::ApiGateway::Authorizer")
    iam_families = {spec.family for spec in API_FUNCTIONS if spec.authorization == "iam"}
    for route in routes:
        method = deployed.get((route.path, route.method))
        assert method is not None, f"{route.method} {route.path} is not routed"
        if route.path in OPEN_PATHS:
            assert method["AuthorizationType"] == "NONE" and not method.get("ApiKeyRequired"), route
        elif route.family in iam_families:
            assert method["AuthorizationType"] == "AWS_IAM" and not method.get("ApiKeyRequired"), route
            assert "AuthorizerId" not in method, route
        else:
            assert method["ApiKeyRequired"] is True, (
                f"{route.method} {route.path} does not require an API key"
            )
            assert method["AuthorizationType"] == "CUSTOM", route
            assert method["AuthorizerId"] == {"Ref": authorizer_id}, route
        assert method["Integration"]["Type"] == "AWS_PROXY"
        assert integrated_function(method) == function_ids[route.family], (
            f"{route} reaches the wrong function"
        )
    routed = {(path, verb) for path, verb in deployed if verb != "OPTIONS"}
    assert routed == {(route.path, route.method) for route in routes}, (
        "the API routes more than the apps declare"
    )
    assert _openapi_routes(apps) <= {(path.replace("+}", "}"), verb) for path, verb in routed}
    return routes


def test_every_route_of_the_function_apps_is_routed_and_protected(deployed: Synthesized) -> None:
    _assert_routed_and_protected(deployed, load_function_apps([spec.family for spec in API_FUNCTIONS]))


def _uri(method: dict[str, Any]) -> str:
    """The integration URI with the function's ARN and pseudo parameters as placeholders."""
    parts = method["Integration"]["Uri"]["Fn::Join"][1]
    return "".join(part if isinstance(part, str) else "<token>" for part in parts)


def test_routes_of_a_streaming_function_are_stream_integrations(synthesized: Synthesized) -> None:
    """API Gateway invokes a STREAM integration with InvokeWithResponseStream (the 2021-11-15
    `response-streaming-invocations` path), which is what the Lambda Web Adapter in response_stream mode
    answers; every other function keeps the buffered Invoke and the 29 s limit."""
    streams = {spec.family: spec.timeout_seconds for spec in API_FUNCTIONS if spec.streams}
    deployed_methods = methods(synthesized.template_json)
    assert Route("/v1/query/stream", "POST", "answer") in synthesized.stack.routes
    for route in synthesized.stack.routes:
        integration = deployed_methods[(route.path, route.method)]["Integration"]
        uri = _uri(deployed_methods[(route.path, route.method)])
        if route.family in streams:
            assert integration["ResponseTransferMode"] == "STREAM", route
            assert (
                uri.endswith("/response-streaming-invocations")
                and ":lambda:path/2021-11-15/functions/" in uri
            )
            assert integration["TimeoutInMillis"] == streams[route.family] * 1000
        else:
            assert integration.get("ResponseTransferMode", "BUFFERED") == "BUFFERED", route
            assert uri.endswith("/invocations") and ":lambda:path/2015-03-31/functions/" in uri
            assert integration["TimeoutInMillis"] == 29_000
        assert integration["Type"] == "AWS_PROXY" and integration["IntegrationHttpMethod"] == "POST"


def test_api_gateway_may_invoke_the_streaming_function_per_route(synthesized: Synthesized) -> None:
    """InvokeWithResponseStream is authorised by `lambda:InvokeFunction` (Lambda API reference)."""
    answer_id = synthesized.logical_id(synthesized.stack.functions.api["answer"].alias)
    source_arns = [
        json.dumps(permission["Properties"]["SourceArn"])
        for permission in synthesized.resources("AWS::Lambda::Permission").values()
        if permission["Properties"]["FunctionName"] == {"Ref": answer_id}
        and permission["Properties"]["Action"] == "lambda:InvokeFunction"
        and permission["Properties"]["Principal"] == "apigateway.amazonaws.com"
    ]
    assert any('/POST/v1/query/stream"' in arn for arn in source_arns), source_arns


def test_probe_routes_include_parameters_and_greedy_paths(probe: Synthesized) -> None:
    routes = _assert_routed_and_protected(probe, probe_apps())
    paths = {route.path for route in routes}
    assert "/entity/files/{key+}" in paths  # FastAPI {key:path} becomes a greedy API Gateway parameter
    assert "/api/schedules/{schedule_id}" in paths
    method = methods(probe.template_json)[("/entity/{entity_type}/{number}", "GET")]
    assert method["RequestParameters"] == {
        "method.request.path.entity_type": True,
        "method.request.path.number": True,
    }


def test_cors_preflight_answers_without_a_key(synthesized: Synthesized) -> None:
    deployed = methods(synthesized.template_json)
    routed_paths = {path for path, verb in deployed if verb != "OPTIONS"}
    for path in routed_paths:
        preflight = deployed.get((path, "OPTIONS"))
        assert preflight is not None, f"no CORS preflight on {path}"
        assert not preflight.get("ApiKeyRequired", False)
        assert preflight["Integration"]["Type"] == "MOCK"


def test_usage_plan_per_tier_with_throttle_and_quota(synthesized: Synthesized) -> None:
    plans = {
        plan["Properties"]["UsagePlanName"]: plan["Properties"]
        for plan in synthesized.resources("AWS::ApiGateway::UsagePlan").values()
    }
    stack_name = synthesized.stack.stack_name
    for tier in DEFAULT_TIERS:
        plan = plans[f"{stack_name}-{tier.name}"]
        assert plan["Throttle"] == {"RateLimit": tier.rate_limit, "BurstLimit": tier.burst_limit}
        assert plan["Quota"] == {"Limit": tier.quota, "Period": tier.quota_period}
        assert plan["ApiStages"][0]["Stage"] == {
            "Ref": next(iter(synthesized.resources("AWS::ApiGateway::Stage")))
        }


def test_stage_logs_traces_and_throttles(synthesized: Synthesized) -> None:
    (stage,) = synthesized.resources("AWS::ApiGateway::Stage").values()
    properties = stage["Properties"]
    assert properties["StageName"] == STAGE
    assert "DestinationArn" in properties["AccessLogSetting"]
    assert properties["TracingEnabled"] is True
    (settings,) = properties["MethodSettings"]
    assert settings["LoggingLevel"] == "ERROR" and settings["DataTraceEnabled"] is False
    assert settings["ThrottlingRateLimit"] > 0 and settings["ThrottlingBurstLimit"] > 0
    validators = synthesized.resources("AWS::ApiGateway::RequestValidator")
    assert any(v["Properties"]["ValidateRequestParameters"] for v in validators.values())


def test_gateway_errors_are_json_with_cors(synthesized: Synthesized) -> None:
    responses = {
        r["Properties"]["ResponseType"]: r["Properties"]
        for r in synthesized.resources("AWS::ApiGateway::GatewayResponse").values()
    }
    for kind in ("DEFAULT_4XX", "DEFAULT_5XX", "INVALID_API_KEY", "QUOTA_EXCEEDED", "THROTTLED"):
        assert "gatewayresponse.header.Access-Control-Allow-Origin" in responses[kind]["ResponseParameters"]
    assert responses["QUOTA_EXCEEDED"]["StatusCode"] == "429"


def test_api_routes_exclude_the_docs_pages() -> None:
    app = FastAPI()
    app.add_api_route("/api/v1/health", lambda: {}, methods=["GET"])
    routes = routes_of({"search": app})
    assert routes == [Route("/api/v1/health", "GET", "search")]
    assert not any(isinstance(route, APIRoute) and route.path == "/docs" for route in app.routes)


def test_optional_waf_limits_bodies_except_uploads(probe: Synthesized, deployed: Synthesized) -> None:
    assert not deployed.resources("AWS::WAFv2::WebACL")  # opt-in: a web ACL has a monthly fee
    (acl,) = probe.resources("AWS::WAFv2::WebACL").values()
    rules = {rule["Name"]: rule for rule in acl["Properties"]["Rules"]}
    limit = rules["LimitRequestBody"]
    assert limit["Action"]["Block"]["CustomResponse"]["ResponseCode"] == 413
    size, not_upload = limit["Statement"]["AndStatement"]["Statements"]
    assert size["SizeConstraintStatement"]["Size"] == 16 * 1024
    assert size["SizeConstraintStatement"]["FieldToMatch"]["Body"]["OversizeHandling"] == "MATCH"
    assert not_upload["NotStatement"]["Statement"]["ByteMatchStatement"]["SearchString"] == "/v1/documents"
    assert {"AWSManagedRulesCommonRuleSet", "AWSManagedRulesKnownBadInputsRuleSet"} <= set(rules)
    (association,) = probe.resources("AWS::WAFv2::WebACLAssociation").values()
    assert association["Properties"]["WebACLArn"] == {
        "Fn::GetAtt": [next(iter(probe.resources("AWS::WAFv2::WebACL"))), "Arn"]
    }


def test_mcp_is_routed_to_its_streaming_function_through_the_team_authorizer(deployed: Synthesized) -> None:
    """`/mcp` takes the streamable HTTP transport's three methods (OPTIONS stays the CORS preflight's),
    each a STREAM integration of the MCP function behind the team authorizer and the usage plans; the
    function calls the REST routes through this API's own stage."""
    deployed_methods = methods(deployed.template_json)
    mcp = deployed.stack.functions.api["mcp"]
    (authorizer_id,) = deployed.resources("AWS::ApiGateway::Authorizer")
    for verb in ("GET", "POST", "DELETE"):
        method = deployed_methods[("/mcp", verb)]
        assert integrated_function(method) == deployed.logical_id(mcp.alias)
        assert method["AuthorizationType"] == "CUSTOM" and method["AuthorizerId"] == {"Ref": authorizer_id}
        assert method["ApiKeyRequired"] is True
        assert method["Integration"]["ResponseTransferMode"] == "STREAM"
    assert ("/mcp", "PUT") not in deployed_methods
    function = deployed.template_json["Resources"][deployed.logical_id(mcp.function)]
    base_url = json.dumps(function["Properties"]["Environment"]["Variables"]["MCP_API_BASE_URL"])
    (rest_api_id,) = deployed.resources("AWS::ApiGateway::RestApi")
    assert f'{{"Ref": "{rest_api_id}"}}' in base_url and f"/{STAGE}" in base_url
    assert "execute-api" in base_url
