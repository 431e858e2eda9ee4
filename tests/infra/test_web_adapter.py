"""What the Lambda Web Adapter talks to, run here as the adapter runs it: `run.sh` started as
`$LAMBDA_TASK_ROOT/$_HANDLER` (the layer's /opt/bootstrap), uvicorn on `$AWS_LWA_PORT`, plain HTTP on
loopback. The adapter itself (a Rust binary in the layer) and API Gateway are not here; docs/infra.md
says what was checked about them and how."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from functions.common.web.web_adapter import RESTORE_PATH
from infra import bundling
from tests.infra.conftest import Synthesized


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _task_root(root: Path, files: dict[str, str], asgi_app: str) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    script = root / "run.sh"
    script.write_text(bundling.web_adapter_start_script(asgi_app), encoding="utf-8")
    script.chmod(0o755)
    return root


@contextmanager
def _started(
    task_root: Path, scratch: Path, *, pythonpath: str = "", environment: dict[str, str] | None = None
) -> Iterator[int]:
    """run.sh as /opt/bootstrap execs it (from another directory), with this venv's interpreter as
    `python3`; yields the port once the adapter's readiness request (GET /) gets any answer."""
    bin_dir = scratch / "bin"
    bin_dir.mkdir(exist_ok=True)
    interpreter = bin_dir / "python3"  # a venv's interpreter must be started by its own path
    interpreter.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    interpreter.chmod(0o755)
    port = _free_port()
    variables = {**(environment or {}), "PATH": f"{bin_dir}:/usr/bin:/bin"}
    variables.update({"LAMBDA_TASK_ROOT": str(task_root), "AWS_LWA_PORT": str(port)})
    if pythonpath:
        variables["PYTHONPATH"] = pythonpath
    server = subprocess.Popen(
        [str(task_root / "run.sh")],
        env=variables,
        cwd=scratch,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                connection.request("GET", "/")
                status = connection.getresponse().status
                connection.close()
                assert 100 <= status < 500  # the adapter's default healthy range
                break
            except OSError:
                if server.poll() is not None:
                    output = server.stdout.read().decode() if server.stdout else ""
                    raise AssertionError(f"run.sh exited {server.returncode}: {output}") from None
                assert time.monotonic() < deadline, "uvicorn did not come up"
                time.sleep(0.1)
        yield port
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_run_sh_serves_the_app_from_the_task_root(tmp_path: Path) -> None:
    task_root = _task_root(
        tmp_path / "task",
        {
            "web/__init__.py": "",
            "web/app.py": (
                "from fastapi import FastAPI\n"
                "app = FastAPI()\n"
                "@app.get('/v1/health')\n"
                "def health() -> dict[str, str]:\n"
                "    return {'status': 'ok'}\n"
            ),
        },
        "web.app:app",
    )
    with _started(task_root, tmp_path) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", "/v1/health")
        response = connection.getresponse()
        assert response.status == 200 and json.loads(response.read()) == {"status": "ok"}


SSE_APP = """
import asyncio

from fastapi import APIRouter
from fastapi.responses import StreamingResponse

from functions.common.web.api import create_app
from functions.common.faces.face import Face
from functions.common.observability import get_logger
from functions.metering.middleware import UsageMiddleware

router = APIRouter()
released = asyncio.Event()


@router.post("/v1/query/stream")
async def stream() -> StreamingResponse:
    async def events():
        yield 'event: trace_event\\ndata: {"name": "plan_created"}\\n\\n'
        await asyncio.wait_for(released.wait(), 20)
        yield 'event: final\\ndata: {"answer": "done"}\\n\\n'

    return StreamingResponse(events(), media_type="text/event-stream")


@router.post("/release")
async def release() -> dict[str, bool]:
    released.set()
    return {"released": True}


app = create_app(
    title="sse", description="probe", logger=get_logger("sse"), middlewares=[UsageMiddleware],
    routers=[(Face(name="sse", prefixes=(), rules=()), router)],
)
"""


def test_an_sse_event_leaves_uvicorn_before_the_stream_ends(tmp_path: Path) -> None:
    """Through the apps' shared middleware (functions.common.web.api.create_app) and run.sh's uvicorn, the
    first event reaches the client while the handler still waits: the second event is only sent after
    the client, having read the first, releases it. A server that buffered the body would deadlock here
    (the handler gives up after 20 s and the read times out)."""
    task_root = _task_root(
        tmp_path / "task", {"sse_probe/__init__.py": "", "sse_probe/app.py": SSE_APP}, "sse_probe.app:app"
    )
    with _started(task_root, tmp_path, pythonpath=str(bundling.REPO_ROOT)) as port:
        stream = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        stream.request("POST", "/v1/query/stream", body=b"{}", headers={"Content-Type": "application/json"})
        response = stream.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type", "").startswith("text/event-stream")
        assert response.getheader("X-Request-Id")
        first = response.readline() + response.readline() + response.readline()
        assert first == b'event: trace_event\ndata: {"name": "plan_created"}\n\n'
        control = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        control.request("POST", "/release")
        assert json.loads(control.getresponse().read()) == {"released": True}
        assert response.read() == b'event: final\ndata: {"answer": "done"}\n\n'


def test_the_deployed_answer_asset_boots_and_serves_its_json_routes(
    deployed: Synthesized, tmp_path: Path
) -> None:
    """The answer function's staged asset (source bundling: this venv supplies the wheels) as the task
    root: its run.sh starts the real app from the files the bundler chose, so a module the app needs but
    the asset lacks fails here, not on Lambda. Its JSON routes answer through uvicorn as they will when
    the adapter relays them (each then streamed in one piece), and so does the SnapStart restore hook."""
    answer = deployed.stack.functions.api["answer"].function
    key = deployed.template_json["Resources"][deployed.logical_id(answer)]["Properties"]["Code"]["S3Key"]
    asset = Path(deployed.artifact.assembly.directory) / f"asset.{key.removesuffix('.zip')}"
    region = {"AWS_DEFAULT_REGION": "us-east-1", "LLM_PROVIDER": "none"}
    with _started(asset, tmp_path, environment=region) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/api/v1/presets")
        response = connection.getresponse()
        assert response.status == 200
        presets = {preset["name"] for preset in json.loads(response.read())["presets"]}
        assert presets == {"fast", "comprehensive", "contracrow", "academic", "tutorial"}
        connection.request("GET", "/v1/health")
        response = connection.getresponse()
        health = json.loads(response.read())
        assert response.status == 200 and health["status"] == "ok", health
        assert "arxiv" in health["connectors"]
        # What the adapter (v1.1.0+) sends after a SnapStart restore: an empty POST from loopback.
        connection.request("POST", RESTORE_PATH)
        response = connection.getresponse()
        assert response.status == 204 and response.read() == b""
        # A relayed invocation carries the adapter's context headers: never the restore hook.
        connection.request("POST", RESTORE_PATH, headers={"x-amzn-lambda-context": "{}"})
        response = connection.getresponse()
        assert response.status == 403 and json.loads(response.read()) == {"detail": "Forbidden"}
