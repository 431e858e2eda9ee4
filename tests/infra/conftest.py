"""Synthesized stacks shared by the infra tests (synthesis takes seconds, so once per session).

`deployed` is the app exactly as `cdk synth` builds it: the registry of functions/common/resources.py
and the four function apps. `probe` adds what the real registry may not have yet: a fixture state
machine with Lambda, Map, DynamoDB and EventBridge tasks, a fixture set of routes (a greedy path
parameter, health checks and admin routes among them), a registry table only one probe step declares
(the grants of a new table), and the optional WAF. Both use source-only bundling (no pip).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aws_cdk.assertions import Template
from aws_cdk.cx_api import CloudFormationStackArtifact
from fastapi import APIRouter, FastAPI

from functions.common import resources
from functions.schedules.routes import router as schedule_router
from infra.app import build
from infra.components.console import CONSOLE_DIST
from infra.config import Registry
from infra.stack import ResearchStack

# jsii warns loudly on Node versions it no longer tests; the warning is noise for these tests.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "18,19,20,21")
os.environ.setdefault("JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION", "1")

FIXTURES = Path(__file__).parent / "fixtures"
PROBE_ASL = FIXTURES / "probe.asl.json"
# A table a new registry entry could add: only the probe's ledger step names its setting.
PROBE_LEDGER = resources.TableSpec("probe_ledger_table", "pk", "sk", purpose="a table a helper adds")


def probe_registry() -> Registry:
    return Registry(
        tables=(*resources.TABLES, PROBE_LEDGER),
        buckets=resources.BUCKETS,
        step_functions=(
            resources.StepFunctionSpec("ProbeCreateStep", "tests.infra.fixtures.probe_steps.create", 256, 60),
            resources.StepFunctionSpec("ProbeWorkStep", "tests.infra.fixtures.probe_steps.work", 512, 90),
            resources.StepFunctionSpec(
                "ProbeLedgerStep",
                "tests.infra.fixtures.probe_ledger.record",
                256,
                60,
                uses=resources.Uses(read_write=(PROBE_LEDGER.setting,)),
            ),
        ),
        state_machines=(resources.StateMachineSpec("research", str(PROBE_ASL)),),
    )


def probe_apps() -> dict[str, FastAPI]:
    def app_with(*routers: APIRouter) -> FastAPI:
        app = FastAPI()
        for router in routers:
            app.include_router(router)
        return app

    search = APIRouter()
    search.add_api_route("/api/v1/search", lambda: {}, methods=["POST"])
    search.add_api_route("/api/v1/health", lambda: {}, methods=["GET"])
    extract = APIRouter()
    extract.add_api_route("/v1/documents", lambda: {}, methods=["POST"])
    extract.add_api_route("/v1/documents/{document_id}", lambda document_id: {}, methods=["GET"], name="read")
    extract.add_api_route(
        "/v1/documents/{document_id}", lambda document_id: {}, methods=["DELETE"], name="drop"
    )
    rag = APIRouter(prefix="/entity")
    rag.add_api_route("/{entity_type}/{number}", lambda entity_type, number: {}, methods=["GET"])
    rag.add_api_route("/files/{key:path}", lambda key: {}, methods=["GET"])
    answer = APIRouter(prefix="/v1")  # the streaming function: STREAM integrations
    answer.add_api_route("/query/stream", lambda: {}, methods=["POST"])
    answer.add_api_route("/traces/{trace_id}", lambda trace_id: {}, methods=["GET"])
    answer.add_api_route("/health", lambda: {}, methods=["GET"])
    admin = APIRouter(prefix="/admin/teams")  # the IAM-authorised family
    admin.add_api_route("", lambda: {}, methods=["POST"])
    admin.add_api_route("/{team_id}/tokens/{token_id}", lambda team_id, token_id: {}, methods=["DELETE"])
    return {
        "search": app_with(search),
        "extract": app_with(extract),
        "orchestrate": app_with(schedule_router),
        "rag": app_with(rag),
        "answer": app_with(answer),
        "admin": app_with(admin),
    }


@dataclass
class Synthesized:
    stack: ResearchStack
    artifact: CloudFormationStackArtifact
    template_json: dict[str, Any]

    @property
    def template(self) -> Template:
        return Template.from_json(self.template_json)

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        return {key: value for key, value in self.template_json["Resources"].items() if value["Type"] == kind}

    def cdk_handlers(self) -> set[str]:
        """Logical ids of the Lambda functions CDK brings with its own constructs (the console's
        BucketDeployment handler): CDK builds and pins them, so the rules for our functions skip them."""
        console = self.stack.console
        return {self.logical_id(console.deployment_handler)} if console is not None else set()

    def logical_id(self, construct: Any) -> str:
        return str(self.stack.resolve(self.stack.get_logical_id(construct.node.default_child)))

    def nag_findings(self) -> list[str]:
        findings = []
        for kind in ("aws:cdk:error", "aws:cdk:warning"):
            for entry in self.artifact.find_metadata_by_type(kind):
                if str(entry.data).startswith("AwsSolutions-"):
                    findings.append(f"{entry.path}: {str(entry.data).splitlines()[0]}")
        return findings


def synthesize(context: dict[str, Any] | None = None, **stack_kwargs: Any) -> Synthesized:
    app, stack = build({"bundling": "source", **(context or {})}, **stack_kwargs)
    assembly = app.synth()
    artifact = assembly.get_stack_artifact(stack.artifact_id)
    return Synthesized(stack, artifact, json.loads(json.dumps(artifact.template)))


@pytest.fixture(scope="session")
def console_dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The console build (`make console`), or, before it is built, a stand-in holding only index.html."""
    if (CONSOLE_DIST / "index.html").is_file():
        return CONSOLE_DIST
    stand_in = tmp_path_factory.mktemp("console-dist")
    (stand_in / "index.html").write_text(
        '<!doctype html><title>Research console</title><script src="app.js"></script>\n', encoding="utf-8"
    )
    return stand_in


@pytest.fixture(scope="session")
def deployed(console_dist: Path) -> Iterator[Synthesized]:
    yield synthesize(console_dist=console_dist)


@pytest.fixture(scope="session")
def probe(console_dist: Path) -> Iterator[Synthesized]:
    yield synthesize(
        {"stackName": "ProbeResearch", "alarmEmail": "ops@example.org", "waf": True},
        registry=probe_registry(),
        function_apps=probe_apps(),
        console_dist=console_dist,
    )


@pytest.fixture(params=["deployed", "probe"])
def synthesized(request: pytest.FixtureRequest) -> Synthesized:
    """Runs a test on both stacks."""
    result: Synthesized = request.getfixturevalue(request.param)
    return result
