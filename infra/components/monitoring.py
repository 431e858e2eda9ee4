"""Alarms on failed executions, function errors and throttles, API 5xx; one dashboard; an SNS topic."""

from __future__ import annotations

from collections.abc import Mapping

from aws_cdk import Duration, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.nag import suppress

PERIOD = Duration.minutes(5)


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        functions: Mapping[str, lambda_.Function],
        state_machines: Mapping[str, sfn.StateMachine],
        rest_api: apigw.RestApi,
        alarm_email: str | None,
        refusing_functions: frozenset[str] = frozenset(),
    ) -> None:
        """`refusing_functions`: functions (by id) whose errors are answers by design (the team authorizer
        refuses a credential by failing with "Unauthorized"): no error alarm, still a throttle alarm."""
        super().__init__(scope, construct_id)
        self.topic = self._alarm_topic(alarm_email)
        self._action = actions.SnsAction(self.topic)
        self.alarms: list[cloudwatch.Alarm] = []
        self._dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{Stack.of(self).stack_name}-research"
        )
        self._watch_api(rest_api)
        for name, machine in state_machines.items():
            self._watch_state_machine(name, machine)
        self._watch_functions(functions, refusing_functions)

    def _alarm_topic(self, alarm_email: str | None) -> sns.Topic:
        topic = sns.Topic(self, "AlarmTopic", display_name="Research API alarms", enforce_ssl=True)
        suppress(
            topic,
            "SNS2",
            "CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed SNS key; alarm "
            "notifications carry only alarm names and metric values.",
        )
        if alarm_email:
            topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        return topic

    def _alarm(self, name: str, metric: cloudwatch.IMetric, threshold: float, description: str) -> None:
        created = cloudwatch.Alarm(
            self,
            name,
            metric=metric,
            threshold=threshold,
            evaluation_periods=1,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            alarm_description=description,
        )
        created.add_alarm_action(self._action)
        self.alarms.append(created)

    def _watch_api(self, rest_api: apigw.RestApi) -> None:
        api_widgets = [
            cloudwatch.GraphWidget(
                title="API requests and errors",
                left=[rest_api.metric_count(period=PERIOD)],
                right=[
                    rest_api.metric_client_error(period=PERIOD),
                    rest_api.metric_server_error(period=PERIOD),
                ],
            ),
            cloudwatch.GraphWidget(
                title="API latency (p50, p99)",
                left=[
                    rest_api.metric_latency(period=PERIOD, statistic="p50"),
                    rest_api.metric_latency(period=PERIOD, statistic="p99"),
                ],
            ),
        ]
        self._alarm(
            "Api5xx", rest_api.metric_server_error(period=PERIOD, statistic="Sum"), 5, "API 5xx responses"
        )
        self._dashboard.add_widgets(*api_widgets)

    def _watch_state_machine(self, name: str, machine: sfn.StateMachine) -> None:
        self._alarm(f"{name}Failed", machine.metric_failed(period=PERIOD), 1, f"{name}: failed executions")
        self._alarm(
            f"{name}TimedOut", machine.metric_timed_out(period=PERIOD), 1, f"{name}: timed-out executions"
        )
        self._alarm(f"{name}Aborted", machine.metric_aborted(period=PERIOD), 1, f"{name}: aborted executions")
        self._dashboard.add_widgets(
            cloudwatch.GraphWidget(
                title=f"{name} executions",
                left=[
                    machine.metric_started(period=PERIOD),
                    machine.metric_succeeded(period=PERIOD),
                    machine.metric_failed(period=PERIOD),
                    machine.metric_timed_out(period=PERIOD),
                ],
            ),
            cloudwatch.GraphWidget(title=f"{name} duration", left=[machine.metric_time(period=PERIOD)]),
        )

    def _watch_functions(self, functions: Mapping[str, lambda_.Function], refusing: frozenset[str]) -> None:
        function_widgets: list[cloudwatch.IWidget] = []
        for logical_id, function in functions.items():
            if logical_id not in refusing:
                self._alarm(
                    f"{logical_id}Errors", function.metric_errors(period=PERIOD), 5, f"{logical_id}: errors"
                )
            self._alarm(
                f"{logical_id}Throttles",
                function.metric_throttles(period=PERIOD),
                1,
                f"{logical_id}: throttles",
            )
            function_widgets.append(
                cloudwatch.GraphWidget(
                    title=logical_id,
                    left=[function.metric_invocations(period=PERIOD), function.metric_errors(period=PERIOD)],
                    right=[function.metric_duration(period=PERIOD, statistic="p95")],
                    width=8,
                )
            )
        for start in range(0, len(function_widgets), 3):
            self._dashboard.add_widgets(*function_widgets[start : start + 3])
