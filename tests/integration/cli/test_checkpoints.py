"""`research-agent research --checkpoint ...` and `research-agent checkpoint show|approve|abort` against the
local gateway under uvicorn on loopback, over the embedded AWS running the research workflow against a
local scholarly web: the job waits at each checkpoint it named, the CLI shows what waits (readable and
JSON), approves with edits, aborts; the API's refusals are one line on stderr and exit status 1."""

from __future__ import annotations

import io
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
import pytest

from functions.cli.main import main
from functions.local_runtime.aws import EmbeddedAws
from functions.orchestrate.config import reset_workflow_settings_cache
from tests.e2e.answer_topic import gateway_server
from tests.e2e.scholarly_topic import GOAL, environment, serve, topic_papers
from tests.support.scholarly_web import ScholarlyWeb

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]


@pytest.fixture
def base_url() -> Iterator[str]:
    with ScholarlyWeb() as web:
        serve(web, topic_papers(9, off_topic=3))
        reset_workflow_settings_cache()
        env = environment(web, RESEARCH_EXTRACT_MAX_CONCURRENCY="4")
        with EmbeddedAws(extra_environment=env), gateway_server() as url:
            yield url
    reset_workflow_settings_cache()


def _run(base_url: str, *argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with mock.patch("sys.stdin", io.StringIO(stdin or "")):
        code = main(["--url", base_url, *argv], out=out, err=err)
    assert "Traceback" not in out.getvalue() + err.getvalue()
    return code, out.getvalue(), err.getvalue()


def _start(base_url: str, *checkpoints: str) -> str:
    flags = [part for phase in checkpoints for part in ("--checkpoint", phase)]
    code, out, err = _run(base_url, "research", GOAL, "--depth", "rapid", "--interval", "0.1", *flags)
    assert code == 0, out + err
    assert f"waits at its {checkpoints[0]} checkpoint" in out, out  # `research` stops there
    match = re.search(r"^Job (\S+) started", out, re.MULTILINE)
    assert match, out
    return match.group(1)


def _status(base_url: str, job_id: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{base_url}/api/agent/status/{job_id}", timeout=10).json()
    return body


def _wait_for(base_url: str, job_id: str, phase: str | None, timeout: float = 90) -> dict[str, Any]:
    """The job's status once it waits at `phase` (None: once it is finished)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = _status(base_url, job_id)
        waiting = (status.get("checkpoint") or {}).get("phase") if status.get("awaiting_checkpoint") else None
        if phase is not None and waiting == phase:
            return status
        if phase is None and status["status"] in ("COMPLETED", "PARTIAL", "FAILED", "REFUSED"):
            return status
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} never reached {phase or 'its end'}: {status}")


def _show(base_url: str, job_id: str) -> dict[str, Any]:
    code, out, err = _run(base_url, "checkpoint", "show", job_id, "--json")
    assert code == 0, err
    shown: dict[str, Any] = json.loads(out)
    return shown


def test_show_and_approve_with_edits_at_plan_and_screening(base_url: str, tmp_path: Path) -> None:
    job_id = _start(base_url, "plan", "screening")

    plan = _show(base_url, job_id)
    assert plan["phase"] == "plan" and plan["waiting_since"]
    code, out, err = _run(base_url, "checkpoint", "show", job_id)
    assert code == 0, err
    assert out.startswith(f"Job {job_id} waits at its plan checkpoint since {plan['waiting_since']}\n")
    assert "crossref" in out and "arxiv" in out

    # refused before anything is sent: a connector the plan does not have
    code, out, err = _run(base_url, "checkpoint", "approve", job_id, "--drop-connector", "nowhere")
    assert (code, out) == (1, "") and err.startswith("error: the plan has no connector nowhere (it has ")
    # refused by the API, naming the field: a screening edit at the plan checkpoint
    code, out, err = _run(base_url, "checkpoint", "approve", job_id, "--exclude", "src-1")
    assert (code, out) == (1, "") and err.startswith("error: 400 ") and "exclude" in err, err
    edits = tmp_path / "edits.json"
    edits.write_text(json.dumps({"publication_window_years": 5, "colour": "blue"}))
    code, out, err = _run(base_url, "checkpoint", "approve", job_id, "--edits", str(edits))
    assert code == 1 and err.startswith("error: 400 ") and "colour" in err, err
    edits.write_text("{not json")
    code, out, err = _run(base_url, "checkpoint", "approve", job_id, "--edits", str(edits))
    assert code == 1 and err.startswith(f"error: --edits {edits} is not JSON"), err

    code, out, err = _run(
        base_url, "checkpoint", "approve", job_id, "--drop-connector", "crossref", "--reason", "no crossref"
    )
    assert code == 0, err
    assert json.loads(out)["decision"] == "approved"

    _wait_for(base_url, job_id, "screening")
    screening = _show(base_url, job_id)
    candidates = screening["payload"]["candidates"]
    assert candidates and all({"id", "title"} <= set(candidate) for candidate in candidates)
    code, out, err = _run(base_url, "checkpoint", "show", job_id)
    assert code == 0 and f"[{candidates[0]['id']}] {candidates[0]['title']}" in out, out
    code, out, err = _run(base_url, "checkpoint", "approve", job_id, "--exclude", "no-such-candidate")
    assert code == 1 and err.startswith("error: 400 ") and "no-such-candidate" in err, err
    code, out, err = _run(base_url, "checkpoint", "approve", job_id, "--chase-seed", "no-such-seed")
    assert code == 1 and err.startswith("error: 400 ") and "no-such-seed" in err, err

    excluded = candidates[0]["id"]
    code, out, err = _run(
        base_url, "checkpoint", "approve", job_id, "--exclude", excluded, "--max-sources", "3"
    )
    assert code == 0, err
    final = _wait_for(base_url, job_id, None)
    assert final["status"] in ("COMPLETED", "PARTIAL"), final
    results = httpx.get(f"{base_url}/api/agent/results/{job_id}", timeout=10).json()
    assert results["evidence"] and excluded not in {item["source_id"] for item in results["evidence"]}

    # nothing waits any more: 409, one line, exit status 1
    code, out, err = _run(base_url, "checkpoint", "approve", job_id)
    assert (code, out) == (1, "") and err.startswith("error: 409 "), err
    code, out, err = _run(base_url, "checkpoint", "show", job_id)
    assert (code, out) == (1, "") and err.startswith("error: 409 "), err


def test_abort_and_unknown_jobs(base_url: str) -> None:
    job_id = _start(base_url, "plan")
    code, out, err = _run(base_url, "checkpoint", "abort", job_id, "--reason", "wrong question")
    assert code == 0, err
    assert json.loads(out)["decision"] == "aborted"
    final = _wait_for(base_url, job_id, None)
    assert final["status"] == "FAILED" and "wrong question" in final["failure_reason"]

    unknown = "00000000-0000-4000-8000-000000000000"
    for action in ("show", "approve", "abort"):
        code, out, err = _run(base_url, "checkpoint", action, unknown)
        assert (code, out) == (1, "") and err.startswith("error: 404 "), (action, err)
    code, out, err = _run("http://127.0.0.1:9", "checkpoint", "show", job_id)  # nothing listens there
    assert code == 1 and err.startswith("error: ConnectError"), err


def test_list_names_the_teams_waiting_jobs(base_url: str) -> None:
    code, out, err = _run(base_url, "checkpoint", "list")
    assert (code, out, err) == (0, "No job waits at a checkpoint\n", "")
    job_id = _start(base_url, "plan")
    waiting_since = _status(base_url, job_id)["checkpoint"]["waiting_since"]

    code, out, err = _run(base_url, "checkpoint", "list", "--json")
    assert code == 0, err
    assert json.loads(out) == {
        "checkpoints": [{"job_id": job_id, "phase": "plan", "waiting_since": waiting_since, "goal": GOAL}]
    }
    code, out, err = _run(base_url, "checkpoint", "list")
    assert (code, out) == (0, f"{job_id}  plan  since {waiting_since}  {GOAL}\n"), err

    assert _run(base_url, "checkpoint", "abort", job_id)[0] == 0
    _wait_for(base_url, job_id, None)
    assert _run(base_url, "checkpoint", "list") == (0, "No job waits at a checkpoint\n", "")
