"""The research console: private bucket behind CloudFront (OAC), HTTPS only, security headers with a CSP
that names the API's origin, config.json carrying the API's URL, and no cdk-nag finding waved through
that a static site can meet."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_s3 as s3

from infra.components.console import CONFIG_OBJECT, Console
from infra.config import API_FUNCTIONS
from infra.stack import ResearchStack
from tests.infra.conftest import Synthesized, synthesize
from tests.infra.template_facts import rendered


def _console(synthesized: Synthesized) -> Console:
    console = synthesized.stack.console
    assert console is not None
    return console


def _properties(synthesized: Synthesized, construct: Any) -> dict[str, Any]:
    properties: dict[str, Any] = synthesized.template_json["Resources"][synthesized.logical_id(construct)][
        "Properties"
    ]
    return properties


def _api_url(synthesized: Synthesized) -> str:
    return rendered(synthesized.template_json["Outputs"]["ApiUrl"]["Value"])


def _deployment(synthesized: Synthesized) -> dict[str, Any]:
    (deployment,) = synthesized.resources("Custom::CDKBucketDeployment").values()
    properties: dict[str, Any] = deployment["Properties"]
    return properties


def _deployed_files(synthesized: Synthesized) -> dict[str, str]:
    """Object key -> content of every file the deployment copies, with CDK's markers (the tokens
    json_data could not write at synth time) replaced by their rendered template values."""
    deployment = _deployment(synthesized)
    directory = Path(synthesized.artifact.assembly.directory)
    files: dict[str, str] = {}
    for key, markers in zip(deployment["SourceObjectKeys"], deployment["SourceMarkers"], strict=True):
        asset = directory / f"asset.{key.removesuffix('.zip')}"
        for path in sorted(item for item in asset.rglob("*") if item.is_file()):
            text = path.read_text(encoding="utf-8")
            for marker, value in markers.items():
                text = text.replace(marker, rendered(value))
            files[path.relative_to(asset).as_posix()] = text
    return files


def test_the_site_bucket_is_private_encrypted_logged_and_no_website(synthesized: Synthesized) -> None:
    console = _console(synthesized)
    bucket = _properties(synthesized, console.bucket)
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    (rule,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"] == {"SSEAlgorithm": "AES256"}
    assert "WebsiteConfiguration" not in bucket
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    access_logs = synthesized.logical_id(synthesized.stack.data.access_logs)
    assert bucket["LoggingConfiguration"] == {
        "DestinationBucketName": {"Ref": access_logs},
        "LogFilePrefix": "console/",
    }


def test_the_site_bucket_policy_admits_only_this_distribution_over_tls(synthesized: Synthesized) -> None:
    console = _console(synthesized)
    bucket_id = synthesized.logical_id(console.bucket)
    distribution_id = synthesized.logical_id(console.distribution)
    (policy,) = [
        policy
        for policy in synthesized.resources("AWS::S3::BucketPolicy").values()
        if policy["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    allows = [statement for statement in statements if statement["Effect"] == "Allow"]
    assert allows, "CloudFront cannot read the bucket"
    for statement in allows:
        assert statement["Principal"] == {"Service": "cloudfront.amazonaws.com"}
        assert statement["Action"] == "s3:GetObject"
        (source_arn,) = statement["Condition"]["StringEquals"].values()
        assert rendered(source_arn).endswith(f":distribution/${{{distribution_id}}}")
        assert rendered(statement["Resource"]) == f"${{{bucket_id}.Arn}}/*"
    (deny,) = [statement for statement in statements if statement["Effect"] == "Deny"]
    assert deny["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} and deny["Action"] == "s3:*"


def test_cloudfront_reads_the_bucket_through_origin_access_control(synthesized: Synthesized) -> None:
    console = _console(synthesized)
    config = _properties(synthesized, console.distribution)["DistributionConfig"]
    (origin,) = config["Origins"]
    assert origin["DomainName"] == {
        "Fn::GetAtt": [synthesized.logical_id(console.bucket), "RegionalDomainName"]
    }
    assert origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}  # no legacy OAI
    oac_id = origin["OriginAccessControlId"]["Fn::GetAtt"][0]
    oac = synthesized.template_json["Resources"][oac_id]
    assert oac["Type"] == "AWS::CloudFront::OriginAccessControl"
    assert oac["Properties"]["OriginAccessControlConfig"] | {"Name": ""} == {
        "Name": "",
        "OriginAccessControlOriginType": "s3",
        "SigningBehavior": "always",
        "SigningProtocol": "sigv4",
    }


def test_the_distribution_is_https_only_logged_and_serves_index_html_at_the_root(
    synthesized: Synthesized,
) -> None:
    console = _console(synthesized)
    config = _properties(synthesized, console.distribution)["DistributionConfig"]
    behaviors = [config["DefaultCacheBehavior"], *config.get("CacheBehaviors", [])]
    for behavior in behaviors:
        assert behavior["ViewerProtocolPolicy"] == "redirect-to-https"
        assert behavior["AllowedMethods"] == ["GET", "HEAD"]
        assert behavior["ResponseHeadersPolicyId"] == {"Ref": synthesized.logical_id(console.headers)}
    assert config["DefaultRootObject"] == "index.html"
    assert config["Logging"]["Bucket"] == {
        "Fn::GetAtt": [synthesized.logical_id(console.cdn_logs), "RegionalDomainName"]
    }
    # the default certificate: TLS settings only arrive with a custom domain (the CFR4 suppression says so)
    assert "ViewerCertificate" not in config
    # no index.html for unknown paths: the page loads ./app.js relative to itself (see console.py)
    assert "CustomErrorResponses" not in config


def test_cloudfront_logs_go_to_a_private_bucket_that_accepts_their_acl(synthesized: Synthesized) -> None:
    console = _console(synthesized)
    logs = _properties(synthesized, console.cdn_logs)
    assert all(logs["PublicAccessBlockConfiguration"].values())
    # CloudFront standard logging writes with an ACL grant: ACLs must not be disabled
    assert logs["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerPreferred"}]}
    assert logs["LoggingConfiguration"]["DestinationBucketName"] == {
        "Ref": synthesized.logical_id(synthesized.stack.data.access_logs)
    }
    (rule,) = logs["LifecycleConfiguration"]["Rules"]
    assert rule["ExpirationInDays"] == 90 and rule["Status"] == "Enabled"


def test_every_response_carries_the_security_headers(synthesized: Synthesized) -> None:
    console = _console(synthesized)
    headers = _properties(synthesized, console.headers)["ResponseHeadersPolicyConfig"][
        "SecurityHeadersConfig"
    ]
    api_origin = re.fullmatch(r"(https://[^/]+)/.+/", _api_url(synthesized))
    assert api_origin, _api_url(synthesized)
    csp = headers["ContentSecurityPolicy"]
    assert csp["Override"] is True
    assert rendered(csp["ContentSecurityPolicy"]) == (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src 'self' {api_origin.group(1)}; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    )
    hsts = headers["StrictTransportSecurity"]
    assert hsts["AccessControlMaxAgeSec"] >= 365 * 24 * 3600
    assert hsts["IncludeSubdomains"] is True and hsts["Override"] is True
    assert headers["ContentTypeOptions"] == {"Override": True}
    assert headers["FrameOptions"] == {"FrameOption": "DENY", "Override": True}
    assert headers["ReferrerPolicy"] == {"ReferrerPolicy": "no-referrer", "Override": True}


def test_the_deployment_copies_the_build_and_a_config_naming_the_api(
    synthesized: Synthesized, console_dist: Path
) -> None:
    console = _console(synthesized)
    deployment = _deployment(synthesized)
    assert deployment["DestinationBucketName"] == {"Ref": synthesized.logical_id(console.bucket)}
    assert deployment["Prune"] is True
    # each deploy invalidates the edge caches, so the new build and config are served at once
    assert deployment["DistributionId"] == {"Ref": synthesized.logical_id(console.distribution)}
    assert deployment["DistributionPaths"] == ["/*"]
    assert deployment["SystemMetadata"] == {"cache-control": "public, max-age=300"}

    files = _deployed_files(synthesized)
    assert json.loads(files.pop(CONFIG_OBJECT)) == {"apiBaseUrl": _api_url(synthesized)}
    built = {
        path.relative_to(console_dist).as_posix(): path.read_text(encoding="utf-8")
        for path in console_dist.rglob("*")
        if path.is_file()
    }
    assert files == built and "index.html" in files


def test_the_deployment_handler_needs_no_docker_and_may_only_touch_its_buckets(deployed: Synthesized) -> None:
    console = _console(deployed)
    handler = _properties(deployed, console.deployment_handler)
    assert handler["Handler"] == "index.handler"  # CDK's prebuilt handler code: no bundling, no Docker
    role_id = deployed.logical_id(console.deployment.handler_role)
    policies = [
        policy["Properties"]["PolicyDocument"]["Statement"]
        for policy in deployed.resources("AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
    ]
    site = deployed.logical_id(console.bucket)
    writes = [
        statement
        for statements in policies
        for statement in statements
        if any(action.startswith(("s3:Put", "s3:Delete")) for action in statement["Action"])
    ]
    assert writes
    for statement in writes:
        assert {rendered(resource) for resource in statement["Resource"]} == {
            f"${{{site}.Arn}}",
            f"${{{site}.Arn}}/*",
        }


def test_the_console_meets_cdk_nag_without_waving_through_what_a_site_can_meet(
    synthesized: Synthesized,
) -> None:
    console = _console(synthesized)
    paths = (console.node.path, console.deployment_handler.node.path)
    assert [
        finding for finding in synthesized.nag_findings() if finding.startswith(tuple(f"/{p}" for p in paths))
    ] == []
    ids = {synthesized.logical_id(console.distribution), synthesized.logical_id(console.bucket)}
    ids |= {synthesized.logical_id(console.cdn_logs), synthesized.logical_id(console.deployment_handler)}
    suppressed = {
        rule["id"]
        for logical_id in ids
        for rule in synthesized.template_json["Resources"][logical_id]
        .get("Metadata", {})
        .get("cdk_nag", {})
        .get("rules_to_suppress", [])
    }
    # the geo restriction, WAF and the default certificate's TLS policy on the distribution; CDK's own
    # handler runtime and role. Never logging (CFR3, S1), OAC (CFR7), TLS-only (S10) or public access (S2).
    assert suppressed == {
        "AwsSolutions-CFR1",
        "AwsSolutions-CFR2",
        "AwsSolutions-CFR4",
        "AwsSolutions-L1",
        "AwsSolutions-IAM4",
        "AwsSolutions-IAM5",
    }


def test_the_console_url_is_an_output(synthesized: Synthesized) -> None:
    console = _console(synthesized)
    output = synthesized.template_json["Outputs"]["ConsoleUrl"]["Value"]
    assert rendered(output) == f"https://${{{synthesized.logical_id(console.distribution)}.DomainName}}/"


def test_a_missing_build_stops_the_synth_with_what_to_run(tmp_path: Path) -> None:
    stack = Stack(App(), "Bare")
    with pytest.raises(FileNotFoundError, match="make console"):
        Console(
            stack,
            "Console",
            dist=tmp_path,
            api_url="https://example.execute-api.eu-west-1.amazonaws.com/prod/",
            api_origin="https://example.execute-api.eu-west-1.amazonaws.com",
            access_logs=s3.Bucket(stack, "Logs"),
            retain=False,
        )


def test_without_the_console_no_build_is_needed_and_nothing_of_it_is_deployed(tmp_path: Path) -> None:
    """`-c console=false` (LocalStack's free edition has no CloudFront): synthesizes without a build."""
    bare = synthesize({"stackName": "NoConsole", "console": "false"}, console_dist=tmp_path / "absent")
    assert isinstance(bare.stack, ResearchStack) and bare.stack.console is None
    assert not bare.resources("AWS::CloudFront::Distribution")
    assert not bare.resources("Custom::CDKBucketDeployment")
    assert "ConsoleUrl" not in bare.template_json["Outputs"]


def test_every_api_function_lets_the_allowed_origins_read_its_answers(synthesized: Synthesized) -> None:
    """The console calls the API from its CloudFront origin: the functions' own answers (not only the
    preflight and the gateway's error responses) carry CORS headers for `corsOrigins`."""
    api_functions = [
        function
        for function in synthesized.resources("AWS::Lambda::Function").values()
        if "Environment" in function["Properties"]
        and "TEAM_SOURCE" in function["Properties"]["Environment"]["Variables"]
    ]
    assert len(api_functions) >= len(API_FUNCTIONS)
    for function in api_functions:
        assert function["Properties"]["Environment"]["Variables"]["CORS_ORIGINS"] == "*"

    narrowed = synthesize(context={"corsOrigins": ["https://console.example.org"]})
    origins = {
        function["Properties"]["Environment"]["Variables"].get("CORS_ORIGINS")
        for function in narrowed.resources("AWS::Lambda::Function").values()
        if "TEAM_SOURCE" in function["Properties"].get("Environment", {}).get("Variables", {})
    }
    assert origins == {"https://console.example.org"}
