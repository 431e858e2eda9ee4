"""`research-agent admin ...` against the local gateway under uvicorn on loopback, over the embedded AWS
(the teams table on moto), and the global `--token` on a recording server."""

from __future__ import annotations

import io
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import uvicorn

from functions.cli.main import main
from functions.common.settings import reset_settings_cache
from functions.local_runtime.aws import EmbeddedAws
from functions.local_runtime.gateway import Gateway, load_function_apps
from functions.teams import wiring

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

ADMIN = "admin-secret-for-cli-tests"


@pytest.fixture
def base_url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("ADMIN_TOKEN", ADMIN)
    monkeypatch.delenv("ADMIN_AUTH", raising=False)
    with EmbeddedAws(step_functions=[], state_machines=[]):
        reset_settings_cache()
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(Gateway(load_function_apps()), log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.started
        yield f"http://127.0.0.1:{port}"
        server.should_exit = True
        thread.join(10)
        listener.close()


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_create_issue_and_revoke_over_the_admin_routes(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = _run(
        "--url",
        base_url,
        "admin",
        "create-team",
        "Platform research",
        "--tier",
        "standard",
        "--admin-token",
        ADMIN,
    )
    assert code == 0, err
    created = json.loads(out)
    assert set(created) == {"team_id", "token_id", "token"}
    service = wiring.team_service()  # the DynamoDB store the server wrote to
    team = service.resolve(created["token"])
    assert team is not None and (team.team_id, team.name, team.tier) == (
        created["team_id"],
        "Platform research",
        "standard",
    )

    # the admin token from ADMIN_TOKEN, the URL after the command
    code, out, err = _run("admin", "issue-token", created["team_id"], "--url", base_url)
    assert code == 0, err
    issued = json.loads(out)
    assert set(issued) == {"token_id", "token"}
    assert service.resolve(issued["token"]) == team

    code, out, err = _run("--url", base_url, "admin", "revoke-token", created["team_id"], created["token_id"])
    assert (code, out) == (0, f"revoked {created['token_id']} of {created['team_id']}\n"), err
    assert service.resolve(created["token"]) is None
    assert service.resolve(issued["token"]) == team


def test_errors_print_the_error_body_and_exit_1(base_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = _run("--url", base_url, "admin", "issue-token", "team-000000000000")
    assert (code, out) == (1, "")
    assert err == "error: 404 not_found: team not found\n"

    code, out, err = _run(
        "--url", base_url, "admin", "create-team", "A", "--tier", "basic", "--admin-token", "wrong"
    )
    assert (code, out) == (1, "")
    assert err.startswith("error: 401 unauthorized: ")

    code, out, err = _run("--url", base_url, "admin", "create-team", "   ", "--tier", "basic")
    assert code == 1 and err == "error: 400 invalid_request: name must not be empty\n"

    monkeypatch.delenv("ADMIN_TOKEN")
    code, out, err = _run("--url", base_url, "admin", "revoke-token", "team-000000000000", "tok-000000000000")
    assert code == 1 and "--admin-token or ADMIN_TOKEN" in err  # nothing was sent


def test_an_unknown_tier_is_refused_before_any_request(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--url", "http://127.0.0.1:9", "admin", "create-team", "A", "--tier", "gold"])
    assert exited.value.code == 2
    assert "invalid choice: 'gold'" in capsys.readouterr().err


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A loopback server that records each request's headers and answers a job status."""
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self) -> None:
            seen.append({name.lower(): value for name, value in self.headers.items()})
            length = int(self.headers.get("Content-Length", "0"))
            self.rfile.read(length)
            body = json.dumps({"token_id": "tok-0123456789ab", "token": "rt_x", "status": "RUNNING"}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_the_global_token_is_sent_as_a_bearer_on_every_command(
    recorder: tuple[str, list[dict[str, str]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = recorder
    monkeypatch.delenv("RESEARCH_API_TOKEN", raising=False)
    monkeypatch.delenv("RESEARCH_API_KEY", raising=False)
    assert _run("--url", url, "--token", "rt_before", "status", "job-1")[0] == 0
    assert _run("--url", url, "status", "job-1", "--token", "rt_after", "--api-key", "key-1")[0] == 0
    monkeypatch.setenv("RESEARCH_API_TOKEN", "rt_from_env")
    assert _run("--url", url, "status", "job-1")[0] == 0
    # an admin command sends the admin credential instead (the API key stays)
    assert (
        _run("--url", url, "--api-key", "key-1", "admin", "issue-token", "team-1", "--admin-token", ADMIN)[0]
        == 0
    )
    monkeypatch.delenv("RESEARCH_API_TOKEN")
    assert _run("--url", url, "status", "job-1")[0] == 0

    authorizations = [headers.get("authorization") for headers in seen]
    assert authorizations == [
        "Bearer rt_before",
        "Bearer rt_after",
        "Bearer rt_from_env",
        f"Bearer {ADMIN}",
        None,
    ]
    assert [headers.get("x-api-key") for headers in seen] == [None, "key-1", None, "key-1", None]
