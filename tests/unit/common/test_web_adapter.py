"""The answer function's entry under the Lambda Web Adapter: the SnapStart restore route the adapter calls
after a restore runs the registered restore hooks, and serves no one else."""

from __future__ import annotations

import random
from collections.abc import Iterator

import boto3
import pytest
from fastapi.testclient import TestClient

from functions.answer import app as answer_module
from functions.answer.web_adapter import app as entry
from functions.common import aws, snapstart
from functions.common.web.web_adapter import RESTORE_PATH
from functions.local_runtime.gateway import load_function_apps
from infra.routes import routes_of

ADAPTER = ("127.0.0.1", 40123)  # the adapter reaches uvicorn on loopback (run.sh binds 127.0.0.1)


@pytest.fixture
def calls() -> Iterator[list[str]]:
    """Records, through a hook registered like any other, each time the restore hooks run."""
    seen: list[str] = []

    def probe() -> None:
        seen.append("restored")

    snapstart.after_restore(probe)
    try:
        yield seen
    finally:
        snapstart._after_restore.remove(probe)


def test_the_adapters_restore_call_runs_the_restore_hooks(calls: list[str]) -> None:
    before = aws.generic_client("s3")
    boto3.setup_default_session(region_name="us-east-1")
    session = boto3.DEFAULT_SESSION
    random.seed(7)
    snapshot_draw = random.random()
    random.seed(7)  # the state a snapshot would hand every restored environment
    with TestClient(entry, client=ADAPTER) as adapter:
        response = adapter.post(RESTORE_PATH)
    assert response.status_code == 204 and response.content == b""
    assert calls == ["restored"]
    assert boto3.DEFAULT_SESSION is not session
    assert aws.generic_client("s3") is not before
    assert random.random() != snapshot_draw


@pytest.mark.parametrize(
    ("client", "headers"),
    [
        (("10.0.3.7", 51000), {}),  # not loopback
        (ADAPTER, {"x-amzn-lambda-context": '{"request_id": "r"}'}),  # an invocation the adapter relayed
        (ADAPTER, {"x-amzn-request-context": '{"stage": "prod"}'}),
    ],
)
def test_anyone_but_the_adapter_is_refused(
    calls: list[str], client: tuple[str, int], headers: dict[str, str]
) -> None:
    with TestClient(entry, client=client) as caller:
        response = caller.post(RESTORE_PATH, headers=headers)
    assert response.status_code == 403
    assert response.json() == {"detail": "Forbidden"}
    assert calls == []


def test_other_requests_reach_the_answer_app_unchanged() -> None:
    with TestClient(entry, client=ADAPTER) as client:
        response = client.get("/v1/health")
        assert response.status_code == 200 and response.headers["X-Request-Id"]
        assert client.get(RESTORE_PATH).status_code == 405


def test_the_restore_route_is_neither_documented_nor_routed() -> None:
    assert RESTORE_PATH not in answer_module.app.openapi()["paths"]
    assert RESTORE_PATH not in [route.path for route in routes_of(load_function_apps())]
