"""The OpenAPI document states what the validation enforces (issue 12); see tests/contract for the run."""

from __future__ import annotations

import json
import re

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from fastapi import FastAPI
from pydantic import BaseModel, ValidationError

from functions.admin.app import ADMIN_FACE
from functions.common.errors import aws_outage
from functions.common.web.openapi import document_errors
from functions.extract.app import DOCUMENTS_FACE
from functions.orchestrate.app import JOBS_FACE
from functions.rag.api_models import QUERY_PATTERN, SemanticSearchRequest
from functions.research.planning.request import RESEARCH_GOAL_PATTERN, ExecuteRequest
from functions.search.connectors import REGISTRY
from functions.search.schemas import CONNECTOR_NAMES, V1SearchRequest
from functions.teams.routes import TeamPatch


class _Error(BaseModel):
    error: str


def test_an_operation_without_documented_errors_fails_the_document() -> None:
    app = FastAPI()

    @app.get("/a")
    def a() -> dict[str, str]:
        return {}

    @app.get("/b")
    def b() -> dict[str, str]:
        return {}

    document_errors(app, {"GET /a": (_Error, [404])})
    with pytest.raises(KeyError, match="GET /b"):
        app.openapi()


def test_documented_statuses_replace_the_generated_422() -> None:
    app = FastAPI()

    @app.get("/items/{item_id}")
    def item(item_id: int) -> dict[str, int]:
        return {"id": item_id}

    document_errors(app, {"GET /items/{item_id}": (_Error, [400, 404])})
    responses = app.openapi()["paths"]["/items/{item_id}"]["get"]["responses"]
    assert sorted(responses) == ["200", "400", "401", "404", "500"]
    assert responses["404"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/_Error"
    }
    assert "HTTPValidationError" not in app.openapi()["components"]["schemas"]


def test_the_connector_enum_is_the_registry() -> None:
    assert tuple(REGISTRY) == CONNECTOR_NAMES


@pytest.mark.parametrize("query", ["abc", " a b ", "a\tb", "ab", "  ab  ", "   ", "0 0"])
def test_the_query_pattern_is_the_knowledge_base_rule(query: str) -> None:
    documented = len(query) >= 3 and re.search(QUERY_PATTERN, query) is not None
    try:
        SemanticSearchRequest(query=query)
        accepted = True
    except ValidationError:
        accepted = False
    assert documented == accepted


@pytest.mark.parametrize("goal", ["a" * 10, "a b c d e f g h i j", "a b c d e f", " " * 12 + "abcdefghi"])
def test_the_research_goal_pattern_is_the_agent_rule(goal: str) -> None:
    documented = re.search(RESEARCH_GOAL_PATTERN, goal) is not None
    try:
        ExecuteRequest(research_goal=goal)
        accepted = True
    except ValidationError:
        accepted = False
    assert documented == accepted


def test_an_integral_number_is_an_integer_and_strings_stay_errors() -> None:
    assert V1SearchRequest.model_validate({"query": "q", "top_k": 5.0}).top_k == 5
    for wrong in ("5", True, 5.5):
        with pytest.raises(ValidationError):
            V1SearchRequest.model_validate({"query": "q", "top_k": wrong})
    # the knowledge base's strict integers too (schemathesis sends 5.0 as a valid `k`)
    assert SemanticSearchRequest.model_validate({"query": "query", "k": 5.0}).k == 5
    for wrong in ("5", True, 5.5):
        with pytest.raises(ValidationError):
            SemanticSearchRequest.model_validate({"query": "query", "k": wrong})


def test_budgets_stay_within_what_dynamodb_stores() -> None:
    with pytest.raises(ValidationError):
        TeamPatch(monthly_budget_usd=1e127)  # overflowed DynamoDB's numbers: a 500 before
    assert TeamPatch(monthly_budget_usd=1e-200).monthly_budget_usd == 0.0


def _client_error(code: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": "m"}}, "PutItem")


def test_an_aws_outage_is_a_503_with_a_clear_body_not_a_bare_500() -> None:
    assert aws_outage(_client_error("ProvisionedThroughputExceededException")) is not None
    assert aws_outage(EndpointConnectionError(endpoint_url="http://x")) == "EndpointConnectionError"
    assert aws_outage(_client_error("ValidationException")) is None  # our bug: stays a 500
    assert aws_outage(ValueError("x")) is None

    agent = JOBS_FACE.reply(_client_error("ThrottlingException")).response()
    assert agent.status_code == 503
    assert json.loads(bytes(agent.body))["error"] == "SERVICE_UNAVAILABLE"
    assert JOBS_FACE.reply(_client_error("ValidationException")).response().status_code == 500

    trust = DOCUMENTS_FACE.reply(_client_error("SlowDown")).response()
    assert trust.status_code == 503
    assert json.loads(bytes(trust.body))["error"]["code"] == "upstream_unavailable"
    assert ADMIN_FACE.reply(_client_error("InternalServerError")).response().status_code == 503
