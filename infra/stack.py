"""ResearchStack: data, events, functions, the team authorizer, workflow, schedules, API and monitoring."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import CfnOutput, Duration, Stack
from constructs import Construct
from fastapi import FastAPI

from functions.local_runtime.gateway import load_function_apps
from infra.components.api import STAGE, Api
from infra.components.console import CONSOLE_DIST, Console, api_origin
from infra.components.data import Data
from infra.components.events import JobEvents, ResearchSchedules, UploadTrigger
from infra.components.functions import DataStores, Functions, depend_only_on_role_policy, module_exists
from infra.components.monitoring import Monitoring
from infra.components.workflow import Workflow
from infra.config import API_FUNCTIONS, KB_INGEST, Registry, StackOptions, usage_plans_parameter
from infra.nag import suppress
from infra.routes import routes_of


class ResearchStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        options: StackOptions,
        registry: Registry | None = None,
        function_apps: Mapping[str, FastAPI] | None = None,
        console_dist: Path | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.registry = registry or Registry.current()
        apps = (
            function_apps
            if function_apps is not None
            else load_function_apps([spec.family for spec in API_FUNCTIONS])
        )
        self.routes = routes_of(apps)

        # the knowledge-base ingest follows uploads to the data bucket through EventBridge
        uploads = frozenset({"data_bucket"}) if module_exists(KB_INGEST.handler) else frozenset()
        self.data = Data(
            self,
            "Data",
            tables=self.registry.tables,
            buckets=self.registry.buckets,
            retain=options.retain_data,
            event_bridge_buckets=uploads,
        )
        self.job_events = JobEvents(self, "Events", retain=options.retain_data)
        self.stores = DataStores(self.data.tables, self.data.buckets, self.job_events.bus)
        self.functions = Functions(
            self,
            "Functions",
            step_functions=self.registry.step_functions,
            stores=self.stores,
            options=options,
            usage_plans_parameter=usage_plans_parameter(self.stack_name),
        )
        self.workflow = self._workflow(options)
        self._knowledge_base_uploads()
        self.schedules = self._research_schedules()
        self.api = self._api(options)
        self.monitoring = self._monitoring(options)
        self.console = self._console(options, console_dist)

        self.functions.drop_redundant_role_dependencies()
        for machine in self.workflow.machines.values():
            depend_only_on_role_policy(machine, machine.role)
        self._outputs()

    def _workflow(self, options: StackOptions) -> Workflow:
        """The state machines of the registry, invoking the step Lambdas' live aliases."""
        return Workflow(
            self,
            "Workflow",
            stores=self.stores,
            state_machines=self.registry.state_machines,
            step_functions={logical_id: step.alias for logical_id, step in self.functions.steps.items()},
            log_retention_days=options.log_retention_days,
        )

    def _knowledge_base_uploads(self) -> None:
        if self.functions.ingest is not None:
            UploadTrigger(
                self,
                "KnowledgeBaseUploads",
                bucket=self.data.buckets["data_bucket"],
                prefix=KB_INGEST.prefix,
                function=self.functions.ingest.alias,
            )

    def _research_schedules(self) -> ResearchSchedules | None:
        """The job API starts, reads, resumes and stops the research machine and manages its schedules."""
        research = self.registry.research_machine()
        if research is None:
            return None
        orchestrate = self.functions.api["orchestrate"].function
        machine = self.workflow.machines[research.name]
        machine.grant_start_execution(orchestrate)
        machine.grant_read(orchestrate)
        machine.grant_task_response(orchestrate)  # approve/abort checkpoints resume a waiting task
        machine.grant_execution(orchestrate, "states:StopExecution")
        schedules = ResearchSchedules(self, "Schedules", state_machine=machine)
        schedules.grant_manage(orchestrate)
        assert orchestrate.role is not None
        suppress(
            orchestrate.role,
            "IAM5",
            "The job API describes and stops executions of the research state machine only; execution "
            "ARNs are `<machine>:<execution name>`, so they can only be granted with a trailing wildcard. "
            "ListSchedules has no resource-level scope.",
            [{"regex": "/^Resource::arn:.*:states:.*:execution:.*:\\*$/g"}, "Resource::*"],
        )
        orchestrate.add_environment("STATE_MACHINE_ARN", machine.state_machine_arn)
        orchestrate.add_environment("SCHEDULE_GROUP_NAME", schedules.group_name)
        orchestrate.add_environment("SCHEDULER_ROLE_ARN", schedules.role.role_arn)
        CfnOutput(self, "ResearchStateMachineArn", value=machine.state_machine_arn)
        CfnOutput(self, "ScheduleGroupName", value=schedules.group_name)
        return schedules

    def _api(self, options: StackOptions) -> Api:
        api = Api(
            self,
            "Api",
            routes=self.routes,
            functions={family: deployed.alias for family, deployed in self.functions.api.items()},
            authorizer_function=self.functions.authorizer.alias,
            options=options,
            # a streamed integration waits as long as the function may run
            streamed={
                spec.family: Duration.seconds(spec.timeout_seconds) for spec in API_FUNCTIONS if spec.streams
            },
            authorization={spec.family: spec.authorization for spec in API_FUNCTIONS},
        )
        api.grant_read_api_keys(self.functions.authorizer.function)
        mcp = self.functions.api.get("mcp")
        if mcp is not None:
            # the tools call the REST routes they mirror through this API's own stage; named from the API's
            # id and the stage's fixed name, since the stage waits for every method (and so for this function)
            mcp.function.add_environment(
                "MCP_API_BASE_URL",
                f"https://{api.rest_api.rest_api_id}.execute-api.{self.region}.{self.url_suffix}/{STAGE}",
            )
        for spec in API_FUNCTIONS:
            if spec.authorization == "iam":
                api.grant_create_team_keys(self.functions.api[spec.family].function)
        return api

    def _monitoring(self, options: StackOptions) -> Monitoring:
        return Monitoring(
            self,
            "Monitoring",
            functions={d.function.node.id: d.function for d in self.functions.all()},
            state_machines=self.workflow.machines,
            rest_api=self.api.rest_api,
            alarm_email=options.alarm_email,
            # the authorizer refuses a credential by failing ("Unauthorized"): its errors are refusals, and
            # a real failure of it is a 500 (AUTHORIZER_FAILURE) that the API 5xx alarm counts
            refusing_functions=frozenset({self.functions.authorizer.function.node.id}),
        )

    def _console(self, options: StackOptions, console_dist: Path | None) -> Console | None:
        if not options.console:
            return None
        console = Console(
            self,
            "Console",
            dist=console_dist or CONSOLE_DIST,
            api_url=self.api.rest_api.url,
            api_origin=api_origin(self.api.rest_api),
            access_logs=self.data.access_logs,
            retain=options.retain_data,
        )
        CfnOutput(self, "ConsoleUrl", value=f"https://{console.distribution.distribution_domain_name}/")
        return console

    def _outputs(self) -> None:
        CfnOutput(self, "ApiUrl", value=self.api.rest_api.url)
        CfnOutput(self, "JobEventBusName", value=self.job_events.bus.event_bus_name)
        CfnOutput(self, "JobEventsQueueUrl", value=self.job_events.queue.queue_url)
        for tier, plan in self.api.usage_plans.items():
            CfnOutput(self, f"{tier.capitalize()}UsagePlanId", value=plan.usage_plan_id)
        CfnOutput(
            self,
            "AdminInvokeArn",
            description="Grant execute-api:Invoke on this to the platform team's IAM principals",
            value=self.api.rest_api.arn_for_execute_api("*", "/admin/*", STAGE),
        )
