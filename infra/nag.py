"""cdk-nag suppressions shared by several constructs, each with the reason it is acceptable here."""

from __future__ import annotations

from typing import Any

from cdk_nag import NagSuppressions
from constructs import IConstruct

LAMBDA_BASIC_EXECUTION = (
    "Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
)


def suppress(construct: IConstruct, rule: str, reason: str, applies_to: list[Any] | None = None) -> None:
    entry: dict[str, Any] = {"id": f"AwsSolutions-{rule}", "reason": reason}
    if applies_to:
        entry["appliesTo"] = applies_to
    NagSuppressions.add_resource_suppressions(construct, [entry], apply_to_children=True)


def suppress_function_role(function_role: IConstruct) -> None:
    """The wildcards CDK's grant helpers and the Lambda defaults produce, and why each is narrow enough."""
    suppress(
        function_role,
        "IAM4",
        "AWSLambdaBasicExecutionRole only allows writing this function's own CloudWatch logs.",
        [LAMBDA_BASIC_EXECUTION],
    )
    suppress(
        function_role,
        "IAM5",
        "Wildcards are scoped to this stack's own resources: object keys inside our buckets "
        "(`<bucket>/*`), secondary indexes of our tables (`<table>/index/*`), the S3 action families "
        "granted by grantRead/grantReadWrite, and X-Ray trace submission, which has no resource-level scope.",
        [
            {"regex": "/^Resource::.*\\/\\*$/g"},
            {"regex": "/^Resource::.*\\/index\\/\\*$/g"},
            {"regex": "/^Action::s3:.*\\*$/g"},
            "Resource::*",
        ],
    )
