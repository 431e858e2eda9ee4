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
        self.topic = sns.Topic(self, "AlarmTopic", display_name="Research API alarms", enforce_ssl=True)
        suppress(
            self.topic,
            "SNS2",
            "CloudWatch alarms cannot publish to a topic encrypted with the AWS-managed SNS key; alarm "
            "notifications carry only alarm names and metric values.",
        )
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        action = actions.SnsAction(self.topic)
        self.alarms: list[cloudwatch.Alarm] = []

        def alarm(
            name: str, metric: cloudwatch.IMetric, threshold: float, description: str
        ) -> cloudwatch.Alarm:
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
            created.add_alarm_action(action)
            self.alarms.append(created)
            return created

        dashboard = cloudwatch.Dashboard(
            self, "Dashboard", dashboard_name=f"{Stack.of(self).stack_name}-research"
        )
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
        alarm("Api5xx", rest_api.metric_server_error(period=PERIOD, statistic="Sum"), 5, "API 5xx responses")
        dashboard.add_widgets(*api_widgets)

        for name, machine in state_machines.items():
            alarm(f"{name}Failed", machine.metric_failed(period=PERIOD), 1, f"{name}: failed executions")
            alarm(
                f"{name}TimedOut", machine.metric_timed_out(period=PERIOD), 1, f"{name}: timed-out executions"
            )
            alarm(f"{name}Aborted", machine.metric_aborted(period=PERIOD), 1, f"{name}: aborted executions")
            dashboard.add_widgets(
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

        function_widgets: list[cloudwatch.IWidget] = []
        for logical_id, function in functions.items():
            if logical_id not in refusing_functions:
                alarm(
                    f"{logical_id}Errors", function.metric_errors(period=PERIOD), 5, f"{logical_id}: errors"
                )
            alarm(
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
            dashboard.add_widgets(*function_widgets[start : start + 3])
