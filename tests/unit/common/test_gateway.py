"""The local gateway routes each path to the app that owns it and merges the OpenAPI documents."""

from __future__ import annotations

from fastapi import APIRouter, FastAPI
from fastapi.responses import JSONResponse
from fastapi.testclient import TestClient

from functions.local_runtime.gateway import Gateway


def _apps() -> dict[str, FastAPI]:
    alpha, beta = FastAPI(), FastAPI()
    tools = APIRouter()

    @tools.post("/api/tools/search")
    def search() -> dict[str, str]:
        return {"app": "alpha"}

    alpha.include_router(tools)  # the function apps register their routes through routers

    @beta.get("/entity/{entity_type}/{number}")
    def entity(entity_type: str, number: str) -> dict[str, str]:
        return {"app": "beta", "entity": f"{entity_type}:{number}"}

    @beta.exception_handler(404)
    def not_found(request: object, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": "beta's own 404"}, status_code=404)

    return {"alpha": alpha, "beta": beta}


def test_routes_reach_their_own_app() -> None:
    client = TestClient(Gateway(_apps()))
    assert client.post("/api/tools/search").json() == {"app": "alpha"}
    assert client.get("/entity/algorithm/4.1").json() == {"app": "beta", "entity": "algorithm:4.1"}


def test_wrong_method_is_answered_by_the_owning_app() -> None:
    client = TestClient(Gateway(_apps()))
    assert client.get("/api/tools/search").status_code == 405


def test_merged_openapi_and_docs() -> None:
    client = TestClient(Gateway(_apps()))
    spec = client.get("/openapi.json").json()
    assert set(spec["paths"]) == {"/api/tools/search", "/entity/{entity_type}/{number}"}
    assert spec["paths"]["/api/tools/search"]["post"]["tags"] == ["alpha"]
    assert "swagger-ui" in client.get("/docs").text
    assert "redoc" in client.get("/redoc").text.lower()
    assert client.get("/no/such/path").status_code == 404
