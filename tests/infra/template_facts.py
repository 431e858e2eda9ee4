"""Reading facts back out of a synthesized CloudFormation template (paths, integrations, definitions)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def api_paths(template: dict[str, Any]) -> dict[str, str]:
    """Logical id of every AWS::ApiGateway::Resource (and of the root, as "ROOT") -> its full path."""
    resources = template["Resources"]
    paths: dict[str, str] = {}

    def path_of(logical_id: str) -> str:
        if logical_id not in paths:
            properties = resources[logical_id]["Properties"]
            parent = properties["ParentId"]
            parent_path = "" if "Fn::GetAtt" in parent else path_of(parent["Ref"])
            paths[logical_id] = f"{parent_path}/{properties['PathPart']}"
        return paths[logical_id]

    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::ApiGateway::Resource":
            path_of(logical_id)
    return paths


def methods(template: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(path, HTTP method) -> Method properties."""
    paths = api_paths(template)
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for resource in template["Resources"].values():
        if resource["Type"] != "AWS::ApiGateway::Method":
            continue
        properties = resource["Properties"]
        target = properties["ResourceId"]
        path = "/" if "Fn::GetAtt" in target else paths[target["Ref"]]
        found[(path, properties["HttpMethod"])] = properties
    return found


def integrated_function(method: dict[str, Any]) -> str | None:
    """Logical id of what a proxy integration calls: a function (`GetAtt <id>.Arn`) or an alias (`Ref`,
    which is the alias ARN)."""
    uri = method.get("Integration", {}).get("Uri")
    for part in walk(uri):
        if isinstance(part, dict) and "Fn::GetAtt" in part and part["Fn::GetAtt"][1] == "Arn":
            return str(part["Fn::GetAtt"][0])
        if isinstance(part, dict) and "Ref" in part and not str(part["Ref"]).startswith("AWS::"):
            return str(part["Ref"])
    return None


def definition(state_machine: dict[str, Any], assembly_directory: str) -> dict[str, Any]:
    """The ASL a synthesized state machine deploys, with every `${...}` substitution left as its name.

    `DefinitionBody.from_file` makes the file an asset (`DefinitionS3Location`); read it from the assembly.
    """
    properties = state_machine["Properties"]
    if "DefinitionS3Location" in properties:
        key = properties["DefinitionS3Location"]["Key"]
        asset: dict[str, Any] = json.loads(
            (Path(assembly_directory) / f"asset.{key}").read_text(encoding="utf-8")
        )
        return asset
    body = properties["DefinitionString"]
    if isinstance(body, dict):  # Fn::Join of literal parts and tokens
        separator, parts = body["Fn::Join"]
        body = separator.join(part if isinstance(part, str) else "TOKEN" for part in parts)
    parsed: dict[str, Any] = json.loads(body)
    return parsed


def walk(value: Any) -> Iterator[Any]:
    """`value` and every dict value and list item nested in it."""
    yield value
    if isinstance(value, dict):
        for item in value.values():
            yield from walk(item)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item)


def rendered(value: Any) -> str:
    """A template string with `Fn::Join` flattened, `Ref X` as `${X}` and `GetAtt X.Y` as `${X.Y}`."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        separator, parts = value["Fn::Join"]
        return str(separator).join(rendered(part) for part in parts)
    if isinstance(value, dict) and "Ref" in value:
        return "${" + str(value["Ref"]) + "}"
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "${" + ".".join(value["Fn::GetAtt"]) + "}"
    raise AssertionError(f"unexpected template value {value!r}")
