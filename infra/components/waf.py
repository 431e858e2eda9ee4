"""Optional web ACL for the API stage (context `waf=true`): request-body size limit and AWS managed rules.

API Gateway itself refuses bodies over 10 MB; this limits JSON bodies to what WAF inspects (16 KB for
API Gateway) everywhere except document uploads, and adds the common and known-bad-input rule groups.
A web ACL has a monthly fee, so it is opt-in.
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_wafv2 as waf
from constructs import Construct

BODY_LIMIT_BYTES = 16 * 1024
UPLOAD_PATH_PREFIX = "/v1/documents"


def _visibility(name: str) -> waf.CfnWebACL.VisibilityConfigProperty:
    return waf.CfnWebACL.VisibilityConfigProperty(
        cloud_watch_metrics_enabled=True, metric_name=name, sampled_requests_enabled=True
    )


def _managed(name: str, priority: int) -> waf.CfnWebACL.RuleProperty:
    return waf.CfnWebACL.RuleProperty(
        name=name,
        priority=priority,
        override_action=waf.CfnWebACL.OverrideActionProperty(none={}),
        statement=waf.CfnWebACL.StatementProperty(
            managed_rule_group_statement=waf.CfnWebACL.ManagedRuleGroupStatementProperty(
                vendor_name="AWS", name=name
            )
        ),
        visibility_config=_visibility(name),
    )


class ApiFirewall(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, stage: apigw.Stage) -> None:
        super().__init__(scope, construct_id)
        body_too_large = waf.CfnWebACL.StatementProperty(
            size_constraint_statement=waf.CfnWebACL.SizeConstraintStatementProperty(
                comparison_operator="GT",
                size=BODY_LIMIT_BYTES,
                field_to_match=waf.CfnWebACL.FieldToMatchProperty(
                    body=waf.CfnWebACL.BodyProperty(oversize_handling="MATCH")
                ),
                text_transformations=[waf.CfnWebACL.TextTransformationProperty(priority=0, type="NONE")],
            )
        )
        not_an_upload = waf.CfnWebACL.StatementProperty(
            not_statement=waf.CfnWebACL.NotStatementProperty(
                statement=waf.CfnWebACL.StatementProperty(
                    byte_match_statement=waf.CfnWebACL.ByteMatchStatementProperty(
                        field_to_match=waf.CfnWebACL.FieldToMatchProperty(uri_path={}),
                        positional_constraint="STARTS_WITH",
                        search_string=UPLOAD_PATH_PREFIX,
                        text_transformations=[
                            waf.CfnWebACL.TextTransformationProperty(priority=0, type="NONE")
                        ],
                    )
                )
            )
        )
        self.web_acl = waf.CfnWebACL(
            self,
            "WebAcl",
            name=f"{Stack.of(self).stack_name}-api",
            scope="REGIONAL",
            default_action=waf.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=_visibility("ResearchApi"),
            rules=[
                waf.CfnWebACL.RuleProperty(
                    name="LimitRequestBody",
                    priority=0,
                    action=waf.CfnWebACL.RuleActionProperty(
                        block=waf.CfnWebACL.BlockActionProperty(
                            custom_response=waf.CfnWebACL.CustomResponseProperty(response_code=413)
                        )
                    ),
                    statement=waf.CfnWebACL.StatementProperty(
                        and_statement=waf.CfnWebACL.AndStatementProperty(
                            statements=[body_too_large, not_an_upload]
                        )
                    ),
                    visibility_config=_visibility("LimitRequestBody"),
                ),
                _managed("AWSManagedRulesCommonRuleSet", 1),
                _managed("AWSManagedRulesKnownBadInputsRuleSet", 2),
            ],
        )
        waf.CfnWebACLAssociation(
            self, "Association", resource_arn=stage.stage_arn, web_acl_arn=self.web_acl.attr_arn
        )
