from __future__ import annotations

import io
from typing import Any

import httpx

from functions.cli.main import main
from functions.common.storage import InMemoryBlobStore
from functions.orchestrate.app import app
from functions.orchestrate.config import WorkflowSettings
from functions.orchestrate.jobs import JobService
from functions.orchestrate.models import JobStatus
from functions.orchestrate.routes import get_job_service
from tests.support.cli_client import cli_client
from tests.support.fakes.jobs import InMemoryJobStore
from tests.support.results import results_document


class InstantWorkflow:
    """Plays the state machine: walks the job through its phases and writes a results document."""

    def __init__(self, jobs: InMemoryJobStore, artifacts: InMemoryBlobStore) -> None:
        self.jobs, self.artifacts = jobs, artifacts

    def execution_status(self, execution_arn: str) -> str | None:
        return "SUCCEEDED"

    def start(self, name: str, payload: dict[str, Any]) -> str:
        for status in (JobStatus.PLANNING, JobStatus.SEARCHING, JobStatus.EXTRACTING):
            self.jobs.update("team-default", name, status=status)
        document = results_document(
            name, {"report.md": f"jobs/{name}/report.md"}, {"primary_themes": ["Sparse attention"]}
        )
        self.artifacts.put_bytes(f"jobs/{name}/results.json", document)
        self.artifacts.put_bytes(f"jobs/{name}/report.md", b"# report")
        self.jobs.update(
            "team-default",
            name,
            status=JobStatus.COMPLETED,
            set_fields={
                "results_key": f"jobs/{name}/results.json",
                "artifacts": {"report.md": f"jobs/{name}/report.md"},
            },
        )
        return f"arn:execution:{name}"


def _client() -> httpx.Client:
    jobs, artifacts = InMemoryJobStore(), InMemoryBlobStore()
    service = JobService(
        jobs=jobs, starter=InstantWorkflow(jobs, artifacts), artifacts=artifacts, settings=WorkflowSettings()
    )
    app.dependency_overrides[get_job_service] = lambda: service
    return cli_client(app)


def test_research_command_follows_the_job_and_prints_artifacts() -> None:
    out = io.StringIO()
    with _client() as client:
        code = main(
            [
                "research",
                "What are recent advances in transformer architectures?",
                "--depth",
                "rapid",
                "--interval",
                "0",
            ],
            client=client,
            out=out,
        )
    app.dependency_overrides.clear()
    text = out.getvalue()
    assert code == 0, text
    assert "10 sources" in text and "100% COMPLETED" in text
    assert "Themes: Sparse attention" in text
    assert "report.md" in text and "/api/agent/results/" in text and "/artifacts/report.md" in text


def test_bad_goal_and_unknown_job_fail_cleanly() -> None:
    out = io.StringIO()
    with _client() as client:
        assert main(["research", "short"], client=client, out=out) == 1
        assert "research_goal" in out.getvalue()
        assert main(["results", "0b5c1f4e-0000-4000-8000-000000000000"], client=client, out=out) == 1
        assert "JOB_NOT_FOUND" in out.getvalue()
    app.dependency_overrides.clear()
