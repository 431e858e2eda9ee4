"""The research console: its static build (`console/dist/`) in a private bucket behind CloudFront.

CloudFront reads the bucket through Origin Access Control (the bucket policy admits only this
distribution), answers HTTPS only, and adds security headers to every response: a CSP that allows the
console's own files and `connect-src` to the API origin only, HSTS, nosniff, DENY framing, no referrer.
The deployment writes `config.json` (`{"apiBaseUrl": <the API's URL>}`) next to the build, which the
console fetches to find the API, and invalidates the distribution so a deploy is visible at once.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3_deployment
from constructs import Construct

from functions.common import resources
from infra.components.functions import depend_only_on_role_policy
from infra.nag import LAMBDA_BASIC_EXECUTION, suppress

CONSOLE_DIST = resources.REPO_ROOT / "console" / "dist"
CONFIG_OBJECT = "config.json"
# The build's files are not content-hashed, so browsers keep them briefly; each deploy invalidates the edge.
BROWSER_CACHE = Duration.minutes(5)
HSTS_MAX_AGE = Duration.days(730)


def api_origin(rest_api: apigw.RestApi) -> str:
    """`https://<id>.execute-api.<region>.<suffix>`: the scheme and host of `rest_api.url` (built as CDK's
    `Stage.urlForPath` builds it, since a token cannot be cut)."""
    stack = Stack.of(rest_api)
    return f"https://{rest_api.rest_api_id}.execute-api.{stack.region}.{stack.url_suffix}"


def content_security_policy(api: str) -> str:
    """No inline script or style, nothing from elsewhere; the API (`api`, an origin) is the only other peer."""
    return "; ".join(
        (
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            f"connect-src 'self' {api}",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )


class Console(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        dist: Path,
        api_url: str,
        api_origin: str,
        access_logs: s3.IBucket,
        retain: bool,
    ) -> None:
        """`dist`: the console build (index.html at its top); `api_url`: what config.json names;
        `api_origin`: what the CSP lets the console connect to; `access_logs`: the stack's log bucket."""
        super().__init__(scope, construct_id)
        if not (dist / "index.html").is_file():
            raise FileNotFoundError(
                f"{dist}/index.html is missing: build the console first (`make console`), "
                "or synthesize with -c console=false"
            )
        removal = RemovalPolicy.RETAIN if retain else RemovalPolicy.DESTROY
        self.bucket = self._site_bucket(access_logs, removal)
        self.cdn_logs = self._cdn_logs_bucket(access_logs, removal)
        self.headers = self._security_headers(api_origin)
        self.distribution = self._distribution()
        self.deployment = self._deployment(dist, api_url, retain)
        depend_only_on_role_policy(self.deployment_handler, self.deployment.handler_role)
        self._suppress_findings()

    def _site_bucket(self, access_logs: s3.IBucket, removal: RemovalPolicy) -> s3.Bucket:
        return s3.Bucket(
            self,
            "SiteBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,  # OAC reads SSE-S3 objects without a key policy
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="console/",
            removal_policy=removal,
        )

    def _cdn_logs_bucket(self, access_logs: s3.IBucket, removal: RemovalPolicy) -> s3.Bucket:
        # CloudFront standard logs are delivered with an ACL grant, which a bucket with ACLs disabled (as
        # the stack's log bucket is) refuses: they get a bucket of their own, logged like every other.
        return s3.Bucket(
            self,
            "CdnLogsBucket",
            encryption=s3.BucketEncryption.S3_MANAGED,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(id="expire-cdn-logs", expiration=Duration.days(90))],
            server_access_logs_bucket=access_logs,
            server_access_logs_prefix="console-cdn-logs/",
            removal_policy=removal,
        )

    def _security_headers(self, api_origin: str) -> cloudfront.ResponseHeadersPolicy:
        return cloudfront.ResponseHeadersPolicy(
            self,
            "SecurityHeaders",
            comment="Research console: CSP (own files, the API origin), HSTS, nosniff, DENY, no-referrer",
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                content_security_policy=cloudfront.ResponseHeadersContentSecurityPolicy(
                    content_security_policy=content_security_policy(api_origin), override=True
                ),
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=HSTS_MAX_AGE, include_subdomains=True, override=True
                ),
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                frame_options=cloudfront.ResponseHeadersFrameOptions(
                    frame_option=cloudfront.HeadersFrameOption.DENY, override=True
                ),
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                    referrer_policy=cloudfront.HeadersReferrerPolicy.NO_REFERRER, override=True
                ),
            ),
        )

    def _distribution(self) -> cloudfront.Distribution:
        return cloudfront.Distribution(
            self,
            "Distribution",
            comment=f"{Stack.of(self).stack_name} research console",
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.S3BucketOrigin.with_origin_access_control(self.bucket),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
                cache_policy=cloudfront.CachePolicy.CACHING_OPTIMIZED,
                response_headers_policy=self.headers,
                compress=True,
            ),
            # No error responses that answer index.html for every path: the console has no path routes (its
            # views are tabs of one page) and loads `./app.js` relative to the page, so under a deeper path
            # that fallback would hand back HTML as the script. A path that is no file stays an error.
            default_root_object="index.html",
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
            enable_logging=True,
            log_bucket=self.cdn_logs,
            log_file_prefix="console/",
        )

    def _deployment(self, dist: Path, api_url: str, retain: bool) -> s3_deployment.BucketDeployment:
        return s3_deployment.BucketDeployment(
            self,
            "Deployment",
            destination_bucket=self.bucket,
            sources=[
                s3_deployment.Source.asset(str(dist)),
                s3_deployment.Source.json_data(CONFIG_OBJECT, {"apiBaseUrl": api_url}),
            ],
            prune=True,
            retain_on_delete=retain,  # without retention the files go first, so the bucket can be deleted
            cache_control=[
                s3_deployment.CacheControl.set_public(),
                s3_deployment.CacheControl.max_age(BROWSER_CACHE),
            ],
            distribution=self.distribution,
            distribution_paths=["/*"],
            memory_limit=256,
        )

    @property
    def deployment_handler(self) -> lambda_.Function:
        """The Lambda function CDK brings for every BucketDeployment (a stack-level singleton)."""
        handler = self.deployment.handler_role.node.scope
        assert isinstance(handler, lambda_.Function)
        return handler

    def _suppress_findings(self) -> None:
        suppress(
            self.distribution,
            "CFR1",
            "The console is a static page for every team wherever they work; the API behind it admits "
            "callers by team credential, so a geographic restriction would protect nothing.",
        )
        suppress(
            self.distribution,
            "CFR2",
            "The distribution serves static files only (GET/HEAD, no origin logic); the API it talks to has "
            "its own optional web ACL (context waf=true). A CloudFront web ACL has a monthly fee.",
        )
        suppress(
            self.distribution,
            "CFR4",
            "Without a custom domain CloudFront serves its default *.cloudfront.net certificate, whose "
            "security policy cannot be chosen; viewers are redirected to HTTPS and modern browsers "
            "negotiate TLS 1.2 or newer. A custom domain with an ACM certificate can set TLSv1.2_2021.",
        )
        handler = self.deployment_handler
        suppress(
            handler,
            "L1",
            "CDK's BucketDeployment handler: its runtime is pinned by aws-cdk-lib and moves with it.",
        )
        suppress(
            handler,
            "IAM4",
            "AWSLambdaBasicExecutionRole only lets CDK's BucketDeployment handler write its own logs.",
            [LAMBDA_BASIC_EXECUTION],
        )
        suppress(
            handler,
            "IAM5",
            "CDK's BucketDeployment handler copies the console's files: object wildcards inside the CDK "
            "asset bucket and the console bucket, the S3 action families of grantRead/grantReadWrite, and "
            "CloudFront invalidation, which has no narrower resource than the distribution.",
            [
                {"regex": "/^Resource::.*\\/\\*$/g"},
                {"regex": "/^Action::s3:.*\\*$/g"},
                "Resource::*",
            ],
        )
