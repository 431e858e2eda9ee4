"""Teams on AWS: the authorizer in front of every team route, API keys from the authorizer, IAM on the admin
routes, the team source of every function, and the grants of the authorizer, the admin function and new
registry tables (docs/teams.md, "On AWS")."""

from __future__ import annotations

import json
from typing import Any

from infra.components.api import STAGE
from infra.config import API_FUNCTIONS, DEFAULT_TIERS, OPEN_PATHS, usage_plans_parameter
from tests.infra.conftest import PROBE_LEDGER, Synthesized
from tests.infra.template_facts import methods, walk

READ = {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query", "dynamodb:Scan"}
# what CDK's grant_read_data adds to the reads: stream reads and metadata, nothing that writes
READ_ALSO = {
    "dynamodb:ConditionCheckItem",
    "dynamodb:DescribeTable",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
}
WRITE = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}


def _text(value: Any) -> str:
    """A template value as text: `Fn::Join` flattened, `Ref`/`GetAtt` as `${Name}`/`${Name.Attr}`."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return " ".join(_text(item) for item in value)
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(_text(part) for part in parts)
    if isinstance(value, dict) and "Ref" in value:
        return "${" + str(value["Ref"]) + "}"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    return json.dumps(value)


def _statements(synthesized: Synthesized, role_id: str) -> list[dict[str, Any]]:
    """Every Allow statement of every policy attached to a role (its default policy and any other)."""
    found: list[dict[str, Any]] = []
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            found.extend(
                s for s in policy["Properties"]["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"
            )
    return found


def _actions(statement: dict[str, Any]) -> set[str]:
    actions = statement["Action"]
    return {actions} if isinstance(actions, str) else set(actions)


def _resources(statement: dict[str, Any]) -> list[str]:
    resources = statement["Resource"]
    return [_text(item) for item in (resources if isinstance(resources, list) else [resources])]


def _admin_families() -> list[str]:
    return [spec.family for spec in API_FUNCTIONS if spec.authorization == "iam"]


def _control_plane_path(arn: str) -> str:
    """`arn:${AWS::Partition}:apigateway:${AWS::Region}::/apikeys/*` -> `/apikeys/*`."""
    prefix = "arn:${AWS::Partition}:apigateway:${AWS::Region}::"
    assert arn.startswith(prefix), arn
    return arn.removeprefix(prefix)


def _role_id(synthesized: Synthesized, function: Any) -> str:
    assert function.role is not None
    return synthesized.logical_id(function.role)


def _variables(synthesized: Synthesized, function: Any) -> dict[str, Any]:
    resource = synthesized.template_json["Resources"][synthesized.logical_id(function)]
    variables: dict[str, Any] = resource["Properties"]["Environment"]["Variables"]
    return variables


def test_the_rest_api_takes_api_keys_from_the_authorizer(synthesized: Synthesized) -> None:
    (api,) = synthesized.resources("AWS::ApiGateway::RestApi").values()
    assert api["Properties"]["ApiKeySourceType"] == "AUTHORIZER"


def test_the_authorizer_is_a_request_authorizer_without_identity_source_or_cache(
    synthesized: Synthesized,
) -> None:
    """Either header may carry the credential, so no header can be an identity source (API Gateway would
    answer 401 without asking the authorizer when it is missing), and without one caching must be off."""
    (authorizer,) = synthesized.resources("AWS::ApiGateway::Authorizer").values()
    properties = authorizer["Properties"]
    assert properties["Type"] == "REQUEST"
    assert properties["AuthorizerResultTtlInSeconds"] == 0
    assert "IdentitySource" not in properties
    function_id = synthesized.logical_id(synthesized.stack.functions.authorizer.function)
    alias_id = synthesized.logical_id(synthesized.stack.functions.authorizer.alias)  # SnapStart's version
    assert f"${{{alias_id}}}" in _text(properties["AuthorizerUri"])
    handler = synthesized.template_json["Resources"][function_id]["Properties"]["Handler"]
    assert handler == "functions.teams.authorizer.handler"
    permissions = [
        p["Properties"]
        for p in synthesized.resources("AWS::Lambda::Permission").values()
        if p["Properties"]["FunctionName"] == {"Ref": alias_id}
    ]
    assert [p["Principal"] for p in permissions] == ["apigateway.amazonaws.com"]
    assert "/authorizers/" in _text(permissions[0]["SourceArn"])


def test_every_method_except_health_and_admin_goes_through_the_authorizer_with_a_key(
    synthesized: Synthesized,
) -> None:
    (authorizer_id,) = synthesized.resources("AWS::ApiGateway::Authorizer")
    seen = {"open": 0, "iam": 0, "team": 0}
    for (path, verb), method in methods(synthesized.template_json).items():
        if verb == "OPTIONS":  # CORS preflight: a MOCK integration, no credential (browsers send none)
            assert method.get("AuthorizationType", "NONE") == "NONE"
            continue
        if path in OPEN_PATHS:
            kind = "open"
            assert method["AuthorizationType"] == "NONE" and not method.get("ApiKeyRequired")
        elif path == "/admin" or path.startswith("/admin/"):
            kind = "iam"
            assert method["AuthorizationType"] == "AWS_IAM", (path, verb)
            assert not method.get("ApiKeyRequired") and "AuthorizerId" not in method
        else:
            kind = "team"
            assert method["AuthorizationType"] == "CUSTOM", (path, verb)
            assert method["AuthorizerId"] == {"Ref": authorizer_id}, (path, verb)
            assert method["ApiKeyRequired"] is True, (path, verb)
        seen[kind] += 1
    assert all(seen.values()), seen  # both stacks have health checks, admin routes and team routes


def test_the_admin_routes_of_the_deployed_app_are_iam_authorised(deployed: Synthesized) -> None:
    deployed_methods = methods(deployed.template_json)
    for path, verb in (
        ("/admin/teams", "POST"),
        ("/admin/teams/{team_id}/tokens", "POST"),
        ("/admin/teams/{team_id}/tokens/{token_id}", "DELETE"),
    ):
        assert deployed_methods[(path, verb)]["AuthorizationType"] == "AWS_IAM"
    (admin,) = _admin_families()
    alias_id = deployed.logical_id(deployed.stack.functions.api[admin].alias)
    for (path, verb), method in deployed_methods.items():
        if path.startswith("/admin") and verb != "OPTIONS":
            assert f"${{{alias_id}}}" in _text(method["Integration"]["Uri"]), (path, verb)
    outputs = deployed.template_json["Outputs"]
    assert f"/{STAGE}/*/admin/*" in _text(outputs["AdminInvokeArn"]["Value"])


def test_an_unauthorized_answer_is_json_with_a_bearer_challenge(synthesized: Synthesized) -> None:
    (response,) = [
        r["Properties"]
        for r in synthesized.resources("AWS::ApiGateway::GatewayResponse").values()
        if r["Properties"]["ResponseType"] == "UNAUTHORIZED"
    ]
    assert response["StatusCode"] == "401"
    assert response["ResponseParameters"]["gatewayresponse.header.WWW-Authenticate"] == "'Bearer'"
    assert "gatewayresponse.header.Access-Control-Allow-Origin" in response["ResponseParameters"]
    body = json.loads(response["ResponseTemplates"]["application/json"])
    assert body["error"] == "UNAUTHORIZED" and "x-api-key" in body["message"]


def test_every_function_reads_its_team_from_the_authorizer(synthesized: Synthesized) -> None:
    functions = synthesized.stack.functions
    for deployed_function in functions.all():
        assert _variables(synthesized, deployed_function.function)["TEAM_SOURCE"] == "authorizer"
    for spec in API_FUNCTIONS:
        variables = _variables(synthesized, functions.api[spec.family].function)
        assert (variables.get("ADMIN_AUTH") == "iam") is (spec.authorization == "iam"), spec.family
    parameter = usage_plans_parameter(synthesized.stack.stack_name)
    for family in _admin_families():
        variables = _variables(synthesized, functions.api[family].function)
        assert variables["USAGE_PLANS_PARAMETER"] == parameter
        assert variables["API_KEY_NAME_PREFIX"] == synthesized.stack.stack_name
    authorizer = _variables(synthesized, functions.authorizer.function)
    assert authorizer["USAGE_PLANS_PARAMETER"] == parameter and "ADMIN_AUTH" not in authorizer


def test_the_usage_plan_ids_are_published_for_the_admin_function(synthesized: Synthesized) -> None:
    (parameter,) = synthesized.resources("AWS::SSM::Parameter").values()
    assert parameter["Properties"]["Name"] == usage_plans_parameter(synthesized.stack.stack_name)
    plan_ids = {
        tier: synthesized.logical_id(plan) for tier, plan in synthesized.stack.api.usage_plans.items()
    }
    assert set(plan_ids) == {tier.name for tier in DEFAULT_TIERS}
    value = json.loads(_text(parameter["Properties"]["Value"]))
    assert value == {tier: "${" + plan_id + "}" for tier, plan_id in plan_ids.items()}


def test_the_authorizer_reads_the_teams_table_and_api_keys_only(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    teams_table = synthesized.logical_id(stack.data.tables["teams_table"])
    statements = _statements(synthesized, _role_id(synthesized, stack.functions.authorizer.function))
    dynamodb = [s for s in statements if any(a.startswith("dynamodb:") for a in _actions(s))]
    assert dynamodb, "the authorizer must read the teams table"
    for statement in dynamodb:
        assert _actions(statement) <= READ | READ_ALSO
        assert not _actions(statement) & WRITE
        assert {r.split(".")[0].strip("${}") for r in _resources(statement) if r != "${AWS::NoValue}"} <= {
            teams_table
        }
    others = {
        synthesized.logical_id(resource)
        for resource in [*stack.data.tables.values(), *stack.data.buckets.values(), stack.job_events.bus]
    } - {teams_table}
    text = json.dumps(statements)
    assert not [other for other in others if other in text]
    (apigateway,) = [s for s in statements if any(a.startswith("apigateway:") for a in _actions(s))]
    assert _actions(apigateway) == {"apigateway:GET"}
    assert [_control_plane_path(r) for r in _resources(apigateway)] == ["/apikeys/*"]
    assert not [s for s in statements if any(a.startswith(("ssm:", "states:", "s3:")) for a in _actions(s))]


def test_the_admin_function_manages_teams_and_their_keys_in_this_apis_plans(synthesized: Synthesized) -> None:
    stack = synthesized.stack
    (admin_family,) = _admin_families()
    admin = stack.functions.api[admin_family].function
    statements = _statements(synthesized, _role_id(synthesized, admin))
    teams_table = synthesized.logical_id(stack.data.tables["teams_table"])
    on_teams = set().union(*(_actions(s) for s in statements if any(teams_table in r for r in _resources(s))))
    assert {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem"} <= on_teams

    apigateway = [s for s in statements if any(a.startswith("apigateway:") for a in _actions(s))]
    granted = {
        (action, _control_plane_path(r)) for s in apigateway for action in _actions(s) for r in _resources(s)
    }
    plans = {synthesized.logical_id(plan) for plan in stack.api.usage_plans.values()}
    assert granted == {
        ("apigateway:POST", "/apikeys"),
        ("apigateway:DELETE", "/apikeys/*"),
        *{("apigateway:POST", f"/usageplans/${{{plan}}}/keys") for plan in plans},
    }
    (ssm,) = [s for s in statements if any(a.startswith("ssm:") for a in _actions(s))]
    assert _actions(ssm) == {"ssm:GetParameter"}
    parameter = next(iter(synthesized.resources("AWS::SSM::Parameter")))
    assert parameter in json.dumps(ssm["Resource"])
    # no other function may touch API keys, usage plans or the parameter
    for deployed_function in stack.functions.all():
        if deployed_function.function in (admin, stack.functions.authorizer.function):
            continue
        text = json.dumps(_statements(synthesized, _role_id(synthesized, deployed_function.function)))
        assert "apigateway:" not in text and "ssm:" not in text, deployed_function.function.node.id


def test_the_admin_keys_policy_is_not_what_the_admin_function_waits_for(synthesized: Synthesized) -> None:
    """The key grants name the usage plans, which come after the admin methods and so after the admin
    function: they live in a policy of their own that the function does not depend on (no cycle)."""
    (admin_family,) = _admin_families()
    admin = synthesized.stack.functions.api[admin_family].function
    resource = synthesized.template_json["Resources"][synthesized.logical_id(admin)]
    plans = {synthesized.logical_id(plan) for plan in synthesized.stack.api.usage_plans.values()}
    keys_policies = [
        key
        for key, policy in synthesized.resources("AWS::IAM::Policy").items()
        if any(isinstance(item, dict) and item.get("Ref") in plans for item in walk(policy))
    ]
    assert len(keys_policies) == 1
    assert keys_policies[0] not in resource.get("DependsOn", [])


def test_a_new_registry_table_reaches_exactly_the_functions_that_declare_it(probe: Synthesized) -> None:
    """What a helper adding a table does: a TableSpec in the registry, a setting, code reading it, and the
    step's declaration. The table is deployed, every function learns its name, and only the function
    declaring it (the probe's ledger step) may read and write it."""
    stack = probe.stack
    table = stack.data.tables[PROBE_LEDGER.setting]
    table_id = probe.logical_id(table)
    for deployed_function in stack.functions.all():
        variables = _variables(probe, deployed_function.function)
        assert variables["PROBE_LEDGER_TABLE"] == {"Ref": table_id}
        statements = _statements(probe, _role_id(probe, deployed_function.function))
        actions = set().union(*(_actions(s) for s in statements if table_id in json.dumps(s["Resource"])))
        if deployed_function.function.node.id == "ProbeLedgerStep":
            assert {
                "dynamodb:GetItem",
                "dynamodb:PutItem",
                "dynamodb:UpdateItem",
                "dynamodb:Query",
            } <= actions
        else:
            assert not actions, deployed_function.function.node.id


def test_the_usage_table_is_granted_to_the_code_that_meters(deployed: Synthesized) -> None:
    """The registry's usage table (metering): read/write exactly where the carried code names
    `usage_table` (every API function and step meters), never for the authorizer."""
    stack = deployed.stack
    assert "usage_table" in stack.data.tables
    table_id = deployed.logical_id(stack.data.tables["usage_table"])
    for deployed_function in stack.functions.all():
        statements = _statements(deployed, _role_id(deployed, deployed_function.function))
        granted = any(table_id in json.dumps(s["Resource"]) for s in statements)
        names_it = "usage_table" in deployed_function.sources.names_used(["usage_table"])
        expected = names_it and deployed_function.family != "authorizer"
        assert granted is expected, deployed_function.function.node.id
