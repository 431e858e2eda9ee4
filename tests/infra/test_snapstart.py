"""SnapStart on every Python function, and every invoker on the published version (the "live" alias).

SnapStart snapshots published versions only: an invoker that names a function's unqualified ARN runs
$LATEST, which is never snapshotted, so the cold start would be a full init again.
"""

from __future__ import annotations

from typing import Any

from functions.common.web.web_adapter import RESTORE_PATH
from infra.components.functions import LIVE_ALIAS
from infra.config import WEB_ADAPTER
from tests.infra.conftest import Synthesized
from tests.infra.template_facts import api_paths, integrated_function, methods, walk


def _python_functions(synthesized: Synthesized) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in synthesized.resources("AWS::Lambda::Function").items()
        if str(resource["Properties"].get("Runtime", "")).startswith("python")
        and logical_id not in synthesized.cdk_handlers()
    }


def _aliases_by_function(synthesized: Synthesized) -> dict[str, str]:
    """function logical id -> the logical id of its "live" alias (checked to point at its own version)."""
    versions = synthesized.resources("AWS::Lambda::Version")
    found: dict[str, str] = {}
    for alias_id, alias in synthesized.resources("AWS::Lambda::Alias").items():
        properties = alias["Properties"]
        assert properties["Name"] == LIVE_ALIAS
        function_id = properties["FunctionName"]["Ref"]
        version_id = properties["FunctionVersion"]["Fn::GetAtt"][0]
        assert versions[version_id]["Properties"]["FunctionName"] == {"Ref": function_id}
        assert function_id not in found, f"{function_id} has two aliases"
        found[function_id] = alias_id
    return found


def test_every_python_function_has_snapstart_on_published_versions(synthesized: Synthesized) -> None:
    functions = _python_functions(synthesized)
    assert len(functions) == len(synthesized.stack.functions.all())
    for logical_id, function in functions.items():
        properties = function["Properties"]
        runtime = properties["Runtime"]
        assert tuple(int(part) for part in runtime.removeprefix("python").split(".")) >= (3, 12), runtime
        assert properties.get("SnapStart") == {"ApplyOn": "PublishedVersions"}, logical_id
        # what SnapStart does not support: EFS, ephemeral storage above 512 MB (provisioned concurrency
        # is an alias/version property and is never set)
        assert "FileSystemConfigs" not in properties, logical_id
        assert properties.get("EphemeralStorage", {"Size": 512})["Size"] <= 512, logical_id


def test_every_python_function_has_a_live_alias_on_a_published_version(synthesized: Synthesized) -> None:
    aliases = _aliases_by_function(synthesized)
    assert set(aliases) == set(_python_functions(synthesized))
    for deployed in synthesized.stack.functions.all():
        assert aliases[synthesized.logical_id(deployed.function)] == synthesized.logical_id(deployed.alias)
    for alias in synthesized.resources("AWS::Lambda::Alias").values():
        assert "ProvisionedConcurrencyConfig" not in alias["Properties"]


def test_nothing_invokes_an_unpublished_function(synthesized: Synthesized) -> None:
    """A function's own ARN (`GetAtt <function>.Arn`) appears nowhere but in what describes the function:
    integrations, the authorizer, permissions, rule targets, the state machines' substitutions and their
    invoke grants all name the alias."""
    functions = set(_python_functions(synthesized))
    for logical_id, resource in synthesized.template_json["Resources"].items():
        for item in walk(resource.get("Properties", {})):
            if isinstance(item, dict) and "Fn::GetAtt" in item:
                target, attribute = item["Fn::GetAtt"][0], item["Fn::GetAtt"][1]
                assert not (target in functions and attribute == "Arn"), (
                    f"{logical_id} ({resource['Type']}) names the unpublished {target}"
                )


def test_api_integrations_and_the_authorizer_call_the_aliases(synthesized: Synthesized) -> None:
    aliases = set(_aliases_by_function(synthesized).values())
    integrated = {
        integrated_function(method)
        for method in methods(synthesized.template_json).values()
        if method.get("Integration", {}).get("Type") == "AWS_PROXY"
    }
    assert integrated and integrated <= aliases, integrated - aliases
    (authorizer,) = synthesized.resources("AWS::ApiGateway::Authorizer").values()
    uri_refs = {item["Ref"] for item in walk(authorizer["Properties"]["AuthorizerUri"]) if _is_ref(item)}
    assert synthesized.logical_id(synthesized.stack.functions.authorizer.alias) in uri_refs
    for permission in synthesized.resources("AWS::Lambda::Permission").values():
        assert permission["Properties"]["FunctionName"]["Ref"] in aliases, permission


def test_state_machine_substitutions_name_the_step_aliases(synthesized: Synthesized) -> None:
    steps = synthesized.stack.functions.steps
    for machine in synthesized.resources("AWS::StepFunctions::StateMachine").values():
        substitutions = machine["Properties"]["DefinitionSubstitutions"]
        named = {
            name.removesuffix("Arn"): value
            for name, value in substitutions.items()
            if name in {f"{step}Arn" for step in steps}
        }
        assert named, substitutions
        for step, value in named.items():
            assert value == {"Ref": synthesized.logical_id(steps[step].alias)}, (step, value)


def test_functions_under_the_web_adapter_get_the_restore_relayed(synthesized: Synthesized) -> None:
    """The Lambda Python runtime's restore hooks do not run under the adapter: its layer must be v1.1.0+
    (layer version 30, the first to relay SnapStart's after-restore) and name the app's restore route."""
    adapted = {
        logical_id: function["Properties"]
        for logical_id, function in _python_functions(synthesized).items()
        if function["Properties"].get("Layers")
    }
    assert adapted
    for logical_id, properties in adapted.items():
        (layer,) = properties["Layers"]
        arn = "".join(part if isinstance(part, str) else "" for part in layer["Fn::Join"][1])
        assert arn.endswith(":753240598075:layer:LambdaAdapterLayerArm64:30"), (logical_id, arn)
        variables = properties["Environment"]["Variables"]
        assert variables["AWS_LWA_SNAPSTART_AFTER_RESTORE_PATH"] == RESTORE_PATH, logical_id
        assert "AWS_LWA_ASYNC_INIT" not in variables  # ignored under SnapStart by v1.1.0 anyway
    assert WEB_ADAPTER.version == 30


def test_api_gateway_has_no_route_to_the_restore_hook(synthesized: Synthesized) -> None:
    """Only the adapter may call the restore route: no API Gateway resource, literal or templated
    (`{id}`, greedy `{path+}`), matches its path."""
    wanted = RESTORE_PATH.strip("/").split("/")

    def matches(path: str) -> bool:
        segments = path.strip("/").split("/")
        for depth, segment in enumerate(segments):
            if segment.startswith("{") and segment.endswith("+}"):
                return True
            if depth >= len(wanted) or not (segment.startswith("{") or segment == wanted[depth]):
                return False
        return len(segments) == len(wanted)

    paths = list(api_paths(synthesized.template_json).values())
    assert paths
    assert not [path for path in paths if matches(path)]


def _is_ref(item: Any) -> bool:
    return isinstance(item, dict) and "Ref" in item
