"""Each public face answers the errors of the routes that declare it, and a path no route matched by the
face whose prefix it bears (functions/common/faces/, create_app)."""

from __future__ import annotations

import pytest
from fastapi import APIRouter, FastAPI
from fastapi.testclient import TestClient
from starlette.exceptions import HTTPException as StarletteHTTPException

from functions.common.errors import Conflict, DomainError, InvalidInput, NotFound
from functions.common.faces import agent, kb, multisource, trust
from functions.common.faces.face import ErrorReply, answers
from functions.common.faces.registry import face_for
from functions.common.observability import get_logger
from functions.common.web.api import create_app


@pytest.mark.parametrize(
    ("path", "face"),
    [
        ("/v1/query", "trust"),
        ("/v1", "trust"),
        ("/admin/teams", "trust"),
        ("/api/v1/search", "multisource"),
        ("/api/tools/search", "search_tool"),
        ("/api/tools/extract", "agent"),
        ("/api/agent/status/job-1", "agent"),
        ("/api/schedules", "agent"),
        ("/search/semantic", "kb"),
        ("/entity/table/3.2", "kb"),
        ("/docs", None),
    ],
)
def test_a_path_belongs_to_the_face_of_its_contract(path: str, face: str | None) -> None:
    found = face_for(path)
    assert (found.name if found else None) == face


def _app() -> FastAPI:
    tools = APIRouter()
    documents = APIRouter()

    @tools.get("/v1/tool-with-a-trust-prefix")
    def tool() -> dict[str, str]:
        raise NotFound("no such tool")

    @documents.get("/v1/documents/{document_id}")
    def document(document_id: str) -> dict[str, str]:
        raise NotFound(f"document {document_id} not found")

    return create_app(
        title="faces",
        description="",
        routers=[(agent.FACE, tools), (trust.FACE, documents), (multisource.FACE, APIRouter())],
        logger=get_logger("faces"),
    )


def test_a_route_answers_in_the_face_it_declares_whatever_its_path() -> None:
    client = TestClient(_app())
    tool = client.get("/v1/tool-with-a-trust-prefix")
    assert (tool.status_code, tool.json()) == (404, {"error": "JOB_NOT_FOUND", "message": "no such tool"})
    document = client.get("/v1/documents/doc-1")
    assert document.status_code == 404
    assert document.json() == {
        "error": {"code": "not_found", "message": "document doc-1 not found", "details": {}}
    }


def test_an_unrouted_path_answers_in_its_prefix_face_else_the_first() -> None:
    client = TestClient(_app())
    assert client.get("/v1/nothing").json()["error"]["code"] == "not_found"
    assert client.get("/api/v1/nothing").json() == {"detail": "Not Found"}
    assert client.get("/elsewhere").json() == {"error": "NOT_FOUND", "message": "Not Found"}


def test_answers_types_each_rule_by_the_error_its_reply_takes() -> None:
    assert [kind for kind, _ in kb.FACE.rules] == [
        InvalidInput,
        NotFound,
        DomainError,
        StarletteHTTPException,
    ]
    assert kb.FACE.reply(Conflict("taken")).status == 500  # a domain error of no other rule

    def by_status(status: int) -> ErrorReply:
        return kb.reply(status, "no error to answer")

    with pytest.raises(TypeError, match="must take an exception type"):
        answers(by_status)
