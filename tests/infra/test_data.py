"""Tables and buckets of the registry: on-demand, PITR, TTL, encrypted; buckets private and TLS-only."""

from __future__ import annotations

from functions.common import resources
from tests.infra.conftest import Synthesized
from tests.infra.template_facts import walk


def _table(synthesized: Synthesized, setting: str) -> dict[str, object]:
    table = synthesized.stack.data.tables[setting]
    properties: dict[str, object] = synthesized.template_json["Resources"][synthesized.logical_id(table)][
        "Properties"
    ]
    return properties


def test_every_registry_table_is_on_demand_with_pitr_encryption_and_ttl(deployed: Synthesized) -> None:
    assert len(deployed.resources("AWS::DynamoDB::Table")) == len(resources.TABLES)
    for spec in resources.TABLES:
        table = _table(deployed, spec.setting)
        assert table["BillingMode"] == "PAY_PER_REQUEST"
        assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
        assert table["SSESpecification"] == {"SSEEnabled": True}
        keys = {key["AttributeName"]: key["KeyType"] for key in table["KeySchema"]}  # type: ignore[attr-defined]
        assert keys[spec.partition_key] == "HASH"
        if spec.sort_key:
            assert keys[spec.sort_key] == "RANGE"
        if spec.ttl_attribute:
            assert table["TimeToLiveSpecification"] == {"AttributeName": spec.ttl_attribute, "Enabled": True}
        else:
            assert "TimeToLiveSpecification" not in table


def test_the_registry_indexes_are_deployed_as_it_declares_them(deployed: Synthesized) -> None:
    for spec in resources.TABLES:
        table = _table(deployed, spec.setting)
        deployed_indexes = {index["IndexName"]: index for index in table.get("GlobalSecondaryIndexes") or []}  # type: ignore[attr-defined]
        assert set(deployed_indexes) == {index.name for index in spec.indexes}
        for index in spec.indexes:
            deployed_index = deployed_indexes[index.name]
            assert deployed_index["KeySchema"] == [{"AttributeName": index.partition_key, "KeyType": "HASH"}]
            projection = deployed_index["Projection"]
            assert projection["ProjectionType"] == "INCLUDE"
            assert set(projection["NonKeyAttributes"]) == set(index.projected)


def _bucket_policy_statements(synthesized: Synthesized, bucket_id: str) -> list[dict[str, object]]:
    for policy in synthesized.resources("AWS::S3::BucketPolicy").values():
        if policy["Properties"]["Bucket"] == {"Ref": bucket_id}:
            statements: list[dict[str, object]] = policy["Properties"]["PolicyDocument"]["Statement"]
            return statements
    raise AssertionError(f"no bucket policy for {bucket_id}")


def test_every_bucket_is_encrypted_private_and_tls_only(deployed: Synthesized) -> None:
    buckets = deployed.resources("AWS::S3::Bucket")
    console = 2 if deployed.stack.console else 0  # its site bucket and its CloudFront log bucket
    assert len(buckets) == len(resources.BUCKETS) + 1 + console  # + the access-log bucket
    for bucket_id, bucket in buckets.items():
        properties = bucket["Properties"]
        (rule,) = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in ("AES256", "aws:kms")
        assert properties["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
        denies_plain_http = [
            statement
            for statement in _bucket_policy_statements(deployed, bucket_id)
            if statement["Effect"] == "Deny"
            and statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
            and statement["Action"] == "s3:*"
        ]
        assert denies_plain_http, f"{bucket_id} accepts requests without TLS"


def test_registry_buckets_have_versioning_lifecycle_and_access_logs(deployed: Synthesized) -> None:
    for spec in resources.BUCKETS:
        bucket = deployed.stack.data.buckets[spec.setting]
        properties = deployed.template_json["Resources"][deployed.logical_id(bucket)]["Properties"]
        assert (properties.get("VersioningConfiguration") == {"Status": "Enabled"}) is spec.versioned
        rules = {rule["Id"]: rule for rule in properties["LifecycleConfiguration"]["Rules"]}
        for prefix, days in spec.expiring_prefixes.items():
            rule = rules[f"expire-{prefix.strip('/')}"]
            assert rule["Prefix"] == prefix and rule["ExpirationInDays"] == days
        if spec.versioned:
            assert rules["expire-old-versions"]["NoncurrentVersionExpiration"]["NoncurrentDays"] == 90
        assert properties["LoggingConfiguration"]["LogFilePrefix"] == f"{spec.setting}/"


def test_functions_get_resource_names_through_their_settings(deployed: Synthesized) -> None:
    for deployed_function in deployed.stack.functions.all():
        resource = deployed.template_json["Resources"][deployed.logical_id(deployed_function.function)]
        environment = resource["Properties"]["Environment"]["Variables"]
        settings = [spec.setting for spec in resources.TABLES] + [spec.setting for spec in resources.BUCKETS]
        for setting in settings:
            assert setting.upper() in environment
        assert any(isinstance(item, dict) and "Ref" in item for item in walk(environment["JOBS_TABLE"]))


def test_the_traces_table_expires_its_items(deployed: Synthesized) -> None:
    """Answer and job traces: one key `trace_id`, DynamoDB TTL on `expires_at` (the store writes it)."""
    table = _table(deployed, "traces_table")
    keys = {key["AttributeName"]: key["KeyType"] for key in table["KeySchema"]}  # type: ignore[attr-defined]
    assert keys["trace_id"] == "HASH"
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert table["BillingMode"] == "PAY_PER_REQUEST"
