"""Hostile JSON never reaches a handler as a 500: a lone surrogate escape (which decodes to a str no UTF-8
encoder can write) and nesting 100 000 levels deep get each app's own 400, and upload metadata nested
as deep gets a 4xx. The check is a scan before parsing (`json_text_problem`)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from functions.common.validation import MAX_JSON_DEPTH, json_text_problem

DEEP = "[" * 100_000 + "]" * 100_000

# one JSON route per app family, with a body whose `field` holds the lone surrogate
ROUTES: list[tuple[str, str, str]] = [
    ("rag", "/search/semantic", "query"),
    ("search", "/api/tools/search", "query"),
    ("orchestrate", "/api/agent/execute", "research_goal"),
    ("answer", "/v1/query", "question"),
    ("answer", "/api/v1/ask", "question"),
    ("extract", "/api/tools/extract", "source_url"),
]


@pytest.fixture(scope="module")
def clients() -> Iterator[dict[str, TestClient]]:
    with mock_aws():  # the usage meter writes (and fails quietly) here, never to a real account
        apps = {name: importlib.import_module(f"functions.{name}.app").app for name, _, _ in ROUTES}
        yield {name: TestClient(app, raise_server_exceptions=False) for name, app in apps.items()}


def _post(client: TestClient, path: str, body: str) -> Any:
    return client.post(path, content=body.encode("ascii"), headers={"content-type": "application/json"})


@pytest.mark.parametrize(("app", "path", "field"), ROUTES)
@pytest.mark.parametrize("escape", ["\\ud800", "\\udfff", "\\ud83d\\u0041", "\\ud83d"])
def test_a_lone_surrogate_is_a_400_naming_the_field(
    clients: dict[str, TestClient], app: str, path: str, field: str, escape: str
) -> None:
    response = _post(clients[app], path, f'{{"{field}": "transformer {escape} architectures"}}')
    assert response.status_code == 400, response.text
    assert "surrogate" in response.text and "Traceback" not in response.text
    assert field in response.text or app == "rag"  # the knowledge base's messages name no field


@pytest.mark.parametrize(("app", "path", "field"), ROUTES)
def test_a_body_nested_100k_deep_is_a_400(
    clients: dict[str, TestClient], app: str, path: str, field: str
) -> None:
    response = _post(clients[app], path, f'{{"{field}": {DEEP}}}')
    assert response.status_code == 400, response.text


def test_a_paired_surrogate_and_an_escaped_backslash_are_fine() -> None:
    assert json_text_problem(b'{"q": "smile \\ud83d\\ude00"}') is None
    assert json_text_problem(b'{"q": "not an escape: \\\\ud800"}') is None
    assert json_text_problem(b'{"q": "brackets in strings [[[[' + b"[" * 100 + b'"}') is None


def test_problems_are_located() -> None:
    nested = json_text_problem(b'{"a": [1, {"b": "x\\udc00"}]}')
    assert nested is not None and nested.location == ("a", 1, "b")
    key = json_text_problem(b'{"\\ud800": 1}')
    assert key is not None and key.location == ("\\ud800",)
    deep = json_text_problem(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
    assert deep is not None and deep.location == () and str(MAX_JSON_DEPTH) in deep.message
    assert json_text_problem(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is None
    assert json_text_problem("a str with a real \ud800 in it") is not None


def test_upload_metadata_nested_100k_deep_is_a_4xx(clients: dict[str, TestClient]) -> None:
    from tests.support.pdfgen import sample_paper_pdf

    response = clients["extract"].post(
        "/v1/documents",
        files={"file": ("paper.pdf", sample_paper_pdf(), "application/pdf")},
        data={"metadata": '{"title": ' + DEEP + "}"},
    )
    assert 400 <= response.status_code < 500, response.text
    assert "metadata" in response.text and "nested" in response.text
