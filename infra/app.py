"""`cdk synth` / `cdk deploy` entry point (see cdk.json): one ResearchStack, checked by cdk-nag."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_cdk import App, Aspects, Environment
from cdk_nag import AwsSolutionsChecks

from infra.config import StackOptions
from infra.stack import ResearchStack

CDK_JSON = Path(__file__).resolve().parents[1] / "cdk.json"
DEFAULT_STACK_NAME = "EvidenceResearch"


def cdk_json_context() -> dict[str, Any]:
    """The `context` of cdk.json; the CLI passes it itself, direct runs (tests) need it too."""
    context: dict[str, Any] = json.loads(CDK_JSON.read_text(encoding="utf-8")).get("context", {})
    return context


def build(context: Mapping[str, Any] | None = None, **stack_kwargs: Any) -> tuple[App, ResearchStack]:
    """The app with its stack; CLI context (`-c`) wins over `context`, which wins over cdk.json."""
    app = App(context={**cdk_json_context(), **(context or {})})
    options = StackOptions.from_context(app.node.try_get_context)
    stack = ResearchStack(
        app,
        app.node.try_get_context("stackName") or DEFAULT_STACK_NAME,
        options=options,
        env=Environment(
            account=os.environ.get("CDK_DEFAULT_ACCOUNT"), region=os.environ.get("CDK_DEFAULT_REGION")
        ),
        description="Serverless, evidence-grounded research API",
        **stack_kwargs,
    )
    Aspects.of(app).add(AwsSolutionsChecks(verbose=True))
    return app, stack


def main() -> None:
    app, _ = build()
    app.synth()


if __name__ == "__main__":
    main()
