"""The job event bus (ResearchJobCompleted / ResearchJobFailed) and EventBridge Scheduler for research jobs."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from aws_cdk import aws_sqs as sqs
from aws_cdk import aws_stepfunctions as sfn
from constructs import Construct

from infra.nag import suppress

JOB_EVENT_TYPES = ("ResearchJobCompleted", "ResearchJobFailed")
SCHEDULE_GROUP = "research-schedules"


class JobEvents(Construct):
    """A bus the workflow publishes job outcomes to, an archive for replay, and a durable queue subscriber."""

    def __init__(self, scope: Construct, construct_id: str, *, retain: bool) -> None:
        super().__init__(scope, construct_id)
        self.bus = events.EventBus(self, "Bus", event_bus_name=f"{Stack.of(self).stack_name}-jobs")
        self.bus.archive(
            "Archive",
            event_pattern=events.EventPattern(detail_type=list(JOB_EVENT_TYPES)),
            retention=Duration.days(30),
        )
        dead_letters = sqs.Queue(
            self,
            "JobEventsDeadLetters",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )
        suppress(dead_letters, "SQS3", "This queue is itself the dead-letter queue of the job-events queue.")
        self.queue = sqs.Queue(
            self,
            "JobEventsQueue",
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            retention_period=Duration.days(14),
            dead_letter_queue=sqs.DeadLetterQueue(queue=dead_letters, max_receive_count=5),
            removal_policy=RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY,
        )
        self.rule = events.Rule(
            self,
            "JobFinishedRule",
            event_bus=self.bus,
            description="Research jobs that completed or failed, for subscribers",
            event_pattern=events.EventPattern(detail_type=list(JOB_EVENT_TYPES)),
            targets=[targets.SqsQueue(self.queue, dead_letter_queue=dead_letters, retry_attempts=8)],
        )


class ResearchSchedules(Construct):
    """A schedule group and the one role its schedules use: it may only start the research state machine."""

    def __init__(self, scope: Construct, construct_id: str, *, state_machine: sfn.IStateMachine) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.group_name = f"{stack.stack_name}-{SCHEDULE_GROUP}"
        self.group = scheduler.CfnScheduleGroup(self, "Group", name=self.group_name)
        self.role = iam.Role(
            self,
            "SchedulerRole",
            description="Assumed by EventBridge Scheduler to start scheduled research jobs",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="scheduler", resource="schedule", resource_name=f"{self.group_name}/*"
                        )
                    },
                },
            ),
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["states:StartExecution"], resources=[state_machine.state_machine_arn]
            )
        )

    @property
    def schedule_arn_pattern(self) -> str:
        return Stack.of(self).format_arn(
            service="scheduler", resource="schedule", resource_name=f"{self.group_name}/*"
        )

    def grant_manage(self, grantee: iam.IGrantable) -> None:
        """What the schedules API needs: CRUD on schedules of this group, and passing the scheduler role."""
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=[
                    "scheduler:CreateSchedule",
                    "scheduler:GetSchedule",
                    "scheduler:UpdateSchedule",
                    "scheduler:DeleteSchedule",
                ],
                resources=[self.schedule_arn_pattern],
            )
        )
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=["scheduler:ListSchedules"], resources=["*"])
        )
        self.role.grant_pass_role(grantee.grant_principal)


class UploadTrigger(Construct):
    """S3 "Object Created" events (EventBridge notifications of the bucket) under a prefix -> a function,
    reshaped into the S3-notification `Records` the handler reads. No custom resource is needed."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bucket: s3.IBucket,
        prefix: str,
        function: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        self.rule = events.Rule(
            self,
            "Rule",
            description=f"PDFs uploaded under {prefix} start the knowledge-base ingest",
            event_pattern=events.EventPattern(
                source=["aws.s3"],
                detail_type=["Object Created"],
                detail={"bucket": {"name": [bucket.bucket_name]}, "object": {"key": [{"prefix": prefix}]}},
            ),
            targets=[
                targets.LambdaFunction(
                    function,
                    retry_attempts=2,
                    event=events.RuleTargetInput.from_object(
                        {
                            "Records": [
                                {
                                    "s3": {
                                        "bucket": {
                                            "name": events.EventField.from_path("$.detail.bucket.name")
                                        },
                                        "object": {"key": events.EventField.from_path("$.detail.object.key")},
                                    }
                                }
                            ]
                        }
                    ),
                )
            ],
        )
