"""State machines of the registry, loaded from `statemachine/*.asl.json` with definition substitutions.

The `${...}` names are those `functions.local_runtime.aws.EmbeddedAws.substitutions` offers too:
`${<LogicalId>Arn}` for every step Lambda plus the registry's `STATE_MACHINE_SUBSTITUTIONS`
(`${DataBucket}`, `${ArtifactsBucket}`, `${JobsTable}`, `${EventBusName}`). Grants are derived from
the Task states: a machine may invoke only the functions its tasks name and call only the service
actions its tasks use, on the resources they name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from functions.common import resources
from infra import asl
from infra.components.functions import DataStores, retention
from infra.nag import suppress

EXECUTION_TIMEOUT = Duration.hours(2)  # a whole job; every Task has its own 45 s TimeoutSeconds


class WorkflowDefinitionError(ValueError):
    pass


@dataclass(frozen=True)
class _Targets:
    """What each `${Name}` of a definition stands for, by kind."""

    functions: Mapping[str, lambda_.IFunction]
    buckets: Mapping[str, s3.IBucket]
    tables: Mapping[str, dynamodb.ITable]
    buses: Mapping[str, events.IEventBus]

    def substitutions(self) -> dict[str, str]:
        return {
            **{name: function.function_arn for name, function in self.functions.items()},
            **{name: bucket.bucket_name for name, bucket in self.buckets.items()},
            **{name: table.table_name for name, table in self.tables.items()},
            **{name: bus.event_bus_name for name, bus in self.buses.items()},
        }


class Workflow(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stores: DataStores,
        state_machines: tuple[resources.StateMachineSpec, ...],
        step_functions: Mapping[str, lambda_.IFunction],
        log_retention_days: int,
    ) -> None:
        super().__init__(scope, construct_id)
        self.machines: dict[str, sfn.StateMachine] = {}  # by registry name
        named = resources.STATE_MACHINE_SUBSTITUTIONS
        buckets, tables = stores.buckets, stores.tables
        targets = _Targets(
            functions={f"{logical_id}Arn": function for logical_id, function in step_functions.items()},
            buckets={name: buckets[setting] for name, setting in named.items() if setting in buckets},
            tables={name: tables[setting] for name, setting in named.items() if setting in tables},
            buses={name: stores.event_bus for name, setting in named.items() if setting == "event_bus_name"},
        )
        values = targets.substitutions()

        for spec in state_machines:
            path = spec.path
            unknown = asl.substitution_names(path) - values.keys()
            if unknown:
                raise WorkflowDefinitionError(f"{path.name}: no substitution for {sorted(unknown)}")
            logical_id = "".join(part.capitalize() for part in spec.name.replace("-", "_").split("_"))
            log_group = logs.LogGroup(
                self,
                f"{logical_id}Logs",
                log_group_name=f"/aws/vendedlogs/states/{scope.node.id}-{spec.name}",
                retention=retention(log_retention_days),
                removal_policy=RemovalPolicy.DESTROY,
            )
            machine = sfn.StateMachine(
                self,
                f"{logical_id}StateMachine",
                definition_body=sfn.DefinitionBody.from_file(str(path)),
                definition_substitutions=values,
                state_machine_type=sfn.StateMachineType.STANDARD,
                timeout=EXECUTION_TIMEOUT,
                tracing_enabled=True,
                logs=sfn.LogOptions(
                    destination=log_group, level=sfn.LogLevel.ALL, include_execution_data=True
                ),
            )
            self._grant_tasks(machine, asl.load(path), targets, path.name)
            suppress(
                machine.role,
                "IAM5",
                "Lambda invoke is granted on the exact functions the tasks name plus their versions/aliases "
                "(`<arn>:*`); log delivery and X-Ray actions have no resource-level scope.",
                [{"regex": "/^Resource::.*:\\*$/g"}, "Resource::*"],
            )
            self.machines[spec.name] = machine

    def _grant_tasks(
        self, machine: sfn.StateMachine, definition: dict[str, object], targets: _Targets, file: str
    ) -> None:
        for task in asl.task_states(definition):
            invoked = task.invoked_function
            if invoked is not None:
                function = targets.functions.get(_substitution(invoked, file, task.name))
                if function is None:
                    raise WorkflowDefinitionError(
                        f"{file}: task {task.name} invokes {invoked}, not a step Lambda"
                    )
                function.grant_invoke(machine)
                continue
            action = task.service_action
            if action is None:
                raise WorkflowDefinitionError(
                    f"{file}: task {task.name} has an unsupported Resource {task.resource}"
                )
            service, api = action
            parameters = task.definition.get("Parameters") or task.definition.get("Arguments") or {}
            iam_action = f"{service}:{api[:1].upper()}{api[1:]}"
            if service == "dynamodb":
                table = targets.tables.get(_substitution(parameters.get("TableName", ""), file, task.name))
                if table is None:
                    raise WorkflowDefinitionError(f"{file}: task {task.name} must name a registry table")
                machine.add_to_role_policy(
                    iam.PolicyStatement(actions=[iam_action], resources=[table.table_arn])
                )
            elif service == "events":
                for entry in parameters.get("Entries", []):
                    bus = targets.buses.get(_substitution(entry.get("EventBusName", ""), file, task.name))
                    if bus is None:
                        raise WorkflowDefinitionError(
                            f"{file}: task {task.name} must put events on ${{EventBusName}}"
                        )
                    bus.grant_put_events_to(machine)
            elif service == "s3":
                bucket = targets.buckets.get(_substitution(parameters.get("Bucket", ""), file, task.name))
                if bucket is None:
                    raise WorkflowDefinitionError(f"{file}: task {task.name} must name a registry bucket")
                machine.add_to_role_policy(
                    iam.PolicyStatement(actions=[iam_action], resources=[bucket.arn_for_objects("*")])
                )
            else:
                raise WorkflowDefinitionError(
                    f"{file}: task {task.name} calls {service}:{api}; teach infra/components/workflow.py its grant"
                )


def _substitution(value: str, file: str, task: str) -> str:
    match = asl.SUBSTITUTION.fullmatch(str(value))
    if not match:
        raise WorkflowDefinitionError(
            f"{file}: task {task} must reference its target as ${{Name}}, not {value!r}"
        )
    return match.group(1)
