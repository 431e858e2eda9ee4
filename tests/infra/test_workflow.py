"""State machines: every Task has TimeoutSeconds 45 and a Retry; grants follow the tasks exactly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from functions.common import resources
from functions.local_runtime.aws import EmbeddedAws
from infra import asl
from tests.infra.conftest import PROBE_ASL, Synthesized, probe_registry
from tests.infra.template_facts import definition, walk

ASL_FILES = [*sorted(resources.STATEMACHINE_DIR.glob("*.asl.json")), PROBE_ASL]


def _assert_task_policy(states: dict[str, Any], where: str) -> int:
    tasks = asl.task_states(states)
    for task in tasks:
        name = "/".join([*task.path, task.name])
        assert task.definition.get("TimeoutSeconds") == 45, f"{where}: task {name} lacks TimeoutSeconds 45"
        retry = task.definition.get("Retry")
        assert retry, f"{where}: task {name} has no Retry"
        for rule in retry:
            assert rule["ErrorEquals"] and rule.get("MaxAttempts", 3) >= 1, (
                f"{where}: task {name} retries nothing"
            )
    return len(tasks)


@pytest.mark.parametrize("path", ASL_FILES, ids=lambda path: Path(path).name)
def test_every_task_of_every_state_machine_file_has_timeout_45_and_retry(path: Path) -> None:
    assert _assert_task_policy(asl.load(path), path.name) > 0


@pytest.mark.parametrize("path", ASL_FILES, ids=lambda path: Path(path).name)
def test_state_names_are_unique_across_the_whole_machine(path: Path) -> None:
    """The ASL spec and CloudFormation (DUPLICATE_STATE_NAME) refuse a name reused inside a Map/Parallel."""
    names = [name for name, _, _ in asl.iter_states(asl.load(path))]
    assert sorted({name for name in names if names.count(name) > 1}) == []


def test_every_task_of_every_synthesized_state_machine_has_timeout_45_and_retry(
    synthesized: Synthesized,
) -> None:
    machines = synthesized.resources("AWS::StepFunctions::StateMachine")
    assert len(machines) == len(synthesized.stack.registry.state_machines)
    for logical_id, machine in machines.items():
        _assert_task_policy(definition(machine, synthesized.artifact.assembly.directory), logical_id)


def test_state_machines_log_everything_and_trace(synthesized: Synthesized) -> None:
    for machine in synthesized.resources("AWS::StepFunctions::StateMachine").values():
        properties = machine["Properties"]
        assert properties["LoggingConfiguration"]["Level"] == "ALL"
        assert properties["LoggingConfiguration"]["IncludeExecutionData"] is True
        assert properties["TracingConfiguration"] == {"Enabled": True}
        assert properties["StateMachineType"] == "STANDARD"


def test_definition_substitutions_are_the_local_runtime_names(deployed: Synthesized) -> None:
    """The CDK app and EmbeddedAws must offer the same `${...}` names to the same ASL files."""
    with EmbeddedAws(state_machines=[]) as embedded:
        local_names = set(embedded.substitutions())
    for machine in deployed.resources("AWS::StepFunctions::StateMachine").values():
        assert set(machine["Properties"]["DefinitionSubstitutions"]) == local_names


def test_probe_substitutions_match_the_local_runtime_too(probe: Synthesized) -> None:
    registry = probe_registry()
    with EmbeddedAws(step_functions=registry.step_functions, state_machines=[]) as embedded:
        local_names = set(embedded.substitutions())
    (machine,) = probe.resources("AWS::StepFunctions::StateMachine").values()
    assert set(machine["Properties"]["DefinitionSubstitutions"]) == local_names
    assert asl.substitution_names(PROBE_ASL) <= local_names


def _role_statements(synthesized: Synthesized, role_id: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = []
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            statements.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return statements


def _actions(statement: dict[str, Any]) -> set[str]:
    actions = statement["Action"]
    return {actions} if isinstance(actions, str) else set(actions)


def test_state_machine_may_invoke_exactly_the_functions_its_tasks_name(synthesized: Synthesized) -> None:
    for spec in synthesized.stack.registry.state_machines:
        machine = synthesized.stack.workflow.machines[spec.name]
        named = {
            asl.SUBSTITUTION.fullmatch(task.invoked_function or "").group(1)[: -len("Arn")]  # type: ignore[union-attr]
            for task in asl.task_states(asl.load(spec.path))
            if task.invoked_function
        }
        # the "live" aliases (SnapStart snapshots published versions), never the functions' $LATEST
        expected = {synthesized.logical_id(synthesized.stack.functions.steps[name].alias) for name in named}
        role_id = synthesized.logical_id(machine.role)
        invoked = {
            item["Ref"] if "Ref" in item else item["Fn::GetAtt"][0]
            for statement in _role_statements(synthesized, role_id)
            if "lambda:InvokeFunction" in _actions(statement)
            for item in walk(statement["Resource"])
            if isinstance(item, dict) and ("Fn::GetAtt" in item or "Ref" in item)
        }
        assert invoked == expected


def test_service_integrations_are_granted_on_the_named_resources_only(probe: Synthesized) -> None:
    machine = probe.stack.workflow.machines["research"]
    statements = _role_statements(probe, probe.logical_id(machine.role))
    (put_item,) = [s for s in statements if "dynamodb:PutItem" in _actions(s)]
    assert _actions(put_item) == {"dynamodb:PutItem"}
    jobs_table = probe.logical_id(probe.stack.data.tables["jobs_table"])
    assert put_item["Resource"] == {"Fn::GetAtt": [jobs_table, "Arn"]}
    (put_events,) = [s for s in statements if "events:PutEvents" in _actions(s)]
    bus = probe.logical_id(probe.stack.job_events.bus)
    assert put_events["Resource"] == {"Fn::GetAtt": [bus, "Arn"]}
    assert not [
        s
        for s in statements
        if any(a.startswith(("s3:", "dynamodb:Scan", "dynamodb:Delete")) for a in _actions(s))
    ]


def test_scheduler_role_may_only_start_the_research_state_machine(synthesized: Synthesized) -> None:
    schedules = synthesized.stack.schedules
    assert schedules is not None, "the registry has a research state machine, so schedules are deployed"
    role_id = synthesized.logical_id(schedules.role)
    role = synthesized.template_json["Resources"][role_id]["Properties"]
    (trust,) = role["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    assert "aws:SourceArn" in trust["Condition"]["ArnLike"]
    assert "ManagedPolicyArns" not in role
    research = synthesized.stack.registry.research_machine()
    assert research is not None
    machine_id = synthesized.logical_id(synthesized.stack.workflow.machines[research.name])
    (statement,) = _role_statements(synthesized, role_id)
    assert statement == {
        "Action": "states:StartExecution",
        "Effect": "Allow",
        "Resource": {"Ref": machine_id},
    }


def test_job_api_knows_the_machine_and_the_schedule_group(synthesized: Synthesized) -> None:
    orchestrate = synthesized.stack.functions.api["orchestrate"].function
    variables = synthesized.template_json["Resources"][synthesized.logical_id(orchestrate)]["Properties"][
        "Environment"
    ]["Variables"]
    assert {"STATE_MACHINE_ARN", "SCHEDULE_GROUP_NAME", "SCHEDULER_ROLE_ARN", "EVENT_BUS_NAME"} <= set(
        variables
    )
    statements = _role_statements(synthesized, synthesized.logical_id(orchestrate.role))
    actions = set().union(*(_actions(s) for s in statements))
    assert {
        "states:StartExecution",
        "scheduler:CreateSchedule",
        "scheduler:DeleteSchedule",
        "iam:PassRole",
    } <= actions


def test_job_events_rule_delivers_completed_and_failed_jobs(synthesized: Synthesized) -> None:
    bus = {"Ref": synthesized.logical_id(synthesized.stack.job_events.bus)}
    (rule,) = [
        r
        for r in synthesized.resources("AWS::Events::Rule").values()
        if r["Properties"].get("EventBusName") == bus
    ]
    assert set(rule["Properties"]["EventPattern"]["detail-type"]) == {
        "ResearchJobCompleted",
        "ResearchJobFailed",
    }
    (target,) = rule["Properties"]["Targets"]
    assert "DeadLetterConfig" in target and target["RetryPolicy"]["MaximumRetryAttempts"] == 8
