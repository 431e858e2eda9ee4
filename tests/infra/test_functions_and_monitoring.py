"""Lambda settings per function, asset contents, alarms and the dashboard."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from infra import bundling
from infra.config import API_FUNCTIONS, WEB_ADAPTER
from tests.infra.conftest import Synthesized
from tests.infra.template_facts import rendered

DEV_ONLY = {"moto", "pytest", "aws-cdk-lib", "cdk-nag", "cfn-lint", "uvicorn", "mypy", "ruff", "jsii"}
# The code that seals (admin's routes) and opens (the webhook sender, the team-key reader) the teams'
# secrets: a function may declare a use of the key only when it carries that code.
SEALS = {
    "webhook-secret": Path("functions/teams/routes.py"),
    "upstream-key": Path("functions/teams/routes.py"),
}
OPENS = {
    "webhook-secret": Path("functions/webhooks/sender.py"),
    "upstream-key": Path("functions/search/team_keys.py"),
}
DYNAMODB_WRITES = ("dynamodb:Put", "dynamodb:Update", "dynamodb:Delete", "dynamodb:BatchWrite")
STREAMING = [spec for spec in API_FUNCTIONS if spec.streams]


def test_functions_run_python_313_on_arm64_with_tracing_and_powertools(synthesized: Synthesized) -> None:
    functions = {
        logical_id: function
        for logical_id, function in synthesized.resources("AWS::Lambda::Function").items()
        if logical_id not in synthesized.cdk_handlers()
    }
    ingest = 1 if synthesized.stack.functions.ingest else 0
    authorizer = 1
    assert len(functions) == (
        len(API_FUNCTIONS) + authorizer + len(synthesized.stack.registry.step_functions) + ingest
    )
    for function in functions.values():
        properties = function["Properties"]
        assert properties["Runtime"] == "python3.13"
        assert properties["Architectures"] == ["arm64"]
        assert properties["TracingConfig"] == {"Mode": "Active"}
        variables = properties["Environment"]["Variables"]
        assert variables["POWERTOOLS_SERVICE_NAME"] and variables["POWERTOOLS_METRICS_NAMESPACE"]
        assert "LoggingConfig" in properties  # its own log group with a retention


def test_step_functions_outlive_the_45_second_task_timeout(synthesized: Synthesized) -> None:
    for step in synthesized.stack.functions.steps.values():
        resource = synthesized.template_json["Resources"][synthesized.logical_id(step.function)]
        assert resource["Properties"]["Timeout"] > 45


def _properties(synthesized: Synthesized, family: str) -> dict[str, Any]:
    function = synthesized.stack.functions.api[family].function
    properties: dict[str, Any] = synthesized.template_json["Resources"][synthesized.logical_id(function)][
        "Properties"
    ]
    return properties


def test_api_functions_fit_the_gateway_timeout_and_protect_upstreams(deployed: Synthesized) -> None:
    for spec in API_FUNCTIONS:
        properties = _properties(deployed, spec.family)
        # buffered integrations end at 29 s; streamed ones may run up to 15 minutes
        assert properties["Timeout"] <= (900 if spec.streams else 29)
        assert properties["MemorySize"] == spec.memory_mb
        assert properties.get("ReservedConcurrentExecutions") == spec.reserved_concurrency


def test_the_answer_function_runs_under_the_lambda_web_adapter(deployed: Synthesized) -> None:
    """The answer function and the MCP server (`/mcp`) stream; every other API function is buffered."""
    assert [spec.family for spec in STREAMING] == ["answer", "mcp"]
    for spec in STREAMING:
        properties = _properties(deployed, spec.family)
        assert properties["Handler"] == "run.sh"  # /opt/bootstrap execs $LAMBDA_TASK_ROOT/$_HANDLER
        assert properties["MemorySize"] == spec.memory_mb and properties["Timeout"] == 60
        assert properties["Runtime"] == "python3.13" and properties["Architectures"] == ["arm64"]
        (layer,) = properties["Layers"]
        assert rendered(layer) == (
            "arn:${AWS::Partition}:lambda:${AWS::Region}:753240598075:layer:LambdaAdapterLayerArm64:30"
        )
        variables = properties["Environment"]["Variables"]
        assert variables["AWS_LAMBDA_EXEC_WRAPPER"] == "/opt/bootstrap"
        assert variables["AWS_LWA_INVOKE_MODE"] == "response_stream"
        assert variables["AWS_LWA_PORT"] == str(WEB_ADAPTER.port)
        assert variables["POWERTOOLS_SERVICE_NAME"] == spec.family
    assert _properties(deployed, "answer")["MemorySize"] == 2048
    for spec in API_FUNCTIONS:
        if not spec.streams:  # Mangum functions keep the plain Python runtime
            other = _properties(deployed, spec.family)
            assert "Layers" not in other and other["Handler"] == spec.entry
            assert "AWS_LAMBDA_EXEC_WRAPPER" not in other["Environment"]["Variables"]


def test_the_staged_answer_asset_starts_uvicorn_on_the_adapter_port(deployed: Synthesized) -> None:
    """The very directory `cdk deploy` zips (the CLI keeps each file's mode): an executable run.sh that
    serves the answer app, the locked uvicorn among the requirements, the embedder's module."""
    properties = _properties(deployed, "answer")
    key = properties["Code"]["S3Key"]
    asset = Path(deployed.artifact.assembly.directory) / f"asset.{key.removesuffix('.zip')}"
    script = asset / "run.sh"
    mode = script.stat().st_mode
    assert mode & stat.S_IXUSR and mode & stat.S_IXGRP and mode & stat.S_IXOTH
    text = script.read_text(encoding="utf-8")
    assert text.startswith("#!/bin/bash\n")
    assert (
        'exec python3 -m uvicorn functions.answer.web_adapter:app --host 127.0.0.1 --port "$AWS_LWA_PORT"'
        in text
    )
    assert (asset / "functions" / "answer" / "app.py").is_file()
    assert (asset / "functions" / "answer" / "web_adapter.py").is_file()
    requirements = (asset / "requirements.lock.txt").read_text(encoding="utf-8").splitlines()
    assert "uvicorn==0.54.0" in requirements and "mangum" not in " ".join(requirements)
    sources = deployed.stack.functions.api["answer"].sources
    assert bundling.EMBEDDER_MODULE in sources.files  # full bundling ships the int8 MiniLM weights


def test_each_asset_carries_only_its_own_closure(synthesized: Synthesized) -> None:
    for deployed_function in synthesized.stack.functions.all():
        sources = deployed_function.sources
        handler_module = deployed_function.function.node.id and sources.handler.rpartition(".")[0]
        assert Path(*handler_module.split(".")).with_suffix(".py") in sources.files
        assert not any(path.parts[:2] == ("functions", "local_runtime") for path in sources.files)
        assert not sources.distribution_names & {"boto3", "botocore", "s3transfer"}  # the runtime has them
        # uvicorn only where the Lambda Web Adapter starts it
        server = {WEB_ADAPTER.server_distribution} if deployed_function.streams else set()
        assert sources.distribution_names & DEV_ONLY == server


def test_alarms_cover_functions_machines_and_api_5xx(synthesized: Synthesized) -> None:
    alarms = [alarm["Properties"] for alarm in synthesized.resources("AWS::CloudWatch::Alarm").values()]
    by_metric: dict[str, int] = {}
    for alarm in alarms:
        by_metric[alarm["MetricName"]] = by_metric.get(alarm["MetricName"], 0) + 1
        assert alarm["AlarmActions"], "every alarm notifies the alarm topic"
    functions = len(synthesized.stack.functions.all())
    machines = len(synthesized.stack.workflow.machines)
    # the authorizer refuses credentials by failing: no error alarm (its real failures are API 5xx)
    assert by_metric["Errors"] == functions - 1 and by_metric["Throttles"] == functions
    authorizer_id = synthesized.logical_id(synthesized.stack.functions.authorizer.function)
    errors_of = [alarm for alarm in alarms if alarm["MetricName"] == "Errors" and "Dimensions" in alarm]
    assert not [
        a for a in errors_of if {"Name": "FunctionName", "Value": {"Ref": authorizer_id}} in a["Dimensions"]
    ]
    assert by_metric["ExecutionsFailed"] == machines and by_metric["ExecutionsTimedOut"] == machines
    assert by_metric["5XXError"] == 1
    assert len(synthesized.resources("AWS::CloudWatch::Dashboard")) == 1


def test_alarm_email_subscribes_to_the_topic(probe: Synthesized) -> None:
    (subscription,) = probe.resources("AWS::SNS::Subscription").values()
    assert subscription["Properties"]["Protocol"] == "email"
    assert subscription["Properties"]["Endpoint"] == "ops@example.org"


def test_book_uploads_trigger_the_knowledge_base_ingest(deployed: Synthesized) -> None:
    ingest = deployed.stack.functions.ingest
    assert ingest is not None, "functions/rag/ingest.py has a handler, so the ingest function is deployed"
    function_id = deployed.logical_id(ingest.function)
    alias_id = deployed.logical_id(ingest.alias)
    data_bucket = deployed.template_json["Resources"][
        deployed.logical_id(deployed.stack.data.buckets["data_bucket"])
    ]
    assert data_bucket["Properties"]["NotificationConfiguration"] == {
        "EventBridgeConfiguration": {"EventBridgeEnabled": True}
    }
    (rule,) = [
        r["Properties"]
        for r in deployed.resources("AWS::Events::Rule").values()
        if r["Properties"]["EventPattern"].get("source") == ["aws.s3"]
    ]
    assert rule["EventPattern"]["detail-type"] == ["Object Created"]
    assert rule["EventPattern"]["detail"]["object"]["key"] == [{"prefix": "kb-source/"}]
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Ref": alias_id}  # the published version SnapStart snapshots
    template = target["InputTransformer"]["InputTemplate"]
    assert (
        '"Records"' in template and "<detail-bucket-name>" in template and "<detail-object-key>" in template
    )
    variables = deployed.template_json["Resources"][function_id]["Properties"]["Environment"]["Variables"]
    assert variables["RAG_SOURCE_PREFIX"] == "kb-source/" and variables["OPENBLAS_NUM_THREADS"] == "1"


def _policy_text(synthesized: Synthesized, role_id: str) -> str:
    return json.dumps(
        [
            policy["Properties"]["PolicyDocument"]
            for policy in synthesized.resources("AWS::IAM::Policy").values()
            if {"Ref": role_id} in policy["Properties"]["Roles"]
        ]
    )


def test_grants_follow_what_each_function_declares(deployed: Synthesized) -> None:
    """Read/write, read only, or nothing on each registry table and bucket, and events, exactly as the
    function's spec declares (`uses`); and a declaration names only what the carried code names."""
    tables = {setting: deployed.logical_id(table) for setting, table in deployed.stack.data.tables.items()}
    buckets = {
        setting: deployed.logical_id(bucket) for setting, bucket in deployed.stack.data.buckets.items()
    }
    for deployed_function in deployed.stack.functions.all():
        name, uses = deployed_function.function.node.id, deployed_function.uses
        role = deployed_function.function.role
        assert role is not None
        role_id = deployed.logical_id(role)
        for setting, logical_id in {**tables, **buckets}.items():
            actions = _actions_on(deployed, role_id, logical_id)
            access = uses.access(setting)
            assert bool(actions) is (access is not None), f"{name}: {setting}"
            writes = {a for a in actions if a.startswith((*DYNAMODB_WRITES, "s3:Put", "s3:Delete"))}
            assert bool(writes) is (access == "read_write"), f"{name}: {setting} {sorted(writes)}"
        assert ("events:PutEvents" in _policy_text(deployed, role_id)) is uses.events, name
        named = deployed_function.sources.names_used([*tables, *buckets, "event_bus_name"])
        assert uses.settings <= named, f"{name} declares what its code never names: {uses.settings - named}"
        assert not uses.events or "event_bus_name" in named, name
    rag = deployed.stack.functions.api["rag"].function
    assert rag.role is not None
    rag_policies = _policy_text(deployed, deployed.logical_id(rag.role))
    assert "s3:GetObject" in rag_policies and "s3:PutObject" not in rag_policies  # reads the index only


def test_the_checkpoint_step_reaches_only_the_job_record_its_ledger_and_the_webhook(
    deployed: Synthesized,
) -> None:
    """Each step is granted what its state's work uses, not what its bundle carries: the Checkpoint step
    keeps the task token and state on the job record, is metered and sends `job.checkpoint_waiting` (the
    team's secret, read and decrypted for signing), nothing more."""
    step = deployed.stack.functions.steps["ResearchCheckpointStep"]
    role = step.function.role
    assert role is not None
    role_id = deployed.logical_id(role)
    data = deployed.stack.data
    granted = {
        setting
        for setting, resource in [*data.tables.items(), *data.buckets.items()]
        if _actions_on(deployed, role_id, deployed.logical_id(resource))
    }
    assert granted == {"jobs_table", "usage_table", "teams_table"}
    assert not {"dynamodb:PutItem", "dynamodb:UpdateItem"} & _actions_on(
        deployed, role_id, deployed.logical_id(data.tables["teams_table"])
    )
    policies = _policy_text(deployed, role_id)
    assert "events:PutEvents" not in policies and '"kms:Encrypt"' not in policies


def _actions_on(synthesized: Synthesized, role_id: str, resource_id: str) -> set[str]:
    """Every action a role's policies allow on a resource (named by logical id in `Resource`)."""
    actions: set[str] = set()
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if statement["Effect"] == "Allow" and f'"{resource_id}"' in json.dumps(statement["Resource"]):
                action = statement["Action"]
                actions.update([action] if isinstance(action, str) else action)
    return actions


def test_the_answer_function_gets_exactly_what_its_code_uses(deployed: Synthesized) -> None:
    """Traces read/write (it stores and serves them); the cache and rate-limit tables and the data bucket
    read/write (search cache, token buckets, extraction cache); uploaded documents read only; nothing of
    the jobs table, the artifacts bucket, the event bus or the state machine, which its code never names."""
    answer = deployed.stack.functions.api["answer"]
    role = answer.function.role
    assert role is not None
    role_id = deployed.logical_id(role)
    tables = {setting: deployed.logical_id(table) for setting, table in deployed.stack.data.tables.items()}
    buckets = {setting: deployed.logical_id(b) for setting, b in deployed.stack.data.buckets.items()}
    used = answer.sources.names_used([*tables, *buckets, "event_bus_name"])
    assert {"traces_table", "cache_table", "rate_limit_table", "documents_table", "data_bucket"} <= used
    assert not used & {"jobs_table", "artifacts_bucket", "event_bus_name"}

    read_write = {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:UpdateItem"}
    for setting in ("traces_table", "cache_table", "rate_limit_table"):
        assert read_write <= _actions_on(deployed, role_id, tables[setting]), setting
    documents = _actions_on(deployed, role_id, tables["documents_table"])
    assert {"dynamodb:GetItem", "dynamodb:Query", "dynamodb:Scan"} <= documents
    assert not {action for action in documents if action.startswith(("dynamodb:Put", "dynamodb:Update"))}
    assert not {a for a in documents if a.startswith(("dynamodb:Delete", "dynamodb:BatchWrite"))}
    teams = _actions_on(deployed, role_id, tables["teams_table"])  # the teams' own upstream keys, read only
    assert {"dynamodb:GetItem", "dynamodb:Query"} <= teams
    assert not {a for a in teams if a.startswith(("dynamodb:Put", "dynamodb:Update", "dynamodb:Delete"))}
    data = _actions_on(deployed, role_id, buckets["data_bucket"])
    assert "s3:PutObject" in data and {"s3:GetObject*", "s3:List*"} <= data
    for resource in (tables["jobs_table"], buckets["artifacts_bucket"]):
        assert not _actions_on(deployed, role_id, resource)
    policies = _policy_text(deployed, role_id)
    assert "events:PutEvents" not in policies and "states:" not in policies


def test_the_webhook_secret_key_is_used_only_as_each_function_needs(deployed: Synthesized) -> None:
    """Per purpose (the encryption context), as each function declares: the admin function (it rotates
    webhook secrets and stores the teams' own upstream keys) may only encrypt; the functions that sign
    webhooks may only decrypt webhook secrets, the functions that search (search API, research steps,
    answer) may only decrypt upstream keys; the authorizer and the others get nothing, nor the key's id.
    A function declares a use of the key only when it carries the code that seals or opens."""
    functions = deployed.stack.functions
    key_id = deployed.logical_id(functions.webhook_secret_key)
    (key,) = deployed.resources("AWS::KMS::Key").values()
    assert key["Properties"]["EnableKeyRotation"] is True and key["DeletionPolicy"] == "Retain"
    signers, searchers = [], []
    for deployed_function in functions.all():
        role = deployed_function.function.role
        assert role is not None
        uses, files = deployed_function.uses, deployed_function.sources.files
        expected: dict[str, set[str]] = {"webhook-secret": set(), "upstream-key": set()}
        for purpose in expected:
            if purpose in uses.encrypts:
                assert SEALS[purpose] in files, (deployed_function.function.node.id, purpose)
                expected[purpose].add("kms:Encrypt")
            if purpose in uses.decrypts:
                assert OPENS[purpose] in files, (deployed_function.function.node.id, purpose)
                expected[purpose].add("kms:Decrypt")
        if "webhook-secret" in uses.decrypts:
            signers.append(deployed_function.family)
        if "upstream-key" in uses.decrypts:
            searchers.append(deployed_function.family)
        role_id = deployed.logical_id(role)
        for purpose, actions in expected.items():
            assert _key_actions(deployed, role_id, key_id, purpose) == actions, (
                deployed_function.function.node.id,
                purpose,
            )
        function_id = deployed.logical_id(deployed_function.function)
        variables = deployed.template_json["Resources"][function_id]["Properties"]["Environment"]["Variables"]
        assert ("WEBHOOK_SECRET_KEY_ID" in variables) is any(expected.values())
    admin_role = deployed.logical_id(functions.api["admin"].function.role)
    assert "kms:Encrypt" in _key_actions(deployed, admin_role, key_id, "webhook-secret")
    assert _key_actions(deployed, admin_role, key_id, "upstream-key") == {"kms:Encrypt"}
    assert "steps" in signers and "authorizer" not in signers
    assert {"search", "steps", "answer"} <= set(searchers) and "authorizer" not in searchers
    for policy in deployed.resources("AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if f'"{key_id}"' in json.dumps(statement["Resource"]):
                assert statement["Condition"]["StringEquals"]["kms:EncryptionContext:purpose"] in (
                    "webhook-secret",
                    "upstream-key",
                )
                assert set(statement["Condition"]) == {"StringEquals"}


def _key_actions(deployed: Synthesized, role_id: str, key_id: str, purpose: str) -> set[str]:
    """The actions the role's policies allow on the key under one encryption-context purpose."""
    actions: set[str] = set()
    for policy in deployed.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} not in policy["Properties"].get("Roles", []):
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            if f'"{key_id}"' not in json.dumps(statement["Resource"]):
                continue
            if (
                statement.get("Condition", {}).get("StringEquals", {}).get("kms:EncryptionContext:purpose")
                != purpose
            ):
                continue
            found = statement["Action"]
            actions.update([found] if isinstance(found, str) else found)
    return actions
