"""The local gateway serves the research console's build at /console/, beside the API."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.testclient import TestClient

from functions.local_runtime.console import CONTENT_SECURITY_POLICY
from functions.local_runtime.gateway import Gateway


def _api() -> dict[str, FastAPI]:
    api = FastAPI()

    @api.get("/v1/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @api.get("/v1/traces/{trace_id}")
    def trace(trace_id: str) -> dict[str, str]:
        return {"trace_id": trace_id}

    return {"api": api}


def _built(root: Path) -> Path:
    dist = root / "dist"
    dist.mkdir()
    (dist / "index.html").write_text("<!doctype html><title>Research console</title>", encoding="utf-8")
    (dist / "app.js").write_text("export {};", encoding="utf-8")
    (dist / "app.css").write_text("body{}", encoding="utf-8")
    (root / "secret.txt").write_text("outside the build", encoding="utf-8")
    return dist


def test_the_console_is_served_at_console_with_its_security_headers(tmp_path: Path) -> None:
    client = TestClient(Gateway(_api(), auth_required=False, console_dir=_built(tmp_path)))

    page = client.get("/console/")
    assert page.status_code == 200
    assert "Research console" in page.text
    assert page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert page.headers["x-content-type-options"] == "nosniff"
    script = client.get("/console/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert client.get("/console/app.css").headers["content-type"].startswith("text/css")
    assert client.get("/v1/health").json() == {"status": "ok"}  # the API beside it is untouched


def test_console_without_a_slash_redirects_to_console_slash(tmp_path: Path) -> None:
    client = TestClient(Gateway(_api(), auth_required=False, console_dir=_built(tmp_path)))
    redirect = client.get("/console", params={"view": "job"}, follow_redirects=False)
    assert redirect.status_code == 308
    assert redirect.headers["location"] == "/console/?view=job"


def test_unknown_files_and_paths_outside_the_build_are_not_found(tmp_path: Path) -> None:
    client = TestClient(Gateway(_api(), auth_required=False, console_dir=_built(tmp_path)))
    for path in ("/console/../secret.txt", "/console/%2e%2e/secret.txt", "/console/..%2fsecret.txt"):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert "outside the build" not in answer.text
    assert client.post("/console/").status_code == 405


def test_config_json_names_this_origin_unless_the_build_carries_one(tmp_path: Path) -> None:
    dist = _built(tmp_path)
    client = TestClient(Gateway(_api(), auth_required=False, console_dir=dist))
    local = client.get("/console/config.json")
    assert local.status_code == 200  # not the 404 every load logged
    assert local.json() == {"apiBaseUrl": ""}  # the API on this origin
    assert local.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    (dist / "config.json").write_text('{"apiBaseUrl": "https://api.example.org"}', encoding="utf-8")
    assert client.get("/console/config.json").json() == {"apiBaseUrl": "https://api.example.org"}


def test_a_missing_build_answers_503_naming_the_make_target(tmp_path: Path) -> None:
    client = TestClient(Gateway(_api(), auth_required=False, console_dir=tmp_path / "absent"))
    for path in ("/console/", "/console/app.js"):
        answer = client.get(path)
        assert answer.status_code == 503
        assert "make console" in answer.json()["detail"]


def test_the_console_needs_no_token_when_the_api_does(tmp_path: Path) -> None:
    client = TestClient(
        Gateway(_api(), auth_required=True, lookup=lambda token: None, console_dir=_built(tmp_path))
    )
    assert client.get("/console/").status_code == 200
    assert client.get("/v1/traces/trace-1").status_code == 401
