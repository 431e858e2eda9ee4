"""DynamoDB tables and S3 buckets of the registry: on-demand, PITR, TTL, encrypted, TLS-only, logged."""

from __future__ import annotations

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_s3 as s3
from cdk_nag import NagSuppressions
from constructs import Construct

from functions.common import resources


class Data(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        tables: tuple[resources.TableSpec, ...],
        buckets: tuple[resources.BucketSpec, ...],
        retain: bool,
        event_bridge_buckets: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(scope, construct_id)
        removal = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        # by settings attribute, e.g. "jobs_table"
        self.tables: dict[str, dynamodb.Table] = {spec.setting: self._table(spec, removal) for spec in tables}
        self.access_logs = self._access_logs_bucket(removal)
        self.buckets: dict[str, s3.Bucket] = {
            spec.setting: self._bucket(spec, removal, spec.setting in event_bridge_buckets)
            for spec in buckets
        }

    def _table(self, spec: resources.TableSpec, removal: RemovalPolicy) -> dynamodb.Table:
        table = dynamodb.Table(
            self,
            _logical_id(spec.setting),
            partition_key=dynamodb.Attribute(name=spec.partition_key, type=dynamodb.AttributeType.STRING),
            sort_key=(
                dynamodb.Attribute(name=spec.sort_key, type=dynamodb.AttributeType.STRING)
                if spec.sort_key
                else None
            ),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            time_to_live_attribute=spec.ttl_attribute,
            removal_policy=removal,
        )
        for index in spec.indexes:
            table.add_global_secondary_index(
                index_name=index.name,
                partition_key=dynamodb.Attribute(
                    name=index.partition_key, type=dynamodb.AttributeType.STRING
                ),
                projection_type=dynamodb.ProjectionType.INCLUDE,
                non_key_attributes=list(index.projected),
            )
        return table

    def _access_logs_bucket(self, removal: RemovalPolicy) -> s3.Bucket:
        access_logs = s3.Bucket(
            self,
            "AccessLogsBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,  # the only encryption S3 server access logging accepts
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-access-logs", expiration=Duration.days(90))],
            removal_policy=removal,
        )
        NagSuppressions.add_resource_suppressions(
            access_logs,
            [
                {
                    "id": "AwsSolutions-S1",
                    "reason": "This is the access-log bucket; logging it into itself would loop.",
                }
            ],
        )
        return access_logs

    def _bucket(self, spec: resources.BucketSpec, removal: RemovalPolicy, event_bridge: bool) -> s3.Bucket:
        bucket = s3.Bucket(
            self,
            _logical_id(spec.setting),
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            versioned=spec.versioned,
            lifecycle_rules=_lifecycle_rules(spec),
            server_access_logs_bucket=self.access_logs,
            server_access_logs_prefix=f"{spec.setting}/",
            removal_policy=removal,
        )
        if event_bridge:
            # set on the resource itself: the L2 `event_bridge_enabled` goes through a custom resource
            bucket_resource = bucket.node.default_child
            assert isinstance(bucket_resource, s3.CfnBucket)
            bucket_resource.notification_configuration = s3.CfnBucket.NotificationConfigurationProperty(
                event_bridge_configuration=s3.CfnBucket.EventBridgeConfigurationProperty(
                    event_bridge_enabled=True
                )
            )
        return bucket


def _lifecycle_rules(spec: resources.BucketSpec) -> list[s3.LifecycleRule]:
    """Expiry per prefix, incomplete uploads aborted after a day, old versions kept 90 days."""
    rules = [
        s3.LifecycleRule(id=f"expire-{prefix.strip('/')}", prefix=prefix, expiration=Duration.days(days))
        for prefix, days in sorted(spec.expiring_prefixes.items())
    ]
    rules.append(
        s3.LifecycleRule(
            id="abort-incomplete-uploads", abort_incomplete_multipart_upload_after=Duration.days(1)
        )
    )
    if spec.versioned:
        rules.append(
            s3.LifecycleRule(id="expire-old-versions", noncurrent_version_expiration=Duration.days(90))
        )
    return rules


def _logical_id(setting: str) -> str:
    """`jobs_table` -> `JobsTable` (also the `${...}` name the ASL uses for it)."""
    return "".join(part.capitalize() for part in setting.split("_"))
