"""Lambda settings per function, asset contents, alarms and the dashboard."""

from __future__ import annotations

import json
from pathlib import Path

from infra.config import API_FUNCTIONS
from tests.infra.conftest import Synthesized

DEV_ONLY = {"moto", "pytest", "aws-cdk-lib", "cdk-nag", "cfn-lint", "uvicorn", "mypy", "ruff", "jsii"}


def test_functions_run_python_313_on_arm64_with_tracing_and_powertools(synthesized: Synthesized) -> None:
    functions = synthesized.resources("AWS::Lambda::Function")
    ingest = 1 if synthesized.stack.functions.ingest else 0
    assert len(functions) == len(API_FUNCTIONS) + len(synthesized.stack.registry.step_functions) + ingest
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


def test_api_functions_fit_the_gateway_timeout_and_protect_upstreams(deployed: Synthesized) -> None:
    for spec in API_FUNCTIONS:
        function = deployed.stack.functions.api[spec.family].function
        properties = deployed.template_json["Resources"][deployed.logical_id(function)]["Properties"]
        assert properties["Timeout"] <= 29 and properties["MemorySize"] == spec.memory_mb
        assert properties.get("ReservedConcurrentExecutions") == spec.reserved_concurrency


def test_each_asset_carries_only_its_own_closure(synthesized: Synthesized) -> None:
    for deployed_function in synthesized.stack.functions.all():
        sources = deployed_function.sources
        handler_module = deployed_function.function.node.id and sources.handler.rpartition(".")[0]
        assert Path(*handler_module.split(".")).with_suffix(".py") in sources.files
        assert not any(path.parts[:2] == ("functions", "local_runtime") for path in sources.files)
        assert not sources.distribution_names & {"boto3", "botocore", "s3transfer"}  # the runtime has them
        assert not sources.distribution_names & DEV_ONLY


def test_alarms_cover_functions_machines_and_api_5xx(synthesized: Synthesized) -> None:
    alarms = [alarm["Properties"] for alarm in synthesized.resources("AWS::CloudWatch::Alarm").values()]
    by_metric: dict[str, int] = {}
    for alarm in alarms:
        by_metric[alarm["MetricName"]] = by_metric.get(alarm["MetricName"], 0) + 1
        assert alarm["AlarmActions"], "every alarm notifies the alarm topic"
    functions = len(synthesized.stack.functions.all())
    machines = len(synthesized.stack.workflow.machines)
    assert by_metric["Errors"] == functions and by_metric["Throttles"] == functions
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
    assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}
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


def test_grants_follow_the_settings_each_function_reads(deployed: Synthesized) -> None:
    tables = {setting: deployed.logical_id(table) for setting, table in deployed.stack.data.tables.items()}
    buckets = {
        setting: deployed.logical_id(bucket) for setting, bucket in deployed.stack.data.buckets.items()
    }
    for deployed_function in deployed.stack.functions.all():
        role = deployed_function.function.role
        assert role is not None
        policies = _policy_text(deployed, deployed.logical_id(role))
        used = deployed_function.sources.names_used([*tables, *buckets])
        for setting, logical_id in {**tables, **buckets}.items():
            assert (logical_id in policies) is (setting in used), (
                f"{deployed_function.function.node.id}: {setting}"
            )
    rag = deployed.stack.functions.api["rag"].function
    assert rag.role is not None
    rag_policies = _policy_text(deployed, deployed.logical_id(rag.role))
    assert "s3:GetObject" in rag_policies and "s3:PutObject" not in rag_policies  # reads the index only
